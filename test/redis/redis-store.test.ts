import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyedLimiter } from '../../src/limiter/keyed-limiter.ts';
import { connectRedis, RedisRateLimitStore, type RedisConnection } from '../../src/redis/index.ts';
import { ManualClock, LimiterUnavailableError } from '../../src/mechanisms.ts';
import type { RateLimitDecision, RateLimitStore } from '../../src/middleware/index.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

const CHILD = fileURLToPath(new URL('./store-child.ts', import.meta.url));

let redis: TestRedis;
let connection: RedisConnection;
let inspect: Redis;

beforeAll(async () => {
  redis = await startRedis();
  connection = await connectRedis(redis.url);
  inspect = new Redis(redis.url);
});

afterAll(async () => {
  await connection?.close();
  inspect?.disconnect();
  await redis?.stop();
});

describe('RedisRateLimitStore.take', () => {
  it('decides as KeyedLimiter does, field by field', async () => {
    // A refill so slow that the milliseconds between takes add next to nothing.
    const options = { rate: 0.001, burst: 3 };
    const local: RateLimitStore = new KeyedLimiter({ ...options, clock: new ManualClock() });
    const shared: RateLimitStore = new RedisRateLimitStore({ connection, ...options, prefix: 'same:' });
    for (const [key, n] of [
      ['a', 1],
      ['a', 1],
      ['a', 2],
      ['a', 5],
      ['a', 1],
      ['a', 0],
      ['b', 3],
      ['b', 1],
    ] as const) {
      const expected = await local.take(key, n);
      const got = await shared.take(key, n);
      expect({ ...got, resetMs: 0, retryAfterMs: 0 }).toEqual({ ...expected, resetMs: 0, retryAfterMs: 0 });
      for (const field of ['resetMs', 'retryAfterMs'] as const) {
        if (expected[field] === Infinity) expect(got[field]).toBe(Infinity);
        else expect(Math.abs(got[field] - expected[field])).toBeLessThan(50);
      }
    }
  });

  it('keeps each key until its bucket would be full again, and none for a refusal of a new key', async () => {
    const store = new RedisRateLimitStore({ connection, rate: 10, burst: 5, prefix: 'ttl:' });
    const decision = await store.take('client', 3);
    expect(decision).toMatchObject({ allowed: true, limit: 5, remaining: 2, retryAfterMs: 0 });
    expect(decision.resetMs).toBeCloseTo(300, 0);
    const ttlMs = await inspect.pttl('ttl:client');
    expect(ttlMs).toBeGreaterThan(250);
    expect(ttlMs).toBeLessThanOrEqual(302);
    expect(await store.take('stranger', 6)).toEqual({ allowed: false, limit: 5, remaining: 5, resetMs: 0, retryAfterMs: Infinity });
    expect(await inspect.exists('ttl:stranger')).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await inspect.exists('ttl:client')).toBe(0);
  });

  it('says when a refused take could go, and that it never can at rate 0', async () => {
    const store = new RedisRateLimitStore({ connection, rate: 2, burst: 1, prefix: 'retry:' });
    await store.take('k');
    const refused = await store.take('k');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(450);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(500);
    const never = new RedisRateLimitStore({ connection, rate: 0, burst: 1, prefix: 'never:' });
    await never.take('k');
    expect(await never.take('k')).toEqual({ allowed: false, limit: 1, remaining: 0, resetMs: Infinity, retryAfterMs: Infinity });
    expect(await inspect.pttl('never:k')).toBe(-1);
  });

  it('allows everything at rate Infinity without asking Redis', async () => {
    const closed = await connectRedis(redis.url);
    await closed.close();
    const store = new RedisRateLimitStore({ connection: closed, rate: Infinity, burst: 2 });
    expect(await store.take('k')).toEqual({ allowed: true, limit: 2, remaining: 2, resetMs: 0, retryAfterMs: 0 });
  });

  it('rejects with LimiterUnavailableError when Redis does not answer', async () => {
    const own = await startRedis();
    const conn = await connectRedis(own.url, { timeoutMs: 200 });
    try {
      const store = new RedisRateLimitStore({ connection: conn, rate: 1, burst: 1 });
      own.process.kill('SIGSTOP');
      await expect(store.take('k')).rejects.toBeInstanceOf(LimiterUnavailableError);
    } finally {
      own.process.kill('SIGCONT');
      await conn.close();
      await own.stop();
    }
  });

  it('refuses bad options with one message each', () => {
    expect(() => new RedisRateLimitStore({ connection, rate: -1, burst: 1 })).toThrow(
      'Expected rate to be a number >= 0 (tokens per second), got -1',
    );
    expect(() => new RedisRateLimitStore({ connection, rate: 1, burst: Infinity })).toThrow(
      'Expected burst to be a finite number >= 0, got Infinity',
    );
    expect(() => new RedisRateLimitStore({ connection: {} as RedisConnection, rate: 1, burst: 1 })).toThrow(
      'Expected connection to be a RedisConnection, got {}',
    );
  });

  it('enforces one limit per key across two processes', async () => {
    const store = new RedisRateLimitStore({ connection, rate: 0.001, burst: 5 });
    expect((await store.take('shared-client')).remaining).toBe(4);
    expect((await store.take('shared-client')).remaining).toBe(3);
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD, redis.url, 'shared-client', '4'], {
      timeout: 20_000,
    });
    const decisions = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RateLimitDecision);
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect((await store.take('shared-client')).allowed).toBe(false);
  });
});

describe('RedisRateLimitStore.give', () => {
  it('puts tokens back as KeyedLimiter does, never past the burst', async () => {
    const options = { rate: 0.001, burst: 10 };
    const local = new KeyedLimiter({ ...options, clock: new ManualClock() });
    const shared = new RedisRateLimitStore({ connection, ...options, prefix: 'give:' });
    for (const store of [local, shared] as const) {
      expect((await store.take('a', 8)).remaining).toBe(2);
      await store.give('a', 5);
      expect((await store.take('a', 0)).remaining).toBe(7);
      await store.give('a', 100);
      expect((await store.take('a', 0)).remaining).toBe(10);
      // A full bucket takes nothing more, and one never taken from stays full.
      await store.give('b', 3);
      expect((await store.take('b', 10)).allowed).toBe(true);
    }
    expect(await inspect.exists('give:a')).toBe(0);
  });
});
