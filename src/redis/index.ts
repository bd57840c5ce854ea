// `news-processor/redis`: limits kept in Redis — a provider's quota shared exactly by every process
// that uses it, and a store for the middleware's per-client limits. Needs the `ioredis` package.

export { connectRedis, RedisConnection, REDIS_DEFAULTS } from './redis-connection.ts';
export type { RedisConnectOptions } from './redis-connection.ts';
// Where the Redis is, as one value that builds more clients like the limiter's (a queue's own connections).
export { RedisTarget, REDIS_URL_PARAMETERS } from './redis-target.ts';
export type { RedisTlsOptions, RedisTargetSettings, ParsedRedisUrl, TlsMaterial } from './redis-target.ts';
// What can be wrong with a Redis for the limiter, each one line to show before any call.
export {
  RedisConnectError,
  RedisTlsFileError,
  RedisPermissionError,
  RedisRedirectError,
} from './redis-errors.ts';
export type { RedisConnectReason } from './redis-errors.ts';
export type { RedisScript } from './scripts.ts';
export { RedisLimits } from './redis-limits.ts';
export type { RedisLimitsOptions } from './redis-limits.ts';
export { RedisRateLimitStore } from './redis-store.ts';
export type { RedisRateLimitStoreOptions } from './redis-store.ts';
export { RedisBudget, REDIS_BUDGET_DEFAULTS } from './redis-budget.ts';
export type { RedisBudgetOptions } from './redis-budget.ts';
export { RedisAnswerCache } from './redis-answer-cache.ts';
export type { RedisAnswerCacheOptions } from './redis-answer-cache.ts';
