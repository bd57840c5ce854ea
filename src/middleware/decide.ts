import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { RateLimitDecision } from '../limiter/keyed-limiter.ts';
import { checkNumber, expected } from '../validation/checks.ts';
import { limitHeaderWriter, retryAfterSeconds } from './ietf-headers.ts';
import type { RateLimitCounters } from './rate-limit-metrics.ts';
import type { LimitedRequest, MaybePromise, RateLimitMessage, RequestRateLimit } from './rate-limit-options.ts';
import type { ResolvedRateLimitOptions } from './rate-limit-validation.ts';

/** What a request gets, for an adapter to carry out in its framework's terms. */
export type Verdict =
  /** On to the handler: with the limit's headers, or none when the limit did not count it (skipped, or the store failed and `onStoreError` allows). */
  | { readonly kind: 'pass'; readonly headers: Record<string, string> | undefined; readonly info: RequestRateLimit | undefined }
  /** Answered here: a refusal with `message`, or the 503 of a failed store. */
  | {
      readonly kind: 'answer';
      readonly headers: Record<string, string> | undefined;
      readonly info: RequestRateLimit | undefined;
      readonly statusCode: number;
      readonly contentType: string;
      readonly body: string;
    }
  /** A refusal the `handler` option answers. */
  | {
      readonly kind: 'handle';
      readonly headers: Record<string, string>;
      readonly info: RequestRateLimit;
      readonly statusCode: number;
      readonly limited: LimitedRequest;
    };

/**
 * A request's verdict: at once while `skip`, `key`, `cost`, `message` and the store all answer at
 * once (the usual case, a local limiter), later from the first that does not. A callback's error
 * (thrown or rejected) is thrown or rejected, never a verdict.
 */
export type Decide<Req extends IncomingMessage> = (req: Req, res: ServerResponse) => MaybePromise<Verdict>;

export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

const PASS_UNCOUNTED: Verdict = Object.freeze({ kind: 'pass', headers: undefined, info: undefined });

const UNAVAILABLE: Verdict = Object.freeze({
  kind: 'answer',
  headers: undefined,
  info: undefined,
  statusCode: 503,
  contentType: 'text/plain; charset=utf-8',
  body: 'Rate limiting is unavailable, please try again later.',
});

const contentTypeOf = (body: RateLimitMessage): string =>
  typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8';

const textOf = (body: RateLimitMessage): string => (typeof body === 'string' ? body : JSON.stringify(body));

const answer = (headers: Record<string, string>, info: RequestRateLimit, statusCode: number, body: RateLimitMessage): Verdict => ({
  kind: 'answer',
  headers,
  info,
  statusCode,
  contentType: contentTypeOf(body),
  body: textOf(body),
});

/**
 * The steps every request goes through, whatever the framework: skip → key → cost → take →
 * verdict. Each step runs synchronously on a value it has, and continues on a promise only from a
 * step that gives one: the usual request costs no promise, no closure and no microtask turn. The
 * verdict's {@link RequestRateLimit} is also set on `req` before `message` runs, so a message can
 * read it.
 */
export function createDecide<Req extends IncomingMessage>(
  options: ResolvedRateLimitOptions<Req>,
  keyOf: (req: Req, res: ServerResponse) => MaybePromise<string>,
  counters: RateLimitCounters,
  log: Logger,
): Decide<Req> {
  const { store, keyName, cost, skip, legacyHeaders, policyName, message, statusCode, handler, requestPropertyName, onStoreError } =
    options;
  const writeHeaders = limitHeaderWriter({
    draft: options.headers,
    legacy: legacyHeaders,
    policyName,
    rate: store.rate,
    burst: store.burst,
  });
  const quota = Math.floor(store.burst);
  // A message that is not a function is written once, not per refusal.
  const refusal = typeof message === 'function' ? message : { contentType: contentTypeOf(message), body: textOf(message) };
  /** Store errors in a row; the first and the recovery are logged, the rest counted. */
  let failures = 0;

  const storeFailed = (error: unknown): Verdict => {
    if (failures++ === 0) log.error({ err: error, onStoreError }, 'rate limit store failed');
    if (onStoreError === 'allow') {
      counters.count('store_error_allowed');
      return PASS_UNCOUNTED;
    }
    counters.count('store_error_denied');
    return UNAVAILABLE;
  };

  const decide: Decide<Req> = (req, res) => {
    if (skip === undefined) return keyStep(req, res);
    const skipped = skip(req, res);
    if (isPromise(skipped)) return skipped.then((value) => (value === true ? skipStep() : keyStep(req, res)));
    return skipped === true ? skipStep() : keyStep(req, res);
  };

  const skipStep = (): Verdict => {
    counters.count('skipped');
    return PASS_UNCOUNTED;
  };

  const keyStep = (req: Req, res: ServerResponse): MaybePromise<Verdict> => {
    const clientKey = keyOf(req, res);
    return isPromise(clientKey) ? clientKey.then((value) => costStep(req, res, value)) : costStep(req, res, clientKey);
  };

  const costStep = (req: Req, res: ServerResponse, clientKey: string): MaybePromise<Verdict> => {
    if (typeof clientKey !== 'string') throw expected(`${keyName}(req)`, 'a string', clientKey);
    const tokens = typeof cost === 'number' ? cost : cost(req, res);
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
    if (!isPromise(taken)) return verdictStep(req, clientKey, tokens, taken);
    return taken.then((decision) => verdictStep(req, clientKey, tokens, decision), storeFailed);
  };

  const verdictStep = (req: Req, clientKey: string, tokens: number, decision: RateLimitDecision): MaybePromise<Verdict> => {
    if (failures > 0) {
      log.info({ failures }, 'rate limit store recovered');
      failures = 0;
    }
    const nowEpochMs = Date.now();
    const headers = writeHeaders(decision, nowEpochMs);
    const { remaining, resetMs } = decision;
    const info: RequestRateLimit = {
      limit: quota,
      used: quota - remaining,
      remaining,
      resetTime: Number.isFinite(resetMs) ? new Date(Math.ceil(nowEpochMs + resetMs)) : undefined,
      key: clientKey,
    };
    (req as unknown as Record<string, unknown>)[requestPropertyName] = info;
    if (decision.allowed) {
      counters.count('allowed');
      return { kind: 'pass', headers, info };
    }
    const seconds = retryAfterSeconds(decision.retryAfterMs);
    if (seconds !== undefined) headers['Retry-After'] = String(seconds);
    const limited: LimitedRequest = { key: clientKey, cost: tokens, decision };
    counters.count('limited');
    if (handler !== undefined) return { kind: 'handle', headers, info, statusCode, limited };
    if (typeof refusal !== 'function') {
      return { kind: 'answer', headers, info, statusCode, contentType: refusal.contentType, body: refusal.body };
    }
    const body = refusal(req, limited);
    return isPromise(body) ? body.then((value) => answer(headers, info, statusCode, value)) : answer(headers, info, statusCode, body);
  };

  return decide;
}
