import type { HeaderFormat } from '../../header-fields.ts';
import type { StatusMeaning } from '../../http-api.ts';
import { OPENAI_HEADERS } from '../rate-limit-headers.ts';
import { GROQ_HEADERS } from './groq-headers.ts';
import { MISTRAL_HEADERS } from './mistral-headers.ts';
import { TOGETHER_HEADERS } from './together-headers.ts';

/**
 * The limit dialects of the hosts `--provider=openai --base-url …` reaches: the same Chat
 * Completions API, their rate-limit signals each their own. A provider reads its host's (the
 * providers file's `headers`, else guessed from the base URL's host); `serve --headers=…` speaks
 * each, so that every one is tested offline.
 */
export interface HostDialect {
  /** What the providers file's `headers` and `serve --headers` call it. */
  readonly name: HostDialectName;
  /** The host as messages name it. */
  readonly label: string;
  /** The host names a base URL is guessed to speak it from (a subdomain of one counts). */
  readonly hosts: readonly string[];
  /** Its rate-limit headers, read and written. */
  readonly headers: HeaderFormat;
  /**
   * Whether its answers state its limits and it refuses with 429s; false for a self-hosted server
   * (vLLM, Ollama) that sends no rate-limit headers and queues what is over its capacity: the
   * adaptive rate then reads the calls' latency.
   */
  readonly statesLimits: boolean;
  /** The statuses it gives a meaning of its own (Groq's 498, Together's 503 and 429). */
  readonly statuses: Readonly<Partial<Record<number, StatusMeaning>>>;
  /** The status `serve` answers a provider down with, in this dialect. @default 503 */
  readonly overloadedStatus?: number | undefined;
  /** What it states, in a line of help and docs. */
  readonly summary: string;
}

/** A format that states nothing: a server that sends no rate-limit headers. */
const NO_HEADERS: HeaderFormat = Object.freeze({ kinds: Object.freeze([]), parse: () => [], write: () => {} });

const DIALECTS = {
  openai: {
    label: 'OpenAI',
    // What any host the others are not speaks: never a guess.
    hosts: [],
    headers: OPENAI_HEADERS,
    statesLimits: true,
    statuses: {},
    summary: 'x-ratelimit-{limit,remaining,reset}-{requests,tokens}, per minute, resets as durations (6m0s)',
  },
  groq: {
    label: 'Groq',
    hosts: ['api.groq.com'],
    headers: GROQ_HEADERS,
    statesLimits: true,
    statuses: { 498: { means: 'overloaded', says: "flex tier at capacity (Groq's 498)" } },
    overloadedStatus: 498,
    summary: 'x-ratelimit-*-requests per day, x-ratelimit-*-tokens per minute, resets as durations; 498 when the flex tier is at capacity',
  },
  together: {
    label: 'Together',
    hosts: ['api.together.xyz', 'api.together.ai'],
    headers: TOGETHER_HEADERS,
    statesLimits: true,
    statuses: {
      429: { means: 'rate-limited', says: 'above your dynamic rate' },
      503: { means: 'overloaded', says: 'below your dynamic rate: the model is at capacity, not your limit' },
    },
    summary: 'x-ratelimit-{limit,remaining,reset} (requests) and x-tokenlimit-{limit,remaining} (tokens), per second',
  },
  mistral: {
    label: 'Mistral',
    hosts: ['api.mistral.ai'],
    headers: MISTRAL_HEADERS,
    statesLimits: true,
    statuses: {},
    summary: 'x-ratelimitbysize-{limit,remaining}-{minute,month}: tokens per minute and per month',
  },
  none: {
    label: 'a server without rate limits',
    hosts: [],
    headers: NO_HEADERS,
    statesLimits: false,
    statuses: {},
    summary: 'no rate-limit headers and no 429 (vLLM, Ollama): a request over capacity waits',
  },
} satisfies Record<string, Omit<HostDialect, 'name'>>;

/** The dialects by name: OpenAI's own first (what a host not known speaks), then the hosts'. */
export type HostDialectName = keyof typeof DIALECTS;

export const HOST_DIALECTS: Readonly<Record<HostDialectName, HostDialect>> = Object.freeze(
  Object.fromEntries(
    Object.entries(DIALECTS).map(([name, dialect]) => [name, Object.freeze({ name, ...(dialect as Omit<HostDialect, 'name'>) })]),
  ) as unknown as Record<HostDialectName, HostDialect>,
);

export const HOST_DIALECT_NAMES: readonly HostDialectName[] = Object.freeze(Object.keys(DIALECTS) as HostDialectName[]);

export const isHostDialectName = (value: unknown): value is HostDialectName => typeof value === 'string' && Object.hasOwn(DIALECTS, value);

/** A provider's dialect: the one it was told, else the one its base URL's host is known to speak (`guessed`), else OpenAI's own. */
export interface ChosenDialect {
  readonly dialect: HostDialect;
  /** The host it was guessed from; undefined when told, or when the host is none the dialects know. */
  readonly guessedFrom: string | undefined;
}

/** The dialect `told`, or the one `baseUrl`'s host speaks, or OpenAI's. */
export function chooseHostDialect(told: HostDialectName | undefined, baseUrl: string): ChosenDialect {
  if (told !== undefined) return { dialect: HOST_DIALECTS[told], guessedFrom: undefined };
  let host: string;
  try {
    host = new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return { dialect: HOST_DIALECTS.openai, guessedFrom: undefined };
  }
  const known = Object.values(HOST_DIALECTS).find((dialect) => dialect.hosts.some((name) => host === name || host.endsWith(`.${name}`)));
  return known === undefined ? { dialect: HOST_DIALECTS.openai, guessedFrom: undefined } : { dialect: known, guessedFrom: host };
}
