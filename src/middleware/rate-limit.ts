import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { KeyedLimiter, type RateLimitDecision, type RateLimitStore } from '../limiter/keyed-limiter.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkBoolean, checkFunction, checkInteger, checkNumber, checkObject, checkOneOf, expected } from '../validation/checks.ts';
import { type ClientAddressOptions, clientAddressKey } from './client-address.ts';
import { limitHeaderWriter, RATE_LIMIT_HEADER_DRAFTS, type RateLimitHeaderDraft, retryAfterSeconds } from './ietf-headers.ts';
import { RateLimitCounters, type RateLimitFigures } from './rate-limit-metrics.ts';

/** What to do when the store cannot answer (Redis down): refuse with 503, or let the request through. */
export type StoreErrorAction = 'deny' | 'allow';

export const STORE_ERROR_ACTIONS: readonly StoreErrorAction[] = Object.freeze(['deny', 'allow'] as StoreErrorAction[]);

/** What `rateLimit()` does unless told otherwise (the client address defaults are `CLIENT_ADDRESS_DEFAULTS`). */
export const RATE_LIMIT_DEFAULTS = Object.freeze({
  /** Tokens per second per client: 60 a minute. */
  rate: 1,
  /** A client's capacity: a minute's worth at once. */
  burst: 60,
  /** Tokens per request. */
  cost: 1,
  headers: 'draft-8' as RateLimitHeaderDraft | false,
  legacyHeaders: false,
  /** The draft-8 policy name, and the `policy` label of the metrics. */
  policyName: 'default',
  /** The 429 body. */
  message: 'Too many requests, please try again later.',
  onStoreError: 'deny' as StoreErrorAction,
});

/** The 503 body when the store failed and `onStoreError` is `"deny"`. */
const STORE_ERROR_MESSAGE = 'Rate limiting is unavailable, please try again later.';

/** A refused request, as `message` and `handler` see it. */
export interface LimitedRequest {
  /** The client's key. */
  readonly key: string;
  /** The tokens the request asked for. */
  readonly cost: number;
  readonly decision: RateLimitDecision;
}

/** A 429 body: a string is sent as text, anything else as JSON. */
export type RateLimitMessage = string | Readonly<Record<string, unknown>> | readonly unknown[];

/** What a per-request callback gives back: at once, or later. */
type MaybePromise<T> = T | Promise<T>;

export interface RateLimitOptions<Req extends IncomingMessage = IncomingMessage> extends ClientAddressOptions {
  /** Tokens added per second to each client's bucket, > 0 (`Infinity` allows everything). Default 1. Not with `limiter`. */
  readonly rate?: number | undefined;
  /** Each client's capacity, an integer >= 1: a new client starts full. Default 60. Not with `limiter`. */
  readonly burst?: number | undefined;
  /**
   * Where the buckets live: an existing {@link KeyedLimiter} (shared with other code, or with its
   * own `maxKeys` and clock), or any {@link RateLimitStore} — a Redis one shares limits between
   * processes. Default: a new `KeyedLimiter` of `rate` and `burst`.
   */
  readonly limiter?: RateLimitStore | undefined;
  /**
   * The client a request counts against. Default: its address, as {@link clientAddressKey} reads
   * it with `trustProxy`, `ipv6Subnet` and `proxyHeader` (which only the default uses).
   */
  readonly key?: ((req: Req) => string | Promise<string>) | undefined;
  /** Tokens a request takes, a finite number >= 0, or a function of the request. Default 1. */
  readonly cost?: number | ((req: Req) => number | Promise<number>) | undefined;
  /** Requests it returns true for pass unlimited, without headers (health checks, your own monitors). Default: none. */
  readonly skip?: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** The RateLimit header draft every limited response carries, or `false` for none. Default `"draft-8"`. */
  readonly headers?: RateLimitHeaderDraft | false | undefined;
  /** Also `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix epoch seconds). Default false. */
  readonly legacyHeaders?: boolean | undefined;
  /** The draft-8 policy name and the metrics' `policy` label: letters, digits, `-_.:`. Default `"default"`. */
  readonly policyName?: string | undefined;
  /** The 429 body, or a function of the request and its refusal. Default `"Too many requests, please try again later."`. */
  readonly message?: RateLimitMessage | ((req: Req, limited: LimitedRequest) => RateLimitMessage | Promise<RateLimitMessage>) | undefined;
  /**
   * Answers a refused request instead of the 429 (the RateLimit headers and `Retry-After` are already
   * set on `res`). In Fastify it gets `request.raw` and `reply.raw`, the reply hijacked.
   */
  readonly handler?: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined;
  /**
   * A store that fails (Redis down) is not a client over its limit: `"deny"` answers 503, `"allow"`
   * lets the request through. Both are logged (when the store starts failing and when it recovers)
   * and counted. Default `"deny"`.
   */
  readonly onStoreError?: StoreErrorAction | undefined;
  /** A prom-client registry to export the counters and the live-key gauge to. Default: none. */
  readonly registry?: Registry | undefined;
}

/** Fastify's request as the hook reads it. */
export interface FastifyLikeRequest {
  readonly raw: IncomingMessage;
}

/** Fastify's reply as the hook drives it. */
export interface FastifyLikeReply {
  readonly raw: ServerResponse;
  code(statusCode: number): unknown;
  header(name: string, value: string): unknown;
  type(contentType: string): unknown;
  send(payload?: unknown): unknown;
  hijack(): unknown;
}

/**
 * A Connect/Express middleware — `app.use(limit)`, or in a plain `node:http` handler
 * `limit(req, res, () => handler(req, res))` — with a Fastify `onRequest` hook alongside.
 */
export interface RateLimitMiddleware<Req extends IncomingMessage = IncomingMessage> {
  /** Lets the request through with `next()`, or answers it (429, 503); a callback's error goes to `next(error)`. */
  (req: Req, res: ServerResponse, next: (error?: unknown) => void): void;
  /** Fastify: `app.addHook('onRequest', limit.onRequest)`; the callbacks get `request.raw`. */
  readonly onRequest: (request: FastifyLikeRequest, reply: FastifyLikeReply, done: (error?: Error) => void) => void;
  /** Counts so far, and the keys held. */
  readonly figures: RateLimitFigures;
  /** The store the buckets live in. */
  readonly store: RateLimitStore;
}

type Verdict =
  | { readonly kind: 'pass'; readonly headers: Record<string, string> | undefined }
  | {
      readonly kind: 'limited';
      readonly headers: Record<string, string>;
      readonly limited: LimitedRequest;
      readonly body: RateLimitMessage | undefined;
    }
  | { readonly kind: 'unavailable'; readonly headers: undefined };

const PASS_WITHOUT_HEADERS: Verdict = Object.freeze({ kind: 'pass', headers: undefined });
const UNAVAILABLE: Verdict = Object.freeze({ kind: 'unavailable', headers: undefined });

const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * Per-client rate limiting for HTTP servers: an exact token bucket per client (by address, or any
 * key), never a fixed window that lets a client send twice its limit across a window's edge.
 *
 * Every limited response carries the RateLimit headers; a refusal is a 429 with `Retry-After` in
 * whole seconds (rounded up, never 0). See {@link RateLimitOptions} for each option and its default.
 */
export function rateLimit<Req extends IncomingMessage = IncomingMessage>(options: RateLimitOptions<Req> = {}): RateLimitMiddleware<Req> {
  checkObject('options', options);
  const {
    limiter,
    key,
    cost = RATE_LIMIT_DEFAULTS.cost,
    skip,
    headers = RATE_LIMIT_DEFAULTS.headers,
    legacyHeaders = RATE_LIMIT_DEFAULTS.legacyHeaders,
    policyName = RATE_LIMIT_DEFAULTS.policyName,
    message = RATE_LIMIT_DEFAULTS.message,
    handler,
    onStoreError = RATE_LIMIT_DEFAULTS.onStoreError,
    registry,
    logger = silentLogger,
  } = options;
  const store = limiter === undefined ? ownLimiter(options) : checkStore(options, limiter);
  if (key !== undefined) checkFunction('key', key);
  if (typeof cost === 'number') checkNumber('cost', cost, { min: 0 });
  else checkFunction('cost', cost);
  if (skip !== undefined) checkFunction('skip', skip);
  if (headers !== false) checkOneOf('headers', headers, RATE_LIMIT_HEADER_DRAFTS);
  checkBoolean('legacyHeaders', legacyHeaders);
  if (typeof policyName !== 'string' || !/^[\w\-.:]{1,64}$/.test(policyName)) {
    throw expected('policyName', '1 to 64 letters, digits or -_.:', policyName);
  }
  if (typeof message !== 'function' && typeof message !== 'string' && (message === null || typeof message !== 'object')) {
    throw expected('message', 'a string, an object or a function', message);
  }
  if (handler !== undefined) checkFunction('handler', handler);
  checkOneOf('onStoreError', onStoreError, STORE_ERROR_ACTIONS);
  if (registry !== undefined) checkObject('registry', registry);

  const log = logger.child({ component: 'rate-limit', policy: policyName });
  // Made (and its options checked) even when `key` replaces it: a bad option is a mistake either way.
  const addressKey = clientAddressKey({
    trustProxy: options.trustProxy,
    ipv6Subnet: options.ipv6Subnet,
    proxyHeader: options.proxyHeader,
    logger: log,
  });
  const keyOf: (req: Req) => MaybePromise<string> = key ?? addressKey;
  const writeHeaders = limitHeaderWriter({ draft: headers, legacy: legacyHeaders, policyName, rate: store.rate, burst: store.burst });
  const counters = new RateLimitCounters(store, policyName, registry);
  /** Store errors in a row; the first and the recovery are logged, the rest counted. */
  let failures = 0;

  const storeFailed = (error: unknown): Verdict => {
    if (failures++ === 0) log.error({ err: error, onStoreError }, 'rate limit store failed');
    if (onStoreError === 'allow') {
      counters.count('store_error_allowed');
      return PASS_WITHOUT_HEADERS;
    }
    counters.count('store_error_denied');
    return UNAVAILABLE;
  };

  // The steps below run synchronously while every callback and the store answer at once (the
  // usual case, a local limiter), and continue on a promise from the first that does not: a
  // request then costs no promise and no microtask turn.
  const decide = (req: Req): MaybePromise<Verdict> => {
    if (skip === undefined) return keyStep(req);
    const skipped = skip(req);
    if (isPromise(skipped)) return skipped.then((value) => (value === true ? skipStep() : keyStep(req)));
    return skipped === true ? skipStep() : keyStep(req);
  };

  const skipStep = (): Verdict => {
    counters.count('skipped');
    return PASS_WITHOUT_HEADERS;
  };

  const keyStep = (req: Req): MaybePromise<Verdict> => {
    const clientKey = keyOf(req);
    return isPromise(clientKey) ? clientKey.then((value) => costStep(req, value)) : costStep(req, clientKey);
  };

  const costStep = (req: Req, clientKey: string): MaybePromise<Verdict> => {
    if (typeof clientKey !== 'string') throw expected('key(req)', 'a string', clientKey);
    const tokens = typeof cost === 'number' ? cost : cost(req);
    return isPromise(tokens) ? tokens.then((value) => takeStep(req, clientKey, value)) : takeStep(req, clientKey, tokens);
  };

  const takeStep = (req: Req, clientKey: string, tokens: number): MaybePromise<Verdict> => {
    if (tokens !== cost) checkNumber('cost(req)', tokens, { min: 0 });
    let taken: MaybePromise<RateLimitDecision>;
    try {
      taken = store.take(clientKey, tokens);
    } catch (error) {
      return storeFailed(error);
    }
    if (!isPromise(taken)) return decided(req, clientKey, tokens, taken);
    return taken.then((decision) => decided(req, clientKey, tokens, decision), storeFailed);
  };

  const decided = (req: Req, clientKey: string, tokens: number, decision: RateLimitDecision): MaybePromise<Verdict> => {
    if (failures > 0) {
      log.info({ failures }, 'rate limit store recovered');
      failures = 0;
    }
    // The wall clock only for the legacy reset header (epoch seconds): a request need not read it otherwise.
    const limitHeaders = writeHeaders(decision, legacyHeaders ? Date.now() : 0);
    if (decision.allowed) {
      counters.count('allowed');
      return { kind: 'pass', headers: limitHeaders };
    }
    const seconds = retryAfterSeconds(decision.retryAfterMs);
    if (seconds !== undefined) limitHeaders['Retry-After'] = String(seconds);
    const limited: LimitedRequest = { key: clientKey, cost: tokens, decision };
    counters.count('limited');
    if (handler !== undefined) return { kind: 'limited', headers: limitHeaders, limited, body: undefined };
    const body = typeof message === 'function' ? message(req, limited) : message;
    if (!isPromise(body)) return { kind: 'limited', headers: limitHeaders, limited, body };
    return body.then((value): Verdict => ({ kind: 'limited', headers: limitHeaders, limited, body: value }));
  };

  /** Runs the steps; a callback's error (thrown or rejected) goes to `fail`, never to `respond`. */
  const run = (req: Req, respond: (verdict: Verdict) => void, fail: (error: unknown) => void): void => {
    let verdict: MaybePromise<Verdict>;
    try {
      verdict = decide(req);
    } catch (error) {
      fail(error);
      return;
    }
    if (isPromise(verdict)) verdict.then(respond, fail);
    else respond(verdict);
  };

  const respondHttp = (req: Req, res: ServerResponse, next: (error?: unknown) => void, verdict: Verdict): void => {
    if (verdict.headers !== undefined) for (const name in verdict.headers) res.setHeader(name, verdict.headers[name]!);
    if (verdict.kind === 'pass') next();
    else if (verdict.kind === 'unavailable') sendRaw(res, 503, STORE_ERROR_MESSAGE);
    else if (handler !== undefined) handler(req, res, verdict.limited);
    else sendRaw(res, 429, verdict.body!);
  };

  // No closure per request on the usual, synchronous path: one only when a step answers later.
  const middleware = (req: Req, res: ServerResponse, next: (error?: unknown) => void): void => {
    let verdict: MaybePromise<Verdict>;
    try {
      verdict = decide(req);
    } catch (error) {
      next(error);
      return;
    }
    if (isPromise(verdict)) verdict.then((value) => respondHttp(req, res, next, value), next);
    else respondHttp(req, res, next, verdict);
  };

  const onRequest = (request: FastifyLikeRequest, reply: FastifyLikeReply, done: (error?: Error) => void): void => {
    const req = request.raw as Req;
    run(
      req,
      (verdict) => {
        if (verdict.kind === 'limited' && handler !== undefined) {
          reply.hijack();
          for (const name in verdict.headers) reply.raw.setHeader(name, verdict.headers[name]!);
          handler(req, reply.raw, verdict.limited);
          return;
        }
        if (verdict.headers !== undefined) for (const name in verdict.headers) reply.header(name, verdict.headers[name]!);
        if (verdict.kind === 'pass') done();
        else if (verdict.kind === 'unavailable') send(reply, 503, STORE_ERROR_MESSAGE);
        else send(reply, 429, verdict.body!);
      },
      (error) => done(error instanceof Error ? error : new Error(String(error))),
    );
  };

  return Object.defineProperties(middleware, {
    onRequest: { value: onRequest, enumerable: true },
    figures: { get: () => counters.figures, enumerable: true },
    store: { value: store, enumerable: true },
  }) as unknown as RateLimitMiddleware<Req>;
}

function ownLimiter(options: RateLimitOptions<never>): KeyedLimiter {
  const { rate = RATE_LIMIT_DEFAULTS.rate, burst = RATE_LIMIT_DEFAULTS.burst } = options;
  checkNumber('rate', rate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkInteger('burst', burst, 1);
  return new KeyedLimiter({ rate, burst });
}

/** A store brings its own rate and burst; the headers need a rate that refills and a whole quota. */
function checkStore(options: RateLimitOptions<never>, store: RateLimitStore): RateLimitStore {
  if (options.rate !== undefined || options.burst !== undefined) {
    throw expected('rate and burst', 'left out with a limiter (it has its own)', { rate: options.rate, burst: options.burst });
  }
  checkObject('limiter', store);
  checkFunction('limiter.take', store.take);
  checkNumber('limiter.rate', store.rate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkNumber('limiter.burst', store.burst, { min: 1 });
  return store;
}

const contentTypeOf = (body: RateLimitMessage): string =>
  typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8';

function sendRaw(res: ServerResponse, statusCode: number, body: RateLimitMessage): void {
  res.statusCode = statusCode;
  res.setHeader('Content-Type', contentTypeOf(body));
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function send(reply: FastifyLikeReply, statusCode: number, body: RateLimitMessage): void {
  reply.code(statusCode);
  reply.type(contentTypeOf(body));
  reply.send(typeof body === 'string' ? body : JSON.stringify(body));
}
