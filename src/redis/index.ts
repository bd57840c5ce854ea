// `news-processor/redis`: limits kept in Redis — a provider's quota shared exactly by every process
// that uses it, and a store for the middleware's per-client limits. Needs the `ioredis` package.

export { connectRedis, RedisConnection, RedisConnectError, isRedisConnectError, REDIS_DEFAULTS } from './redis-connection.ts';
export type { RedisConnectOptions } from './redis-connection.ts';
export type { RedisScript } from './scripts.ts';
export { RedisLimits } from './redis-limits.ts';
export type { RedisLimitsOptions } from './redis-limits.ts';
export { RedisRateLimitStore } from './redis-store.ts';
export type { RedisRateLimitStoreOptions } from './redis-store.ts';
export { RedisBudget } from './redis-budget.ts';
export type { RedisBudgetOptions } from './redis-budget.ts';
