import type { ProviderConfig } from '../config/providers-config.ts';
import type { ProviderLimits } from '../quota/provider-limits.ts';
import { RedisBudget } from '../redis/redis-budget.ts';
import { REDIS_DEFAULTS, type RedisConnection } from '../redis/redis-connection.ts';
import { RedisLimits } from '../redis/redis-limits.ts';
import { RedisRateLimitStore } from '../redis/redis-store.ts';
import type { KeyStores } from './gateway-keys.ts';

/**
 * A gateway's state in Redis, one figure for every replica: each member's quota under its
 * `quotaKey` (its name) — the same keys a run or a queue worker on that provider takes from, so
 * they share it too — and each key's budget and buckets under `proxy:` and the key's name.
 */
export function redisGatewayStores(
  connection: RedisConnection,
  prefix: string = REDIS_DEFAULTS.prefix,
): { memberLimits: (provider: ProviderConfig) => ProviderLimits; keyStores: KeyStores } {
  return {
    memberLimits: (provider) =>
      new RedisLimits({ connection, limits: provider.limits, quotaKey: provider.quotaKey ?? provider.name, prefix }),
    keyStores: {
      budget: (key) => new RedisBudget({ connection, key: `proxy:${key.name}`, maxUsd: key.maxCostUsd!, prefix }),
      bucket: (_key, spec) =>
        new RedisRateLimitStore({ connection, rate: spec.rate, burst: spec.burst, prefix: `${prefix}proxy:${spec.kind}:` }),
    },
  };
}
