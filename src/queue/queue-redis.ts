import { loadOptional } from '../optional-package.ts';
import { redactRedisUrl } from '../redis/redis-connection.ts';
import type { QueueClientOptions, QueueRedis } from './article-queue.ts';

/** A {@link QueueRedis} for a Redis URL (`redis://`, `rediss://`): each client a new ioredis to it. */
export async function queueRedisAt(url: string): Promise<QueueRedis> {
  const { Redis } = await loadOptional('ioredis', 'the article queue', () => import('ioredis'));
  return {
    url: redactRedisUrl(url),
    createClient: (options: QueueClientOptions) => new Redis(url, { ...options, lazyConnect: true }),
  };
}
