// `news-processor/middleware`: per-client rate limits for HTTP servers — node:http, Express, Fastify —
// and the keyed buckets under them. A store shared between processes is in `news-processor/redis`.

export { rateLimit, RATE_LIMIT_DEFAULTS } from './rate-limit.ts';
export type {
  RateLimitOptions,
  RateLimitMiddleware,
  RequestRateLimit,
  LimitedRequest,
  RateLimitMessage,
  StoreErrorAction,
  FastifyLikeRequest,
  FastifyLikeReply,
} from './rate-limit.ts';
export type { FastifyHook } from './fastify-adapter.ts';
export type { MetricsRegistry, MaybePromise } from './rate-limit-options.ts';
export type { RateLimitFigures, RateLimitOutcome } from './rate-limit-metrics.ts';
export { clientAddressKey, CLIENT_ADDRESS_DEFAULTS } from './client-address.ts';
export type { ClientAddressOptions, TrustProxy, ProxyHeader } from './client-address.ts';
export type { RateLimitHeaderDraft } from './ietf-headers.ts';
// The buckets: one per key, in this process; any `RateLimitStore` can take their place.
export { KeyedLimiter, KEYED_LIMITER_DEFAULTS } from '../limiter/keyed-limiter.ts';
export type { KeyedLimiterOptions, RateLimitDecision, RateLimitStore } from '../limiter/keyed-limiter.ts';
