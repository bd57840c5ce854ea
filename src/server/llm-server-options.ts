import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import type { SimulatedProviderOptions } from '../simulator/simulated.ts';
import { silentLogger } from '../silent-logger.ts';
import {
  checkBoolean,
  checkDurationMs,
  checkInteger,
  checkNumber,
  checkObject,
  checkOneOf,
  checkString,
  expected,
} from '../validation/checks.ts';
import { SERVE_HOST_HEADERS } from './dialects.ts';
import { checkApiKeys } from './api-keys.ts';

/** What `serve` is unless told otherwise. */
export const LLM_SERVER_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  /** Requests per second per API key: the headers state it per minute (600). */
  rate: 10,
  /** Requests one key may make at once after a quiet spell. */
  burst: 10,
  /** Output tokens a stream sends per second after its first: a current small model's pace. */
  tokensPerSecond: 80,
  /** Share of streams whose connection drops midway. */
  failMidStream: 0,
  /** Largest request body, bytes (1 MiB): a larger one gets 413 without being read. */
  maxBodyBytes: 1_048_576,
  /** What `GET /v1/models` lists; any model name is answered. */
  models: Object.freeze(['simulated']) as readonly string[],
  /** API keys `/metrics` labels apart; later ones are counted under `other`. */
  maxKeyLabels: 1000,
  /** Compiled JSON schemas kept, most recently used. */
  maxSchemas: 256,
  /** Responses API answers kept for `GET /v1/responses/{id}` and `previous_response_id`, most recent. */
  maxResponses: 10_000,
  /** How long a batch takes from the end of its validation to its last row, ms: its rows finish evenly spread over it. */
  batchDurationMs: 10_000,
  /** How long a batch may take before it expires, ms: both vendors' 24 hours. */
  batchWindowMs: 86_400_000,
  /** Largest batch upload (an OpenAI batch file, an Anthropic batch's body), bytes: Anthropic's 256 MB. */
  maxBatchBytes: 256_000_000,
  /** How long a cached prompt prefix lives after its last use, ms: Anthropic's default cache (5 minutes), and OpenAI's least. */
  promptCacheTtlMs: 300_000,
});

/** Each answer's latency and fate, as the in-process simulated provider takes them. */
export type LlmServerSimulation = Pick<
  SimulatedProviderOptions,
  'minLatencyMs' | 'maxLatencyMs' | 'profile' | 'seed' | 'outage' | 'hangMs'
>;

/** What a {@link LlmServer} is made with: every option optional, its default beside it. */
export interface LlmServerOptions {
  /**
   * Requests per second per API key, > 0; `Infinity` for no limit. The headers state it per minute
   * (`x-ratelimit-limit-requests` = 60 × rate, rounded down), as the vendors state theirs.
   * @default LLM_SERVER_DEFAULTS.rate (10)
   */
  readonly rate?: number;
  /** Requests one key may make at once after a quiet spell, a whole number >= 1. @default LLM_SERVER_DEFAULTS.burst (10) */
  readonly burst?: number;
  /**
   * LLM tokens per minute per API key (the burst is one minute's worth): each answer takes its
   * prompt's tokens plus its output's, as `usage` reports them.
   * @default none (no token limit)
   */
  readonly tokensPerMinute?: number | undefined;
  /**
   * Output tokens a streamed answer sends per second, after its first (which comes after the latency); `Infinity` sends all at once.
   * @default LLM_SERVER_DEFAULTS.tokensPerSecond (80)
   */
  readonly tokensPerSecond?: number;
  /**
   * Share of streams, in [0, 1], whose connection drops after some of their tokens (seeded with the simulation's seed).
   * @default LLM_SERVER_DEFAULTS.failMidStream (0)
   */
  readonly failMidStream?: number;
  /**
   * Take any schema marked `strict: true`, as other OpenAI-compatible servers do, instead of enforcing OpenAI's strict-mode rules.
   * @default false
   */
  readonly lenientSchemas?: boolean;
  /** Largest request body in bytes; a larger one gets 413 without being read. @default LLM_SERVER_DEFAULTS.maxBodyBytes (1 MiB) */
  readonly maxBodyBytes?: number;
  /** Latency, failure profile, seed, outage window and hang time of the answers. @default {} (the simulated provider's defaults) */
  readonly simulation?: LlmServerSimulation;
  /** Model ids `GET /v1/models` lists; requests may name any model. @default LLM_SERVER_DEFAULTS.models (["simulated"]) */
  readonly models?: readonly string[];
  /**
   * The API keys the server accepts (printable ASCII, no spaces: what a header carries); any other
   * key gets the vendor's 401 — OpenAI's `invalid_api_key`, Anthropic's `authentication_error` —
   * as a revoked or mistyped key does, quoted masked if at all, and takes nothing from any quota.
   * @default none (every non-empty key is accepted)
   */
  readonly apiKeys?: readonly string[] | undefined;
  /** API keys the limiters hold at most (see `KeyedLimiter`). @default KEYED_LIMITER_DEFAULTS.maxKeys (1,000,000: the limiter's) */
  readonly maxKeys?: number;
  /** API keys `/metrics` labels apart. @default LLM_SERVER_DEFAULTS.maxKeyLabels (1000) */
  readonly maxKeyLabels?: number;
  /**
   * How long a batch (OpenAI's Batch API, Anthropic's Message Batches) takes from the end of its
   * validation to its last row, ms: its rows finish evenly spread over it, so polls see progress.
   * @default LLM_SERVER_DEFAULTS.batchDurationMs (10 000)
   */
  readonly batchDurationMs?: number;
  /**
   * How long a batch may take from its creation, ms: the rows not finished by then expire (OpenAI's
   * `expired`, Anthropic's `expired` results). @default LLM_SERVER_DEFAULTS.batchWindowMs (24 hours)
   */
  readonly batchWindowMs?: number;
  /**
   * The most input tokens one API key may have enqueued in batches not yet ended (OpenAI's
   * enqueued-token limit): a batch that would pass it fails with `token_limit_exceeded` (OpenAI) or
   * is refused with 429 (Anthropic). @default none (no limit)
   */
  readonly batchQueueTokens?: number | undefined;
  /** Largest batch upload in bytes: an OpenAI batch file, an Anthropic batch's body. @default LLM_SERVER_DEFAULTS.maxBatchBytes (256 MB) */
  readonly maxBatchBytes?: number;
  /**
   * How long the simulated prompt cache keeps a prefix after its last use, ms (0: no cache): per
   * API key, Anthropic's `cache_control` prefixes and OpenAI's prompts of 1,024 tokens or more,
   * reported in the vendors' usage fields. @default LLM_SERVER_DEFAULTS.promptCacheTtlMs (5 minutes)
   */
  readonly promptCacheTtlMs?: number;
  /**
   * The host whose limit signals the routes of the API it speaks imitate (`SERVE_HOST_HEADERS`: the
   * host dialects the vendors list): its rate-limit headers, its statuses, and for a host that
   * states no limits, no headers and no 429, a request over the quota waiting for it instead.
   * @default none (each vendor's own)
   */
  readonly headers?: string | undefined;
  /** Logs a line per request at `info` (keys by fingerprint only). @default silentLogger (says nothing) */
  readonly logger?: Logger;
  /** Time source of the quotas, the simulation and the streams' pacing. @default systemClock */
  readonly clock?: Clock;
}

/** Where {@link LlmServer.listen} listens. */
export interface ListenOptions {
  /** Address to listen on. @default LLM_SERVER_DEFAULTS.host ("127.0.0.1") */
  readonly host?: string;
  /** Port; 0 picks a free one. @default LLM_SERVER_DEFAULTS.port (8080) */
  readonly port?: number;
}

/** A server's options checked, every default applied: what its constructor reads. */
export type ServerSettings = Required<Omit<LlmServerOptions, 'tokensPerMinute' | 'apiKeys' | 'maxKeys' | 'batchQueueTokens' | 'headers'>> &
  Pick<LlmServerOptions, 'tokensPerMinute' | 'apiKeys' | 'maxKeys' | 'batchQueueTokens' | 'headers'>;

/** Checks `options` (a `TypeError` naming the first bad one) and applies the defaults once. */
export function serverSettings(options: LlmServerOptions): ServerSettings {
  checkObject('options', options);
  const {
    rate = LLM_SERVER_DEFAULTS.rate,
    burst = LLM_SERVER_DEFAULTS.burst,
    tokensPerMinute,
    tokensPerSecond = LLM_SERVER_DEFAULTS.tokensPerSecond,
    failMidStream = LLM_SERVER_DEFAULTS.failMidStream,
    lenientSchemas = false,
    maxBodyBytes = LLM_SERVER_DEFAULTS.maxBodyBytes,
    simulation = {},
    models = LLM_SERVER_DEFAULTS.models,
    apiKeys,
    maxKeys,
    maxKeyLabels = LLM_SERVER_DEFAULTS.maxKeyLabels,
    batchDurationMs = LLM_SERVER_DEFAULTS.batchDurationMs,
    batchWindowMs = LLM_SERVER_DEFAULTS.batchWindowMs,
    batchQueueTokens,
    maxBatchBytes = LLM_SERVER_DEFAULTS.maxBatchBytes,
    promptCacheTtlMs = LLM_SERVER_DEFAULTS.promptCacheTtlMs,
    headers,
    logger = silentLogger,
    clock = systemClock,
  } = options;
  checkNumber('rate', rate, { min: 0, minExclusive: true, finite: false, unit: 'requests per second' });
  // Headers say the limit in whole requests.
  checkInteger('burst', burst, 1);
  if (tokensPerMinute !== undefined) checkInteger('tokensPerMinute', tokensPerMinute, 1);
  checkNumber('tokensPerSecond', tokensPerSecond, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkNumber('failMidStream', failMidStream, { min: 0, max: 1 });
  checkBoolean('lenientSchemas', lenientSchemas);
  checkInteger('maxBodyBytes', maxBodyBytes, 1);
  checkObject('simulation', simulation);
  if (!Array.isArray(models)) throw expected('models', 'an array of model ids', models);
  for (const model of models) checkString('each model', model);
  checkInteger('maxKeyLabels', maxKeyLabels, 0);
  if (apiKeys !== undefined) checkApiKeys(apiKeys);
  checkDurationMs('batchDurationMs', batchDurationMs);
  checkDurationMs('batchWindowMs', batchWindowMs, { positive: true });
  if (batchQueueTokens !== undefined) checkInteger('batchQueueTokens', batchQueueTokens, 1);
  checkInteger('maxBatchBytes', maxBatchBytes, 1);
  checkDurationMs('promptCacheTtlMs', promptCacheTtlMs);
  if (headers !== undefined) checkOneOf('headers', headers, SERVE_HOST_HEADERS);

  return {
    rate,
    burst,
    tokensPerMinute,
    tokensPerSecond,
    failMidStream,
    lenientSchemas,
    maxBodyBytes,
    simulation: pickSimulation(simulation),
    models,
    apiKeys,
    maxKeys,
    maxKeyLabels,
    batchDurationMs,
    batchWindowMs,
    batchQueueTokens,
    maxBatchBytes,
    promptCacheTtlMs,
    headers,
    logger,
    clock,
  };
}

function pickSimulation(simulation: LlmServerSimulation): LlmServerSimulation {
  const { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs } = simulation;
  const picked: Record<string, unknown> = { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs };
  for (const [name, value] of Object.entries(picked)) if (value === undefined) delete picked[name];
  return picked as LlmServerSimulation;
}
