import { readFile } from 'node:fs/promises';
import { FAILURE_RATIO_DEFAULTS } from '../breaker/circuit-breaker.ts';
import { providerSetupProblem, type BreakerSetup, type ProviderPrice, type ProviderSetup } from '../gate/provider-options.ts';
import { LIMIT_KINDS, type LimitKind, type LimitSpec } from '../quota/provider-limits.ts';
import { HEADER_STYLES, type HeaderStyle } from '../vendors/rate-limit-headers.ts';
import { hasCredentials, isHttpUrl, maskCredentials } from '../vendors/http-api.ts';
import { HTTP_PROVIDER_DEFAULTS, PROVIDER_DEFAULTS, PROVIDER_TYPES, isEnvVariableName, type ProviderType } from '../vendors/registry.ts';
import { PROFILE_NAMES, type ProfileName } from '../simulator/simulated.ts';
import { show } from '../validation/checks.ts';
import { poolSetupProblem, POOL_STRATEGIES, type PoolSetup } from '../route/pool-setup.ts';
import { DURATION_SYNTAX, parseDuration } from '../validation/duration.ts';
import { fileErrorDetail } from '../validation/file-error.ts';

/**
 * The providers file (`--config providers.json`): each provider's limits, breaker, adaptive rate,
 * header handling and simulated-provider settings, and which provider serves which task.
 *
 * ```json
 * {
 *   "providers": [
 *     { "name": "fast", "limits": [{ "kind": "requests", "rate": 5, "per": "second", "burst": 2 },
 *                                  { "kind": "tokens", "rate": 40000, "per": "minute" }],
 *       "simulated": { "minLatency": "100ms", "maxLatency": "300ms", "quota": { "rate": 5, "burst": 2 }, "headers": "openai" } },
 *     { "name": "careful", "limits": [{ "kind": "requests", "rate": 2 }], "breaker": { "failureThreshold": 3, "cooldown": "2s" },
 *       "simulated": { "outage": "2s..8s" } }
 *   ],
 *   "routes": { "summarize": "fast", "sentiment": "careful" }
 * }
 * ```
 */
export interface ProvidersConfig {
  /** The providers, in the order of the file: the first serves the tasks no route names. */
  readonly providers: readonly ProviderConfig[];
  /** Pools of providers, each a route by its name (`"pools": [{ "name", "members", "strategy", "weights", "fallback" }]`). */
  readonly pools: readonly PoolSetup[];
  /**
   * Tasks routed to a provider or a pool by name (task name → name): those that name none
   * themselves in the tasks file. A task neither names goes to the first provider.
   */
  readonly routes: Readonly<Record<string, string>>;
}

/**
 * One provider of the file: its {@link ProviderSetup} — the one shape a run takes, less the provider
 * itself, which the caller makes from `type`, `api` and `simulated` — and what says what it is. A
 * field the file leaves out is left out here too: its default is applied once, by the gate.
 */
export interface ProviderConfig extends Omit<ProviderSetup, 'provider' | 'limits' | 'estimateInputTokens'> {
  /** Names the provider in results, figures and a task's `provider`. */
  readonly name: string;
  /** In units per second; `burst` defaults to one period's worth (`rate` per its `per`). */
  readonly limits: readonly LimitSpec[];
  /**
   * The circuit breaker (`"breaker": { … }` in the file; `{}` for its defaults when the file says
   * nothing); absent for none (`"breaker": false`). `"giveUp"` in the file is `giveUpAfterMs`.
   */
  readonly breaker: BreakerSetup | undefined;
  /** Settings of the simulated provider (`type` `"simulated"`); empty for an HTTP API. */
  readonly simulated: SimulatedConfig;
  /** With `--redis`: the shared quota's name (`"quotaKey"` in the file). @default the provider's name */
  readonly quotaKey: string | undefined;
  /** What the provider is: the simulation or an HTTP API. @default "simulated" */
  readonly type: ProviderType;
  /** An HTTP provider's base URL, model and key variable, the vendor's defaults filled in; absent for the simulation. */
  readonly api: ApiConfig | undefined;
}

/** Where an HTTP provider is and how to call it (`baseUrl`, `model`, `apiKeyEnv` in the file; Azure's `endpoint`, `deployment`, `apiVersion`). */
export interface ApiConfig {
  /** The API's base URL. */
  readonly baseUrl: string;
  /** The model the calls ask for. */
  readonly model: string;
  /** The environment variable the key is read from (by the command, never by the library). */
  readonly apiKeyEnv: string;
  /** Azure OpenAI's `api-version`; undefined for the others. */
  readonly apiVersion?: string | undefined;
  /** The host's limit dialect (`"headers"` in the file: `"groq"`, `"none"`, …). @default guessed from the base URL's host */
  readonly headers?: string | undefined;
}

/** Settings of the in-process simulated provider; each omitted one falls back to the run's flags. */
export interface SimulatedConfig {
  /** Shortest answer time, ms (`"minLatency"` in the file). @default the run's --min-latency */
  readonly minLatencyMs?: number;
  /** Longest answer time, ms (`"maxLatency"` in the file). @default the run's --max-latency, or `minLatencyMs` when that is longer */
  readonly maxLatencyMs?: number;
  /** The failure profile. @default the run's --profile */
  readonly profile?: ProfileName;
  /** Seeds the provider's random draws. @default the run's --seed plus the provider's index in the file (0 for the first) */
  readonly seed?: number;
  /**
   * The provider's own quota: calls per second, and the burst.
   * @default the run's --provider-rate and --provider-burst (none without --provider-rate)
   */
  readonly quota?: { readonly rate: number; readonly burst: number };
  /** The style of the rate-limit headers the provider sends. @default the run's --headers (none without it) */
  readonly headers?: HeaderStyle;
  /** Calls arriving in [startMs, endMs) after the provider starts fail with 503. @default the run's --outage */
  readonly outage?: { readonly startMs: number; readonly endMs: number };
}

/** A bad providers file: `message` names the file, the field's path, what it accepts and what it got. */
export class ConfigError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'ConfigError';
}

const PER_SECONDS: Readonly<Record<string, number>> = { second: 1, minute: 60, hour: 3600 };

/** Reads and validates a providers file. */
export async function loadProvidersConfig(path: string): Promise<ProvidersConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    // As --input says it: the path once, not again in Node's `, open '…'` tail.
    throw new ConfigError(`${path}: cannot read file (${fileErrorDetail(error)})`, { cause: error });
  }
  let json: unknown;
  try {
    // A byte-order mark is how some editors start a UTF-8 file; JSON.parse would call it a token.
    json = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
  } catch (error) {
    throw new ConfigError(`${path}: invalid JSON (${(error as Error).message})`);
  }
  return parseProvidersConfig(json, path);
}

/** Validates a parsed providers file; `source` prefixes error messages (usually the path). */
export function parseProvidersConfig(json: unknown, source = 'config'): ProvidersConfig {
  const at = new ConfigReader(source);
  const root = at.object(json, '');
  at.only(root, '', ['providers', 'pools', 'routes']);
  const list = at.array(root.providers, 'providers');
  if (list.length === 0) at.fail('providers', 'at least one provider', list);
  const providers = list.map((entry, index) => readProvider(at, entry, `providers[${index}]`));
  const names = new Set<string>();
  providers.forEach((provider, index) => {
    if (names.has(provider.name)) at.fail(`providers[${index}].name`, 'a name no other provider has', provider.name);
    names.add(provider.name);
  });
  const pools = root.pools === undefined ? [] : at.array(root.pools, 'pools').map((entry, index) => readPool(at, entry, `pools[${index}]`));
  const problem = poolSetupProblem(pools, [...names]);
  if (problem !== undefined) at.fail(problem.field, problem.expected, problem.value);
  const routable = [...names, ...pools.map((pool) => pool.name)];
  const routesJson = root.routes === undefined ? {} : at.object(root.routes, 'routes');
  const routes = Object.fromEntries(
    Object.entries(routesJson).map(([task, provider]) => {
      const name = at.string(provider, `routes.${task}`);
      if (!routable.includes(name)) {
        at.fail(`routes.${task}`, `one of the ${pools.length > 0 ? 'provider and pool' : 'provider'} names (${routable.join(', ')})`, name);
      }
      return [task, name];
    }),
  );
  return { providers, pools, routes };
}

/** A pool's fields, each of its type; what they name is checked across the file by `poolSetupProblem`. */
function readPool(at: ConfigReader, json: unknown, path: string): PoolSetup {
  const o = at.object(json, path);
  at.only(o, path, ['name', 'members', 'strategy', 'weights', 'fallback']);
  const names = (value: unknown, field: string) =>
    at.array(value, `${path}.${field}`).map((name, i) => at.string(name, `${path}.${field}[${i}]`));
  return {
    name: at.string(o.name, `${path}.name`),
    members: names(o.members, 'members'),
    strategy: o.strategy === undefined ? undefined : at.choice(o.strategy, `${path}.strategy`, POOL_STRATEGIES),
    weights:
      o.weights === undefined
        ? undefined
        : at.array(o.weights, `${path}.weights`).map((weight, i) => at.positive(weight, `${path}.weights[${i}]`)),
    fallback: o.fallback === undefined ? undefined : names(o.fallback, 'fallback'),
  };
}

function readProvider(at: ConfigReader, json: unknown, path: string): ProviderConfig {
  const o = at.object(json, path);
  at.only(o, path, [
    'name',
    'limits',
    'maxOutputTokens',
    'callTimeout',
    'adaptive',
    'syncHeaders',
    'breaker',
    'simulated',
    'quotaKey',
    'price',
    ...CLIENT_FIELDS,
  ]);
  const name = at.string(o.name, `${path}.name`);
  if (name.trim() === '') at.fail(`${path}.name`, 'a non-empty name', name);
  const limitsJson = at.array(o.limits, `${path}.limits`);
  if (limitsJson.length === 0) at.fail(`${path}.limits`, 'at least one limit', limitsJson);
  const limits = limitsJson.map((limit, index) => readLimit(at, limit, `${path}.limits[${index}]`));
  const kinds = new Set<LimitKind>();
  limits.forEach((limit, index) => {
    if (kinds.has(limit.kind)) at.fail(`${path}.limits[${index}].kind`, 'one limit per kind', limit.kind);
    kinds.add(limit.kind);
  });
  const setup = {
    limits,
    maxOutputTokens: o.maxOutputTokens === undefined ? undefined : at.integer(o.maxOutputTokens, `${path}.maxOutputTokens`, 1),
    adaptive: o.adaptive !== undefined && at.boolean(o.adaptive, `${path}.adaptive`) ? {} : undefined,
  };
  // A burst that cannot hold a call, an adaptive rate with nothing to adapt: refused here, not at run time.
  const problem = providerSetupProblem(setup);
  if (problem !== undefined)
    at.fail(`${path}.${problem.field}`, problem.expected, problem.field === 'adaptive' ? o.adaptive : problem.value);
  return {
    name,
    ...setup,
    callTimeoutMs: o.callTimeout === undefined ? undefined : at.positiveDuration(o.callTimeout, `${path}.callTimeout`),
    syncHeaders: o.syncHeaders === undefined ? undefined : at.boolean(o.syncHeaders, `${path}.syncHeaders`),
    breaker: readBreaker(at, o.breaker, `${path}.breaker`),
    simulated: o.simulated === undefined ? {} : readSimulated(at, o.simulated, `${path}.simulated`),
    quotaKey: o.quotaKey === undefined ? undefined : readQuotaKey(at, o.quotaKey, `${path}.quotaKey`),
    price: o.price === undefined ? undefined : readPrice(at, o.price, `${path}.price`),
    ...readClient(at, o, path),
  };
}

/** The vendors that take an API version (`apiVersion` in the file). */
const VERSIONED = Object.values(HTTP_PROVIDER_DEFAULTS).filter((defaults) => defaults.takesApiVersion === true);

/**
 * A provider's fields that say what it is and how it is called: every vendor's — the names a vendor
 * gives its base URL and model (`fileNames`), `apiVersion` where one takes it — so that a field of
 * another vendor's is refused by name rather than as unknown.
 */
const CLIENT_FIELDS: readonly string[] = [
  ...new Set([
    'type',
    'baseUrl',
    'model',
    'apiKeyEnv',
    'maxConcurrent',
    ...(Object.values(HTTP_PROVIDER_DEFAULTS).some((defaults) => defaults.hostHeaders !== undefined) ? ['headers'] : []),
    ...Object.values(HTTP_PROVIDER_DEFAULTS).flatMap((defaults) =>
      defaults.fileNames === undefined ? [] : [defaults.fileNames.baseUrl, defaults.fileNames.model],
    ),
    ...(VERSIONED.length > 0 ? ['apiVersion'] : []),
  ]),
];

function readClient(at: ConfigReader, o: Record<string, unknown>, path: string): Pick<ProviderConfig, 'type' | 'api' | 'maxConcurrent'> {
  const type = o.type === undefined ? PROVIDER_DEFAULTS.type : at.choice(o.type, `${path}.type`, PROVIDER_TYPES);
  const maxConcurrent = o.maxConcurrent === undefined ? undefined : at.integer(o.maxConcurrent, `${path}.maxConcurrent`, 1);
  if (type === 'simulated') {
    for (const field of CLIENT_FIELDS.filter((name) => name !== 'type' && name !== 'maxConcurrent')) {
      if (o[field] !== undefined) at.fail(`${path}.${field}`, 'nothing on a simulated provider (it is for a real API)', o[field]);
    }
    return { type, api: undefined, maxConcurrent };
  }
  if (o.simulated !== undefined) at.fail(`${path}.simulated`, `nothing on an "${type}" provider (it is for "simulated")`, o.simulated);
  const defaults = HTTP_PROVIDER_DEFAULTS[type];
  // Azure names the base URL and the model as it does: its `endpoint` and `deployment`.
  const baseUrlField = defaults.fileNames?.baseUrl ?? 'baseUrl';
  const modelField = defaults.fileNames?.model ?? 'model';
  for (const [field, own] of [
    ['baseUrl', baseUrlField],
    ['model', modelField],
  ] as const) {
    if (field !== own && o[field] !== undefined)
      at.fail(`${path}.${field}`, `nothing on an "${type}" provider (it takes "${own}")`, o[field]);
  }
  const baseUrl = o[baseUrlField];
  const model = o[modelField];
  if (baseUrl === undefined && defaults.baseUrl === undefined)
    at.fail(`${path}.${baseUrlField}`, `given (an "${type}" provider has none by default)`, baseUrl);
  if (baseUrl !== undefined && !isHttpUrl(baseUrl)) at.fail(`${path}.${baseUrlField}`, 'an http:// or https:// URL', baseUrl);
  if (baseUrl !== undefined && hasCredentials(baseUrl as string)) {
    at.fail(`${path}.${baseUrlField}`, 'a URL without user:password (the key is read from apiKeyEnv)', maskCredentials(baseUrl as string));
  }
  if (model === undefined && defaults.model === undefined)
    at.fail(`${path}.${modelField}`, `given (an "${type}" provider has none by default)`, model);
  if (model !== undefined && (typeof model !== 'string' || model.trim() === ''))
    at.fail(`${path}.${modelField}`, `a ${modelField} name`, model);
  if (o.apiKeyEnv !== undefined && !isEnvVariableName(o.apiKeyEnv)) {
    at.fail(`${path}.apiKeyEnv`, 'an environment variable name (letters, digits, _)', o.apiKeyEnv);
  }
  if (defaults.takesApiVersion === true && (typeof o.apiVersion !== 'string' || o.apiVersion.trim() === '')) {
    at.fail(`${path}.apiVersion`, `an API version such as "${defaults.apiVersionExample}" (an "${type}" provider needs one)`, o.apiVersion);
  }
  if (defaults.takesApiVersion !== true && o.apiVersion !== undefined)
    at.fail(
      `${path}.apiVersion`,
      `nothing on an "${type}" provider (it is ${VERSIONED.map((versioned) => versioned.label).join("'s, ")}'s)`,
      o.apiVersion,
    );
  const hostHeaders = defaults.hostHeaders;
  if (o.headers !== undefined && hostHeaders === undefined) {
    const hosted = Object.values(HTTP_PROVIDER_DEFAULTS).filter((other) => other.hostHeaders !== undefined);
    at.fail(
      `${path}.headers`,
      `nothing on an "${type}" provider (it is for ${hosted.map((other) => `"${other.name}"`).join(', ')})`,
      o.headers,
    );
  }
  const api = {
    headers: o.headers === undefined || hostHeaders === undefined ? undefined : at.choice(o.headers, `${path}.headers`, hostHeaders),
    baseUrl: (baseUrl as string | undefined) ?? defaults.baseUrl!,
    model: (model as string | undefined) ?? defaults.model!,
    apiKeyEnv: (o.apiKeyEnv as string | undefined) ?? defaults.apiKeyEnv,
    apiVersion: o.apiVersion as string | undefined,
  };
  return { type, api, maxConcurrent };
}

/**
 * `"price": { "inputPerMTok": 0.4, "outputPerMTok": 1.6 }`: USD per million tokens; the prompt
 * cache's `cachedInputPerMTok` and `cacheWritePerMTok` when given (else the vendor's ratios).
 */
function readPrice(at: ConfigReader, json: unknown, path: string): ProviderPrice {
  const o = at.object(json, path);
  at.only(o, path, ['inputPerMTok', 'outputPerMTok', 'cachedInputPerMTok', 'cacheWritePerMTok']);
  const perMTok = (value: unknown, field: string): number => {
    if (value === undefined) return at.fail(`${path}.${field}`, 'USD per million tokens (a number >= 0)', value);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      at.fail(`${path}.${field}`, 'a number >= 0 (USD per million tokens)', value);
    return value as number;
  };
  const optional = (field: 'cachedInputPerMTok' | 'cacheWritePerMTok') =>
    o[field] === undefined ? {} : { [field]: perMTok(o[field], field) };
  return {
    inputPerMTok: perMTok(o.inputPerMTok, 'inputPerMTok'),
    outputPerMTok: perMTok(o.outputPerMTok, 'outputPerMTok'),
    ...optional('cachedInputPerMTok'),
    ...optional('cacheWritePerMTok'),
  };
}

/** A Redis key part: Redis Cluster hashes only what is between `{` and `}`, so neither may appear. */
function readQuotaKey(at: ConfigReader, json: unknown, path: string): string {
  const name = at.string(json, path);
  if (name === '' || /[{}]/.test(name)) at.fail(path, 'a non-empty name without { or }', name);
  return name;
}

/** One limit of the file's `limits` shape (`{ kind, rate, per, burst }`), as a rate per second. */
export function readLimit(at: ConfigReader, json: unknown, path: string): LimitSpec {
  const o = at.object(json, path);
  at.only(o, path, ['kind', 'rate', 'per', 'burst']);
  const kind = at.choice(o.kind, `${path}.kind`, LIMIT_KINDS);
  const perName = o.per === undefined ? 'second' : at.choice(o.per, `${path}.per`, Object.keys(PER_SECONDS));
  const perSeconds = PER_SECONDS[perName]!;
  const amount = at.rate(o.rate, `${path}.rate`);
  const burst =
    o.burst === undefined ? (amount === Infinity ? 1 : Math.max(1, Math.ceil(amount))) : at.integer(o.burst, `${path}.burst`, 1);
  return { kind, rate: amount / perSeconds, burst };
}

function readBreaker(at: ConfigReader, json: unknown, path: string): BreakerSetup | undefined {
  if (json === undefined) return {};
  if (json === false) return undefined;
  const o = at.object(json, path);
  at.only(o, path, ['failureThreshold', 'cooldown', 'halfOpenProbes', 'failureRatio', 'giveUp']);
  const breaker: { -readonly [K in keyof BreakerSetup]: BreakerSetup[K] } = {};
  if (o.failureThreshold !== undefined) breaker.failureThreshold = at.integer(o.failureThreshold, `${path}.failureThreshold`, 1);
  if (o.cooldown !== undefined) breaker.cooldownMs = at.duration(o.cooldown, `${path}.cooldown`);
  if (o.halfOpenProbes !== undefined) breaker.halfOpenProbes = at.integer(o.halfOpenProbes, `${path}.halfOpenProbes`, 1);
  if (o.giveUp !== undefined) breaker.giveUpAfterMs = o.giveUp === 'inf' ? Infinity : at.positiveDuration(o.giveUp, `${path}.giveUp`);
  if (o.failureRatio !== undefined) {
    const r = at.object(o.failureRatio, `${path}.failureRatio`);
    at.only(r, `${path}.failureRatio`, ['ratio', 'window', 'minimumCalls']);
    const ratio = at.positive(r.ratio, `${path}.failureRatio.ratio`);
    if (ratio > 1) at.fail(`${path}.failureRatio.ratio`, 'a share in (0, 1]', r.ratio);
    breaker.failureRatio = {
      ratio,
      windowMs: r.window === undefined ? FAILURE_RATIO_DEFAULTS.windowMs : at.positiveDuration(r.window, `${path}.failureRatio.window`),
      minimumCalls:
        r.minimumCalls === undefined
          ? FAILURE_RATIO_DEFAULTS.minimumCalls
          : at.integer(r.minimumCalls, `${path}.failureRatio.minimumCalls`, 1),
    };
  }
  return breaker;
}

function readSimulated(at: ConfigReader, json: unknown, path: string): SimulatedConfig {
  const o = at.object(json, path);
  at.only(o, path, ['minLatency', 'maxLatency', 'profile', 'seed', 'quota', 'headers', 'outage']);
  const config: { -readonly [K in keyof SimulatedConfig]: SimulatedConfig[K] } = {};
  if (o.minLatency !== undefined) config.minLatencyMs = at.duration(o.minLatency, `${path}.minLatency`);
  if (o.maxLatency !== undefined) config.maxLatencyMs = at.duration(o.maxLatency, `${path}.maxLatency`);
  if ((config.minLatencyMs ?? 0) > (config.maxLatencyMs ?? Infinity)) {
    at.fail(`${path}.minLatency`, 'at most maxLatency', o.minLatency);
  }
  if (o.profile !== undefined) config.profile = at.choice(o.profile, `${path}.profile`, PROFILE_NAMES);
  if (o.seed !== undefined) config.seed = at.integer(o.seed, `${path}.seed`, 0);
  if (o.quota !== undefined) {
    const q = at.object(o.quota, `${path}.quota`);
    at.only(q, `${path}.quota`, ['rate', 'per', 'burst']);
    const perName = q.per === undefined ? 'second' : at.choice(q.per, `${path}.quota.per`, Object.keys(PER_SECONDS));
    const rate = at.positive(q.rate, `${path}.quota.rate`) / PER_SECONDS[perName]!;
    config.quota = { rate, burst: q.burst === undefined ? 1 : at.integer(q.burst, `${path}.quota.burst`, 1) };
  }
  if (o.headers !== undefined) config.headers = at.choice(o.headers, `${path}.headers`, HEADER_STYLES);
  if (o.outage !== undefined) config.outage = parseOutage(at, o.outage, `${path}.outage`);
  return config;
}

/** `"2s..8s"`: from 2 s to 8 s after the provider starts. */
export function parseOutageWindow(text: string): { startMs: number; endMs: number } | undefined {
  const parts = text.split('..');
  if (parts.length !== 2) return undefined;
  const startMs = parseDuration(parts[0]!);
  const endMs = parseDuration(parts[1]!);
  if (startMs === undefined || endMs === undefined || endMs <= startMs) return undefined;
  return { startMs, endMs };
}

function parseOutage(at: ConfigReader, json: unknown, path: string): { startMs: number; endMs: number } {
  const text = at.string(json, path);
  return parseOutageWindow(text) ?? at.fail(path, 'a window like "2s..8s" (start before end)', text);
}

/** Field readers that throw a ConfigError naming the file, the field and what it accepts (a gateway's config reads its own fields with them). */
export class ConfigReader {
  constructor(private readonly source: string) {}

  /** The file and the field, as a message begins. */
  where(path: string): string {
    return path === '' ? this.source : `${this.source}: ${path}`;
  }

  fail(path: string, expected: string, got: unknown): never {
    const where = this.where(path);
    throw new ConfigError(`${where}: expected ${expected}, got ${got === undefined ? 'nothing' : show(got)}`);
  }

  object(value: unknown, path: string): Record<string, unknown> {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) this.fail(path, 'an object', value);
    return value as Record<string, unknown>;
  }

  only(o: Record<string, unknown>, path: string, allowed: readonly string[]): void {
    for (const key of Object.keys(o)) {
      if (!allowed.includes(key)) {
        throw new ConfigError(
          `${this.source}: ${path === '' ? '' : `${path}.`}${key}: unknown field (expected one of ${allowed.join(', ')})`,
        );
      }
    }
  }

  array(value: unknown, path: string): unknown[] {
    if (!Array.isArray(value)) this.fail(path, 'an array', value);
    return value as unknown[];
  }

  string(value: unknown, path: string): string {
    if (typeof value !== 'string') this.fail(path, 'a string', value);
    return value as string;
  }

  boolean(value: unknown, path: string): boolean {
    if (typeof value !== 'boolean') this.fail(path, 'true or false', value);
    return value as boolean;
  }

  integer(value: unknown, path: string, min: number): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) this.fail(path, `a whole number >= ${min}`, value);
    return value as number;
  }

  positive(value: unknown, path: string): number {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) this.fail(path, 'a number > 0', value);
    return value as number;
  }

  rate(value: unknown, path: string): number {
    if (value === 'inf') return Infinity;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) this.fail(path, 'a number > 0 or "inf"', value);
    return value as number;
  }

  positiveDuration(value: unknown, path: string): number {
    const ms = this.duration(value, path);
    if (ms <= 0) this.fail(path, 'a duration > 0', value);
    return ms;
  }

  duration(value: unknown, path: string): number {
    const ms = typeof value === 'string' ? parseDuration(value) : undefined;
    if (ms === undefined || ms < 0) this.fail(path, DURATION_SYNTAX, value);
    return ms!;
  }

  choice<T extends string>(value: unknown, path: string, choices: readonly T[]): T {
    if (typeof value !== 'string' || !choices.includes(value as T))
      this.fail(path, `one of ${choices.map((c) => `"${c}"`).join(', ')}`, value);
    return value as T;
  }
}
