import type { RedisConnection } from '../redis/redis-connection.ts';
import type { QueueClientOptions, QueueRedis } from './article-queue.ts';

/**
 * The queue's clients on the Redis a connection reaches — the same server or Redis Cluster, user,
 * database and TLS files as the quotas it keeps — each a new ioredis client with BullMQ's
 * settings over the connection's own.
 */
export function queueRedisOf(connection: RedisConnection): QueueRedis {
  const { target } = connection;
  return {
    url: target.url,
    // No ready check: ioredis runs INFO for it and, where a user's ACL refuses INFO, prints a
    // warning of its own on the console; BullMQ asks INFO itself, and its refusal is one line.
    createClient: (options: QueueClientOptions) => target.createClient({ ...options, lazyConnect: true, enableReadyCheck: false }),
  };
}
