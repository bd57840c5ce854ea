import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitStore } from '../limiter/keyed-limiter.ts';
import { clientAddressKey } from './client-address.ts';
import { createDecide } from './decide.ts';
import { type FastifyHook, fastifyAdapter } from './fastify-adapter.ts';
import { nodeAdapter } from './node-adapter.ts';
import { RateLimitCounters, type RateLimitFigures } from './rate-limit-metrics.ts';
import type { RateLimitOptions } from './rate-limit-options.ts';
import { resolveRateLimitOptions } from './rate-limit-validation.ts';

// The names a caller of rateLimit() writes, from the modules that define them.
export type { FastifyLikeReply, FastifyLikeRequest } from './fastify-adapter.ts';
export {
  type LimitedRequest,
  RATE_LIMIT_DEFAULTS,
  type RateLimitMessage,
  type RateLimitOptions,
  type RequestRateLimit,
  STORE_ERROR_ACTIONS,
  type StoreErrorAction,
} from './rate-limit-options.ts';

/**
 * A Connect/Express middleware — `app.use(limit)`, or in a plain `node:http` handler
 * `limit(req, res, () => handler(req, res))` — with a Fastify `onRequest` hook alongside.
 */
export interface RateLimitMiddleware<Req extends IncomingMessage = IncomingMessage> {
  /** Lets the request through with `next()`, or answers it (`statusCode`, 503); a callback's error goes to `next(error)`. */
  (req: Req, res: ServerResponse, next: (error?: unknown) => void): void;
  /** Fastify: `app.addHook('onRequest', limit.onRequest)`; the callbacks get `request.raw`. */
  readonly onRequest: FastifyHook;
  /** Counts so far, and the keys held. */
  readonly figures: RateLimitFigures;
  /** The store the buckets live in. */
  readonly store: RateLimitStore;
}

/**
 * Per-client rate limiting for HTTP servers: an exact token bucket per client (by address, or any
 * key), never a fixed window that lets a client send twice its limit across a window's edge.
 *
 * Every counted response carries the RateLimit headers, and its request the limit as it stood
 * (`req.rateLimit`); a refusal is a 429 (or `statusCode`) with `Retry-After` in whole seconds
 * (rounded up, never 0). See {@link RateLimitOptions} for each option, its default, and
 * express-rate-limit's names.
 */
export function rateLimit<Req extends IncomingMessage = IncomingMessage>(options: RateLimitOptions<Req> = {}): RateLimitMiddleware<Req> {
  const resolved = resolveRateLimitOptions(options);
  const log = resolved.logger.child({ component: 'rate-limit', policy: resolved.policyName });
  // Made (and its options checked) even when `key` replaces it: a bad option is a mistake either way.
  const addressKey = clientAddressKey({ ...resolved.clientAddress, logger: log });
  const counters = new RateLimitCounters(resolved.store, resolved.policyName, resolved.registry);
  const decide = createDecide(resolved, resolved.key ?? addressKey, counters, log);
  return Object.defineProperties(nodeAdapter(decide, resolved.handler), {
    onRequest: { value: fastifyAdapter(decide, resolved.handler, resolved.requestPropertyName), enumerable: true },
    figures: { get: () => counters.figures, enumerable: true },
    store: { value: resolved.store, enumerable: true },
  }) as unknown as RateLimitMiddleware<Req>;
}
