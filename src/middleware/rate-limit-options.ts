import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitDecision, RateLimitStore } from '../limiter/keyed-limiter.ts';
import type { ClientAddressOptions } from './client-address.ts';
import type { RateLimitHeaderDraft } from './ietf-headers.ts';

/** What to do when the store cannot answer (Redis down): refuse with 503, or let the request through. */
export type StoreErrorAction = 'deny' | 'allow';

export const STORE_ERROR_ACTIONS: readonly StoreErrorAction[] = Object.freeze(['deny', 'allow'] as StoreErrorAction[]);

/** What `rateLimit()` does unless told otherwise (the client address defaults are `CLIENT_ADDRESS_DEFAULTS`). */
export const RATE_LIMIT_DEFAULTS = Object.freeze({
  /** Tokens per second per client: 60 a minute. */
  rate: 1,
  /** A client's capacity: a minute's worth at once. Also the default `limit`. */
  burst: 60,
  /** The window a `limit` refills over, ms: 60 per 60,000 ms is the same bucket as rate 1, burst 60. */
  windowMs: 60_000,
  /** Tokens per request. */
  cost: 1,
  headers: 'draft-8' as RateLimitHeaderDraft | false,
  legacyHeaders: false,
  /** The draft-8 policy name, and the `policy` label of the metrics. */
  policyName: 'default',
  /** The refusal's body. */
  message: 'Too many requests, please try again later.',
  /** The refusal's status: 429 Too Many Requests. */
  statusCode: 429,
  /** Where each counted request carries its {@link RequestRateLimit}: `req.rateLimit`. */
  requestPropertyName: 'rateLimit',
  onStoreError: 'deny' as StoreErrorAction,
});

/** A refused request, as `message` and `handler` see it. */
export interface LimitedRequest {
  /** The client's key. */
  readonly key: string;
  /** The tokens the request asked for. */
  readonly cost: number;
  /** The limiter's decision on this request: allowed or not, what remains, when to retry. */
  readonly decision: RateLimitDecision;
}

/**
 * The limit as it stood for one request, on `req.rateLimit` (or `requestPropertyName`) of every
 * request the limit counted, let through or refused — express-rate-limit's fields, read off the
 * client's bucket. Not set on skipped requests, nor when the store failed.
 */
export interface RequestRateLimit {
  /** The quota: the bucket's capacity in whole tokens. */
  readonly limit: number;
  /**
   * What the client has used of it: `limit - remaining`. A refusal takes nothing, so this never
   * exceeds `limit` (express-rate-limit also counts the refused request).
   */
  readonly used: number;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** When the bucket is full again (rounded up to the ms); undefined when it never refills. */
  readonly resetTime: Date | undefined;
  /** The client's key. */
  readonly key: string;
}

/** A refusal's body: a string is sent as text, anything else as JSON. */
export type RateLimitMessage = string | Readonly<Record<string, unknown>> | readonly unknown[];

/** What a per-request callback gives back: at once, or later. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * A prom-client `Registry`, as the middleware uses one: typed by what it calls, so that the
 * declarations need no prom-client installed. Pass `new Registry()` or prom-client's `register`.
 */
export interface MetricsRegistry {
  /** The metric registered under `name`, if any: the middleware reuses it rather than registering twice. */
  getSingleMetric(name: string): unknown;
  /** Registers one of the middleware's metrics. */
  registerMetric(metric: never): void;
}

/**
 * The options of `rateLimit()`. Where express-rate-limit has another name for the same thing, that
 * name is accepted too (`keyGenerator`, `standardHeaders`, `identifier`, `store`, `limit`/`max`
 * with `windowMs`, `passOnStoreError`); giving both names of one option is a `TypeError`.
 */
export interface RateLimitOptions<Req extends IncomingMessage = IncomingMessage> extends ClientAddressOptions {
  /**
   * Tokens added per second to each client's bucket, > 0 (`Infinity` allows everything). Not with `limiter`, `limit` or `windowMs`.
   * @default RATE_LIMIT_DEFAULTS.rate (1)
   */
  readonly rate?: number | undefined;
  /**
   * Each client's capacity, an integer >= 1: a new client starts full. Not with `limiter`, `limit` or `windowMs`.
   * @default RATE_LIMIT_DEFAULTS.burst (60)
   */
  readonly burst?: number | undefined;
  /**
   * express-rate-limit's spelling of the bucket, with `windowMs`: `limit` requests (an integer
   * >= 1) per `windowMs` is a bucket of burst `limit` that refills over `windowMs` — at most
   * `limit` at once and the rest spread over the window, where a fixed window lets `2 × limit`
   * through at once across its edge. Not with `rate`, `burst` or `limiter`.
   * @default RATE_LIMIT_DEFAULTS.burst (60)
   */
  readonly limit?: number | undefined;
  /** express-rate-limit's older name for `limit`. @default none (see `limit`) */
  readonly max?: number | undefined;
  /** The window a `limit` refills over, ms, > 0. Not with `rate`, `burst` or `limiter`. @default RATE_LIMIT_DEFAULTS.windowMs (60,000) */
  readonly windowMs?: number | undefined;
  /**
   * Where the buckets live: an existing `KeyedLimiter` (shared with other code, or with its own
   * `maxKeys` and clock), or any {@link RateLimitStore} — a Redis one shares limits between
   * processes.
   * @default a new KeyedLimiter of `rate` and `burst` (or of `limit` per `windowMs`)
   */
  readonly limiter?: RateLimitStore | undefined;
  /**
   * express-rate-limit's name for `limiter` (its stores count hits and do not fit: a store here has `take`).
   * @default none (see `limiter`)
   */
  readonly store?: RateLimitStore | undefined;
  /**
   * The client a request counts against. `trustProxy`, `ipv6Subnet` and `proxyHeader` are for the
   * default only.
   * @default its address, as `clientAddressKey` reads it with `trustProxy`, `ipv6Subnet` and `proxyHeader`
   */
  readonly key?: ((req: Req, res: ServerResponse) => MaybePromise<string>) | undefined;
  /** express-rate-limit's name for `key`. @default none (see `key`) */
  readonly keyGenerator?: ((req: Req, res: ServerResponse) => MaybePromise<string>) | undefined;
  /** Tokens a request takes, a finite number >= 0, or a function of the request. @default RATE_LIMIT_DEFAULTS.cost (1) */
  readonly cost?: number | ((req: Req, res: ServerResponse) => MaybePromise<number>) | undefined;
  /** Requests it returns true for pass unlimited, without headers (health checks, your own monitors). @default none */
  readonly skip?: ((req: Req, res: ServerResponse) => MaybePromise<boolean>) | undefined;
  /**
   * The RateLimit header draft every counted response carries, or `false` for none. Not `true`:
   * express-rate-limit 6 read `headers` as today's `legacyHeaders`, so a boolean here would mean
   * one thing to a config and another to this option.
   * @default RATE_LIMIT_DEFAULTS.headers ("draft-8")
   */
  readonly headers?: RateLimitHeaderDraft | false | undefined;
  /** express-rate-limit's name for `headers`, with its values: `true` is `"draft-6"`, as there. @default none (see `headers`) */
  readonly standardHeaders?: RateLimitHeaderDraft | boolean | undefined;
  /** Also `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix epoch seconds). @default RATE_LIMIT_DEFAULTS.legacyHeaders (false) */
  readonly legacyHeaders?: boolean | undefined;
  /**
   * The draft-8 policy name and the metrics' `policy` label: letters, digits, `-_.:`.
   * @default RATE_LIMIT_DEFAULTS.policyName ("default")
   */
  readonly policyName?: string | undefined;
  /**
   * express-rate-limit's name for `policyName`: a string (one name is written into every header and label).
   * @default none (see `policyName`)
   */
  readonly identifier?: string | undefined;
  /**
   * The refusal's body, or a function of the request and its refusal.
   * @default RATE_LIMIT_DEFAULTS.message ("Too many requests, please try again later.")
   */
  readonly message?: RateLimitMessage | ((req: Req, limited: LimitedRequest) => MaybePromise<RateLimitMessage>) | undefined;
  /** The refusal's status, an integer in [400, 599]: a refusal must not read as a success. @default RATE_LIMIT_DEFAULTS.statusCode (429) */
  readonly statusCode?: number | undefined;
  /**
   * Answers a refused request instead of `message` (the RateLimit headers, `Retry-After` and
   * `statusCode` are already set on `res`). In Fastify it gets `request.raw` and `reply.raw`, the
   * reply hijacked.
   * @default none (`message` is sent)
   */
  readonly handler?: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined;
  /**
   * The request property every counted request carries its {@link RequestRateLimit} on (in
   * Fastify, both the request and `request.raw`).
   * @default RATE_LIMIT_DEFAULTS.requestPropertyName ("rateLimit")
   */
  readonly requestPropertyName?: string | undefined;
  /**
   * A store that fails (Redis down) is not a client over its limit: `"deny"` answers 503, `"allow"`
   * lets the request through. Both are logged (when the store starts failing and when it recovers)
   * and counted.
   * @default RATE_LIMIT_DEFAULTS.onStoreError ("deny")
   */
  readonly onStoreError?: StoreErrorAction | undefined;
  /**
   * express-rate-limit's boolean for `onStoreError`: `true` is `"allow"`, `false` is `"deny"` (a 503 here, not an error passed on).
   * @default none (see `onStoreError`)
   */
  readonly passOnStoreError?: boolean | undefined;
  /** A prom-client `Registry` to export the counters and the live-key gauge to. @default none */
  readonly registry?: MetricsRegistry | undefined;
}
