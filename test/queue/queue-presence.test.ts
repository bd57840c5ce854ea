// Whether a queue is there, from the library: made by enqueue, lost with Redis's data (a worker
// under it finds it and says what it held), or never made — against a redis-server of the test's own.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateArticles, requestLimit, SimulatedProvider } from '../../src/index.ts';
import { ArticleQueue, isQueueNotFoundError, QueueNotFoundError, queueRedisOf, runQueueWorker } from '../../src/queue/index.ts';
import { connectRedis, type RedisConnection } from '../../src/redis/index.ts';
import { startRedis, type TestRedis } from '../redis/redis-server.ts';

let redis: TestRedis;
let connection: RedisConnection;
let admin: Redis;

beforeAll(async () => {
  redis = await startRedis();
  connection = await connectRedis(redis.url);
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin?.disconnect();
  await connection?.close();
  await redis?.stop();
});

const open = (name: string) => ArticleQueue.open({ redis: queueRedisOf(connection), name });
const provider = (latencyMs: number) => ({
  provider: new SimulatedProvider({ minLatencyMs: latencyMs, maxLatencyMs: latencyMs }),
  limits: requestLimit(Infinity, 1),
});

describe('ArticleQueue.presence', () => {
  it('is unknown until enqueue makes it, made after, lost once a worker says so, made again by enqueue, unknown once obliterated', async () => {
    const queue = await open('presence');
    try {
      expect(await queue.presence()).toEqual({ state: 'unknown' });
      // Nothing enqueued, nothing made; a look at it leaves no key.
      expect(await queue.enqueue([])).toEqual({ added: 0, existing: 0 });
      expect(await queue.presence()).toEqual({ state: 'unknown' });
      expect(await admin.keys('*presence*')).toEqual([]);

      await queue.enqueue(generateArticles(3));
      expect(await queue.presence()).toEqual({ state: 'made' });
      const beat = await queue.heartbeat('w');
      expect(beat.snapshot).toEqual({ waiting: 3, active: 0, delayed: 0, completed: 0, failed: 0, enqueued: 3, atMs: beat.nowMs });

      await admin.flushall();
      expect((await queue.heartbeat('w')).snapshot).toBeUndefined();
      expect(await admin.keys('*')).toEqual([]);
      const loss = { foundMs: beat.nowMs + 1500, foundBy: 'w', lastSeen: beat.snapshot };
      await queue.markLost(loss);
      // The first word stands.
      await queue.markLost({ ...loss, foundBy: 'v' });
      expect(await queue.presence()).toEqual({ state: 'lost', loss });
      const error = queue.notFound(loss);
      expect(error).toBeInstanceOf(QueueNotFoundError);
      expect(error.message).toBe(
        `queue presence is gone from Redis at ${redis.url} (restarted without its data, or the queue was removed): ` +
          `it held 3 articles — 0 finished, 3 not — when last seen, 1.5s before w found it gone (${new Date(loss.foundMs).toISOString()}); ` +
          'its jobs and their results went with it',
      );

      await queue.enqueue(generateArticles(2));
      expect(await queue.presence()).toEqual({ state: 'made' });
      expect((await queue.heartbeat('w')).snapshot).toMatchObject({ waiting: 2, enqueued: 2 });
      await queue.obliterate();
      expect(await queue.presence()).toEqual({ state: 'unknown' });
      expect(await admin.keys('*presence*')).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});

describe('runQueueWorker on a queue that is not there', () => {
  it('rejects a queue never made with a QueueNotFoundError naming it, before taking anything or writing a key', async () => {
    const queue = await open('never');
    try {
      const error = await runQueueWorker({ queue, providers: [provider(1)], exitWhenDrained: true }).catch((caught: unknown) => caught);
      expect(isQueueNotFoundError(error)).toBe(true);
      expect((error as QueueNotFoundError).message).toMatch(/^no queue never at redis:\/\/127\.0\.0\.1:\d+: nothing was enqueued on it/);
      expect((error as QueueNotFoundError).loss).toBeUndefined();
      expect(await admin.keys('*never*')).toEqual([]);
    } finally {
      await queue.close();
    }
  });

  it('stops at once when Redis loses the queue under it: queueLost says what it held, nothing is left locked, status then says so', async () => {
    const queue = await open('flushed');
    try {
      await queue.enqueue(generateArticles(40));
      let results = 0;
      const summary = await runQueueWorker({
        queue,
        providers: [provider(50)],
        workers: 4,
        workerName: 'flushed-worker',
        exitWhenDrained: true,
        onResult: async () => {
          if (++results === 8) await admin.flushall();
        },
      });
      expect(summary.queueLost).toBeDefined();
      expect(summary.queueLost!.foundBy).toBe('flushed-worker');
      const seen = summary.queueLost!.lastSeen!;
      expect(seen.enqueued).toBe(40);
      expect(seen.waiting + seen.active + seen.completed).toBe(40);
      expect(summary.stoppedBy).toMatchObject({ by: 'source', type: 'QueueNotFoundError' });
      expect(summary.stoppedBy!.message).toMatch(
        /^queue flushed is gone from Redis at \S+ \(restarted without its data, or the queue was removed\): it held 40 articles/,
      );
      expect(summary.leftLocked).toBe(0);
      expect(summary.articles).toBeLessThan(40);
      expect(await queue.presence()).toEqual({ state: 'lost', loss: summary.queueLost });
    } finally {
      await queue.close();
    }
  }, 30_000);
});
