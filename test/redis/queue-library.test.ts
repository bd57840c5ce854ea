// The queue from the library, as docs/queue.md shows it: every client it opened is closed again,
// so a script that uses it ends on its own.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateArticles, requestLimit, SimulatedProvider } from '../../src/index.ts';
import { ArticleQueue, queueRedisOf, runQueueWorker } from '../../src/queue/index.ts';
import { connectRedis, RedisLimits } from '../../src/redis/index.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** The clients connected to the server, not counting the one that asks. */
async function othersConnected(inspect: Redis): Promise<number> {
  const list = (await inspect.client('LIST')) as string;
  return list.split('\n').filter((line) => line.trim() !== '').length - 1;
}

describe('the article queue from the library', () => {
  it('runs the documented example to the end and leaves no client connected once closed', async () => {
    const inspect = new Redis(redis.url);
    try {
      expect(await othersConnected(inspect)).toBe(0);
      const connection = await connectRedis(redis.url);
      const queue = await ArticleQueue.open({ redis: queueRedisOf(connection), name: 'library' });
      expect(await queue.enqueue(generateArticles(6))).toEqual({ added: 6, existing: 0 });
      const summary = await runQueueWorker({
        queue,
        providers: [
          {
            provider: new SimulatedProvider({ minLatencyMs: 1, maxLatencyMs: 2 }),
            limits: new RedisLimits({ connection, limits: requestLimit(1000, 10), quotaKey: 'library' }),
          },
        ],
        workers: 3,
        exitWhenDrained: true,
      });
      expect(summary.succeeded).toBe(6);
      const finished: string[] = [];
      for await (const { result } of queue.finished()) finished.push(`${result.id} ${result.status}`);
      expect(finished.sort()).toEqual(['1', '2', '3', '4', '5', '6'].map((id) => `${id} succeeded`));
      expect(await othersConnected(inspect)).toBeGreaterThan(0);
      await connection.close();
      await queue.close();
      // A disconnect reaches the server a moment later.
      const deadline = performance.now() + 5000;
      while ((await othersConnected(inspect)) > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await othersConnected(inspect), (await inspect.client('LIST')) as string).toBe(0);
    } finally {
      inspect.disconnect();
    }
  });
});
