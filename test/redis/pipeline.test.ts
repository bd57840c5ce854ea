import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, RedisLimits } from '../../src/redis/index.ts';
import {
  generateArticles,
  requestLimit,
  runPipeline,
  type ArticleResult,
  type LlmRequest,
  type LlmResponse,
  type Provider,
  type RunSummary,
} from '../../src/index.ts';
import { startRedis, type TestRedis } from './redis-server.ts';
import { recordReserveWaits } from './reserve-waits.ts';

/** Answers at once, and before answering call `onCall` (numbered from 1) awaits what it is given. */
class HookedProvider implements Provider {
  readonly name = 'hooked';
  readonly callsAtMs: number[] = [];

  constructor(private readonly onCall: (call: number) => Promise<void> | undefined = () => undefined) {}

  async call(request: LlmRequest): Promise<LlmResponse> {
    this.callsAtMs.push(performance.now());
    await this.onCall(this.callsAtMs.length);
    return request.task === 'summarize' ? { output: { summary: 's', keywords: ['k'] } } : { output: { sentiment: 'neutral', score: 0 } };
  }
}

/** Answers after `latencyMs`, recording when each call came. */
class LatencyProvider implements Provider {
  readonly name = 'latency';
  readonly callsAtMs: number[] = [];

  constructor(private readonly latencyMs: number) {}

  async call(request: LlmRequest): Promise<LlmResponse> {
    this.callsAtMs.push(performance.now());
    await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    return request.task === 'summarize' ? { output: { summary: 's', keywords: ['k'] } } : { output: { sentiment: 'neutral', score: 0 } };
  }
}

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

/**
 * A run of `articles` on limits in a Redis of its own (50/s, burst 2; 300 ms to answer) that is
 * killed at the eighth call: what the run said and each article's result.
 */
async function runLosingRedis(
  articles: number,
  limitsLost?: 'stop' | 'cancel',
): Promise<{ summary: RunSummary; results: ArticleResult[] }> {
  const own = await startRedis();
  const connection = await connectRedis(own.url, { timeoutMs: 300 });
  try {
    const provider = new HookedProvider((call) => (call === 8 ? own.kill() : undefined));
    const results: ArticleResult[] = [];
    const summary = await runPipeline({
      source: generateArticles(articles),
      providers: [{ provider, limits: new RedisLimits({ connection, limits: requestLimit(50, 2), quotaKey: 'lost' }) }],
      workers: 4,
      ...(limitsLost === undefined ? {} : { limitsLost }),
      onResult: (result) => void results.push(result),
    });
    return { summary, results };
  } finally {
    await connection.close();
    await own.stop();
  }
}

describe('a pipeline on a quota shared through Redis', () => {
  it('goes on when the scripts are flushed mid-run: they are sent again on NOSCRIPT', async () => {
    const inspect = new Redis(redis.url);
    const connection = await connectRedis(redis.url);
    try {
      const evals = async () => Number(/cmdstat_eval:calls=(\d+)/.exec(await inspect.info('commandstats'))?.[1] ?? 0);
      const provider = new HookedProvider((call) => (call === 10 ? inspect.script('FLUSH').then(() => {}) : undefined));
      const before = await evals();
      const summary = await runPipeline({
        source: generateArticles(15),
        providers: [{ provider, limits: new RedisLimits({ connection, limits: requestLimit(200, 5), quotaKey: 'flush' }) }],
        workers: 3,
      });
      expect([summary.succeeded, summary.failed]).toEqual([15, 0]);
      // Loaded once by source on the connection, and once more after the flush.
      expect((await evals()) - before).toBe(2);
    } finally {
      await connection.close();
      inspect.disconnect();
    }
  });

  it('goes on when Redis restarts mid-run, the lost state starting the quota full: one extra burst', async () => {
    const own = await startRedis();
    const connection = await connectRedis(own.url);
    const waitsUs = recordReserveWaits(connection);
    try {
      // One worker, so that no limiter call is in flight while the provider restarts Redis.
      const provider = new HookedProvider((call) => (call === 6 ? own.restart() : undefined));
      const summary = await runPipeline({
        source: generateArticles(6),
        providers: [{ provider, limits: new RedisLimits({ connection, limits: requestLimit(20, 3), quotaKey: 'restart' }) }],
        workers: 1,
      });
      expect([summary.succeeded, summary.failed]).toEqual([6, 0]);
      const atMs = provider.callsAtMs;
      // Before the restart: the burst of 3 granted with no wait, then 20/s (the floor of the six
      // calls is 150 ms; a few ms less for the lateness of the first call, which the others do not share).
      expect(waitsUs.slice(0, 3)).toEqual([0, 0, 0]);
      expect(atMs[5]! - atMs[0]!).toBeGreaterThanOrEqual(140);
      // After it, the lost state starts the quota full: Redis grants calls 7 to 9 with no wait...
      expect(waitsUs).toHaveLength(12);
      expect(waitsUs.slice(6, 9)).toEqual([0, 0, 0]);
      // ...and then the rate holds again.
      expect(atMs[11]! - atMs[6]!).toBeGreaterThanOrEqual(140);
    } finally {
      await connection.close();
      await own.stop();
    }
  });

  it('stops intake when Redis is lost mid-run: every started article ends once, those in flight failed with the reason', async () => {
    const { summary, results } = await runLosingRedis(100);
    expect(summary.articles).toBeLessThan(100);
    expect(results).toHaveLength(summary.articles);
    expect(new Set(results.map((result) => result.id)).size).toBe(summary.articles);
    expect(summary.succeeded + summary.failed).toBe(summary.articles);
    expect(summary.failed).toBeGreaterThanOrEqual(1);
    expect(summary.failureReasons).toEqual({ LimiterUnavailableError: summary.failed });
    expect(summary.stoppedBy).toEqual({
      by: 'limits',
      provider: 'hooked',
      type: 'LimiterUnavailableError',
      message: expect.stringMatching(/^Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer within 300ms/),
    });
    expect(summary.interrupted).toBe(false);
  });

  it("limitsLost: 'cancel' (the queue worker's): intake goes on, the articles that met the lost Redis end cancelled, none failed", async () => {
    const { summary, results } = await runLosingRedis(30, 'cancel');
    // Every article was taken: the lost Redis stopped nothing.
    expect(summary.articles).toBe(30);
    expect(results).toHaveLength(30);
    expect(summary.failed).toBe(0);
    expect(summary.deadLetters).toBe(0);
    expect(summary.cancelled).toBeGreaterThanOrEqual(1);
    expect(summary.succeeded + summary.cancelled).toBe(30);
    for (const result of results.filter((r) => r.status === 'cancelled')) expect(result.error?.type).toBe('LimiterUnavailableError');
    expect(summary.stoppedBy).toBeUndefined();
  });

  it('refuses a limitsLost it does not know', async () => {
    await expect(
      runPipeline({
        source: [],
        providers: [{ provider: new HookedProvider(), limits: requestLimit(1, 1) }],
        limitsLost: 'ignore' as 'stop',
      }),
    ).rejects.toThrow(/Expected limitsLost to be one of "stop", "cancel"/);
  });

  it('oversubscribed processes on one quota lose nothing: an article not granted its first call has not started', async () => {
    // Four "processes" (each its own connection, limits and pipeline) of 20 workers on one 20/s
    // quota, a 2 s timeout: 80 articles at once would wait 8 s for their later calls if all began.
    const pipelines = await Promise.all(
      [1, 2, 3, 4].map(async (seed) => {
        const connection = await connectRedis(redis.url);
        const provider = new LatencyProvider(40);
        const limits = new RedisLimits({ connection, limits: requestLimit(20, 2), quotaKey: 'oversubscribed' });
        return { connection, provider, limits, seed };
      }),
    );
    try {
      const startedMs = performance.now();
      const summaries = await Promise.all(
        pipelines.map(({ provider, limits, seed }) =>
          runPipeline({ source: generateArticles(15, { seed }), providers: [{ provider, limits }], workers: 20, timeoutMs: 2000 }),
        ),
      );
      const elapsedMs = performance.now() - startedMs;
      for (const summary of summaries) {
        expect({ succeeded: summary.succeeded, reasons: summary.failureReasons }).toEqual({ succeeded: 15, reasons: {} });
      }
      // 120 calls at 20/s after a burst of 2: the shared rate held them (physics: at least 5.9 s).
      expect(elapsedMs).toBeGreaterThanOrEqual(5800);
      const calls = pipelines.flatMap(({ provider }) => provider.callsAtMs).sort((a, b) => a - b);
      expect(calls).toHaveLength(120);
    } finally {
      await Promise.all(pipelines.map(({ connection }) => connection.close()));
    }
  });
});
