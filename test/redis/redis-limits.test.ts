import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LimitTooSmallError, requestLimit, type LimitSpec } from '../../src/index.ts';
import { AdaptiveRate, MaxWaitExceededError, isLimiterUnavailableError, LimiterUnavailableError } from '../../src/mechanisms.ts';
import { connectRedis, RedisLimits, type RedisConnection, RedisConnectError } from '../../src/redis/index.ts';
import { clusterSlot } from './cluster-slot.ts';
import { freePort, startRedis, type TestRedis } from './redis-server.ts';

let redis: TestRedis;
let connection: RedisConnection;
/** A plain client for looking inside. */
let inspect: Redis;
let quotas = 0;

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

/** Limits on a quota of their own, so tests never share a bucket. */
function limitsFor(specs: readonly LimitSpec[], options: { fallbackShare?: number; on?: RedisConnection } = {}): RedisLimits {
  return new RedisLimits({
    connection: options.on ?? connection,
    limits: specs,
    quotaKey: `q${++quotas}`,
    fallbackShare: options.fallbackShare,
  });
}

/** A bucket as Redis keeps it (packed `<ddd[d]`: t at ev [r], instants in µs), or undefined when there is no key (full). */
async function bucketOf(
  limits: RedisLimits,
  index: number,
): Promise<{ tokens: number; atUs: number; rate: string | undefined } | undefined> {
  const value = await inspect.getBuffer(limits.keys[index]!);
  if (value === null) return undefined;
  // Packed doubles: tokens, the instant they count at, the latest time to act, the shared rate (-1: none), the key's expiry.
  const rate = value.readDoubleLE(24) >= 0 ? String(value.readDoubleLE(24)) : undefined;
  return { tokens: value.readDoubleLE(0), atUs: value.readDoubleLE(8), rate };
}

/** A bucket's tokens now: the stored count plus the refill since (`undefined`: no key, full). */
async function tokensOf(limits: RedisLimits, index: number, rate: number, burst: number): Promise<number | undefined> {
  const [bucket, [seconds, micros]] = await Promise.all([bucketOf(limits, index), inspect.time()]);
  if (bucket === undefined) return undefined;
  const nowUs = Number(seconds) * 1e6 + Number(micros);
  return Math.min(burst, bucket.tokens + (Math.max(0, nowUs - bucket.atUs) * rate) / 1e6);
}

const ONE_CALL = { requests: 1, inputTokens: 0, outputTokens: 0 };
const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RedisLimits.acquire', () => {
  it('grants the burst at once, then one call per 1/rate, never early', async () => {
    const limits = limitsFor(requestLimit(20, 2));
    const startMs = performance.now();
    const grantedMs: number[] = [];
    // Redis decides the waits on its own clock: the burst with none (a max wait of 0 refuses any),
    // each next call within one period (50 ms) of the one before, however late this process asks.
    for (let i = 0; i < 5; i++) {
      await limits.acquire(ONE_CALL, { maxWaitMs: i < 2 ? 0 : 50 });
      grantedMs.push(performance.now() - startMs);
    }
    // The third call is 50 ms after the burst, each next 50 ms later: lower bounds hard.
    for (let i = 2; i < 5; i++) expect(grantedMs[i]).toBeGreaterThanOrEqual((i - 1) * 50 - 1);
  });

  it('takes the whole cost on every limit or nothing: a token refusal spends no request token', async () => {
    // Rates so low that nothing refills during the test.
    const limits = limitsFor([
      { kind: 'requests', rate: 0.001, burst: 3 },
      { kind: 'tokens', rate: 0.001, burst: 100 },
    ]);
    await limits.acquire({ requests: 1, inputTokens: 80, outputTokens: 10 });
    const refused = limits.acquire({ requests: 1, inputTokens: 40, outputTokens: 0 }, { maxWaitMs: 1000 });
    await expect(refused).rejects.toBeInstanceOf(MaxWaitExceededError);
    expect(await tokensOf(limits, 0, 0.001, 3)).toBeCloseTo(2, 2);
    expect(await tokensOf(limits, 1, 0.001, 100)).toBeCloseTo(10, 2);
  });

  it('refuses at once a cost larger than a burst, taking nothing', async () => {
    const limits = limitsFor([
      { kind: 'requests', rate: 1, burst: 3 },
      { kind: 'tokens', rate: 10, burst: 100 },
    ]);
    const error = await limits.acquire({ requests: 1, inputTokens: 150, outputTokens: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitTooSmallError);
    expect((error as Error).message).toBe('the call needs 150 tokens but the tokens limit allows at most 100 at once');
    expect(await inspect.exists(...limits.keys)).toBe(0);
  });

  it('fails at once when the grant cannot come within maxWaitMs, and the next caller is not delayed by it', async () => {
    const limits = limitsFor(requestLimit(1, 1));
    await limits.acquire(ONE_CALL);
    const error = await limits.acquire(ONE_CALL, { maxWaitMs: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    // The wait it would have had: more than allowed, at most the one token's refill (1 s).
    expect((error as MaxWaitExceededError).waitMs).toBeGreaterThan(20);
    expect((error as MaxWaitExceededError).waitMs).toBeLessThanOrEqual(1000);
    // Nothing was taken: no token in debt, and the next call is granted within the first refill,
    // where a token taken would have made it wait for a second one (Redis refuses a wait over 1 s).
    expect(await tokensOf(limits, 0, 1, 1)).toBeGreaterThanOrEqual(0);
    await limits.acquire(ONE_CALL, { maxWaitMs: 1000 });
  });

  it('rejects with the abort reason and gives the place back, as Reservation.Cancel does', async () => {
    // A token in 10 s: the waiter is aborted long before its time to act, however slow the machine.
    const limits = limitsFor(requestLimit(0.1, 1));
    await limits.acquire(ONE_CALL);
    const controller = new AbortController();
    const waiting = limits.acquire(ONE_CALL, { signal: controller.signal });
    await sleepMs(20);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await sleepMs(20);
    // Refunded: the bucket is back to what the first call left (plus the refill), not a token in debt.
    const tokens = await tokensOf(limits, 0, 0.1, 1);
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThan(1);
  });

  it('keeps the tokens that later reservations count on when an earlier one is cancelled', async () => {
    // A token in 10 s: both waiters are still waiting when the first is cancelled, however slow the machine.
    const limits = limitsFor(requestLimit(0.1, 1));
    await limits.acquire(ONE_CALL);
    const controller = new AbortController();
    const cancelled = limits.acquire(ONE_CALL, { signal: controller.signal });
    await sleepMs(5);
    const laterController = new AbortController();
    const later = limits.acquire(ONE_CALL, { signal: laterController.signal });
    await sleepMs(5);
    controller.abort(new Error('stop'));
    await expect(cancelled).rejects.toThrow('stop');
    await sleepMs(10);
    // x/time/rate: the later reservation acts 10 s after the cancelled one, which is what the
    // cancelled one's token was worth; nothing comes back: two tokens in debt, less the refill.
    expect(await tokensOf(limits, 0, 0.1, 1)).toBeLessThan(-1.5);
    laterController.abort(new Error('done'));
    await expect(later).rejects.toThrow('done');
  });

  it('rejects at once with the abort reason when the signal aborts while Redis has not answered yet', async () => {
    const own = await startRedis();
    const conn = await connectRedis(own.url);
    try {
      const limits = limitsFor(requestLimit(10, 5), { on: conn });
      await limits.acquire(ONE_CALL);
      own.process.kill('SIGSTOP');
      const controller = new AbortController();
      const waiting = limits.acquire(ONE_CALL, { signal: controller.signal });
      await sleepMs(50);
      const reason = new Error('stop');
      controller.abort(reason);
      // Redis is stopped until after this, so the rejection did not wait for its answer; and it is
      // the reason, not the connection's timeout (2 s) running out.
      await expect(waiting).rejects.toBe(reason);
      own.process.kill('SIGCONT');
      // The reply comes after all and is cancelled; the connection goes on.
      await limits.acquire(ONE_CALL);
      expect(conn.available).toBe(true);
    } finally {
      own.process.kill('SIGCONT');
      await conn.close();
      await own.stop();
    }
  });

  it('settles the token estimate against the usage: unused tokens back, an overrun debited, once', async () => {
    const limits = limitsFor([
      { kind: 'requests', rate: 0.001, burst: 10 },
      { kind: 'tokens', rate: 0.001, burst: 1000 },
    ]);
    const grant = await limits.acquire({ requests: 1, inputTokens: 100, outputTokens: 200 });
    expect(await tokensOf(limits, 1, 0.001, 1000)).toBeCloseTo(700, 1);
    grant.settle({ inputTokens: 100, outputTokens: 50 });
    grant.settle({ inputTokens: 0, outputTokens: 0 });
    await limits.acquire({ requests: 1, inputTokens: 0, outputTokens: 0 });
    expect(await tokensOf(limits, 1, 0.001, 1000)).toBeCloseTo(850, 1);
    const overrun = await limits.acquire({ requests: 1, inputTokens: 100, outputTokens: 100 });
    overrun.settle({ inputTokens: 100, outputTokens: 400 });
    await limits.acquire({ requests: 1, inputTokens: 0, outputTokens: 0 });
    expect(await tokensOf(limits, 1, 0.001, 1000)).toBeCloseTo(350, 1);
  });
});

describe('RedisLimits keys', () => {
  it('expire a second after the bucket is full again, and a quota made full has none', async () => {
    const limits = limitsFor([
      { kind: 'requests', rate: 10, burst: 1 },
      { kind: 'tokens', rate: 1000, burst: 1000 },
    ]);
    const grant = await limits.acquire({ requests: 1, inputTokens: 500, outputTokens: 0 });
    // Each key expires a second after its bucket is full again (so that the takes of a busy quota
    // need not set it again), counted on Redis's clock from the instant the reservation was made
    // (the bucket's own): 100 ms for a request at 10/s, 500 ms for 500 tokens at 1000/s, a ms more
    // for the rounding — whenever this process looks. The bucket says a ms less, never more.
    const expiresInMs = await Promise.all(
      limits.keys.map(async (key, index) => {
        const [expiresAtMs, bucket, value] = await Promise.all([
          inspect.call('PEXPIRETIME', key) as Promise<number>,
          bucketOf(limits, index),
          inspect.getBuffer(key),
        ]);
        expect(value!.readDoubleLE(32) / 1000).toBeLessThanOrEqual(expiresAtMs);
        return expiresAtMs - bucket!.atUs / 1000;
      }),
    );
    expect(expiresInMs[0]).toBeGreaterThanOrEqual(1100);
    expect(expiresInMs[0]).toBeLessThanOrEqual(1102);
    expect(expiresInMs[1]).toBeGreaterThanOrEqual(1500);
    expect(expiresInMs[1]).toBeLessThanOrEqual(1502);
    // The tokens given back fill that bucket: its key goes at once.
    grant.settle({ inputTokens: 0, outputTokens: 0 });
    await sleepMs(50);
    expect(await inspect.exists(limits.keys[1]!)).toBe(0);
    await sleepMs(1100);
    expect(await inspect.exists(...limits.keys)).toBe(0);
  });

  it('hash-tag every key of a quota by its name, so its scripts run on one Redis Cluster slot', () => {
    // The slot function against Redis Cluster's documented values.
    expect(clusterSlot('123456789')).toBe(0x31c3 % 16384);
    expect(clusterSlot('foo')).toBe(12182);
    expect(clusterSlot('{user1000}.following')).toBe(clusterSlot('{user1000}.followers'));
    const specs: LimitSpec[] = [
      { kind: 'requests', rate: 10, burst: 10 },
      { kind: 'tokens', rate: 1000, burst: 1000 },
      { kind: 'input-tokens', rate: 500, burst: 500 },
      { kind: 'output-tokens', rate: 500, burst: 500 },
    ];
    for (const quotaKey of ['openai', 'anthropic-prod', 'a:b']) {
      const limits = new RedisLimits({ connection, limits: specs, quotaKey, prefix: 'app:' });
      expect(limits.keys).toEqual([
        `app:{${quotaKey}}:requests`,
        `app:{${quotaKey}}:tokens`,
        `app:{${quotaKey}}:input-tokens`,
        `app:{${quotaKey}}:output-tokens`,
      ]);
      expect(new Set(limits.keys.map(clusterSlot))).toEqual(new Set([clusterSlot(quotaKey)]));
    }
  });

  it('read a bucket an earlier version wrote as text (t at ev [r]) and write it back packed', async () => {
    const limits = limitsFor(requestLimit(0.001, 5));
    const [seconds, micros] = await inspect.time();
    const nowUs = Number(seconds) * 1e6 + Number(micros);
    await inspect.set(limits.keys[0]!, `1.5 ${nowUs} ${nowUs} 0.001`, 'PX', 10_000);
    await limits.acquire(ONE_CALL, { maxWaitMs: 0 });
    await expect(limits.acquire(ONE_CALL, { maxWaitMs: 10 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    expect((await inspect.getBuffer(limits.keys[0]!))?.length).toBe(40);
    expect(await tokensOf(limits, 0, 0.001, 5)).toBeCloseTo(0.5, 2);
  });

  it("refuses limits that are not a provider's: no limit, a kind twice, a bad rate", () => {
    expect(() => new RedisLimits({ connection, limits: [], quotaKey: 'a' })).toThrow(
      'Expected specs to be a non-empty array of limits, got []',
    );
    expect(() => new RedisLimits({ connection, limits: [...requestLimit(1, 1), ...requestLimit(2, 2)], quotaKey: 'a' })).toThrow(
      'Expected each limit kind to be given once, got "requests twice"',
    );
    expect(() => new RedisLimits({ connection, limits: [{ kind: 'requests', rate: -1, burst: 1 }], quotaKey: 'a' })).toThrow(
      'Expected limits[0].rate to be a number >= 0 (per second), got -1',
    );
  });

  it('refuses a quota key or prefix with braces, which would split a quota over slots', () => {
    expect(() => new RedisLimits({ connection, limits: requestLimit(1, 1), quotaKey: 'a{b}' })).toThrow(
      'Expected quotaKey to be a name without { or }, got "a{b}"',
    );
    expect(() => new RedisLimits({ connection, limits: requestLimit(1, 1), quotaKey: 'a', prefix: 'x{}' })).toThrow(
      'Expected prefix to be a name without { or }, got "x{}"',
    );
    expect(() => new RedisLimits({ connection, limits: requestLimit(1, 1), quotaKey: '' })).toThrow(
      'Expected quotaKey to be a non-empty string, got ""',
    );
    expect(() => new RedisLimits({ connection, limits: requestLimit(1, 1), quotaKey: 'a', fallbackShare: 0 })).toThrow(
      'Expected fallbackShare to be a finite number in (0, 1], got 0',
    );
  });
});

describe('RedisLimits.setRate, lowerTo and backlogMs', () => {
  it('sets the shared rate by compare-and-set: a process acting on a rate it has not seen adopts the new one', async () => {
    const other = await connectRedis(redis.url);
    try {
      const quotaKey = `q${++quotas}`;
      const a = new RedisLimits({ connection, limits: requestLimit(10, 5), quotaKey });
      const b = new RedisLimits({ connection: other, limits: requestLimit(10, 5), quotaKey });
      a.setRate(8);
      await a.acquire(ONE_CALL);
      expect(a.rate).toBe(8);
      // b still sees 10: its cut of 10 → 8 is not applied on top of a's, and it adopts 8.
      expect(b.rate).toBe(10);
      b.setRate(6);
      await b.acquire(ONE_CALL);
      expect(b.rate).toBe(8);
      expect((await bucketOf(a, 0))?.rate).toBe('8');
      // Now that it has seen 8, its change applies.
      b.setRate(6);
      await b.acquire(ONE_CALL);
      await a.acquire(ONE_CALL);
      expect([a.rate, b.rate]).toEqual([6, 6]);
      // Never above the configured rate; back at it, the rate is no longer stored.
      a.setRate(50);
      await a.acquire(ONE_CALL);
      expect(a.rate).toBe(10);
      expect((await bucketOf(a, 0))?.rate).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('lets adaptive rates in three processes cut once for one cluster of 429s', async () => {
    const connections = await Promise.all([connectRedis(redis.url), connectRedis(redis.url), connectRedis(redis.url)]);
    try {
      const quotaKey = `q${++quotas}`;
      const processes = connections.map((c) => {
        const limits = new RedisLimits({ connection: c, limits: requestLimit(10, 5), quotaKey });
        return { limits, adaptive: new AdaptiveRate({ limits }) };
      });
      for (const { adaptive } of processes) adaptive.onRateLimited();
      for (const { limits } of processes) await limits.acquire(ONE_CALL);
      expect(processes.map(({ limits }) => limits.rate)).toEqual([8, 8, 8]);
    } finally {
      await Promise.all(connections.map((c) => c.close()));
    }
  });

  it('keeps a lowered shared rate when the bucket is full again', async () => {
    const limits = limitsFor(requestLimit(1000, 1));
    limits.setRate(500);
    await limits.acquire(ONE_CALL);
    await sleepMs(20);
    expect((await bucketOf(limits, 0))?.rate).toBe('500');
    expect(await inspect.pttl(limits.keys[0]!)).toBeGreaterThan(50_000);
  });

  it('sets a key to expire a second past full, moves the expiry only when it falls short, and is gone once full and past it', async () => {
    const limits = limitsFor(requestLimit(10, 1));
    const key = limits.keys[0]!;
    await limits.acquire(ONE_CALL);
    // Full again in 100 ms: set to expire a second after that.
    const firstTtlMs = await inspect.pttl(key);
    expect(firstTtlMs).toBeGreaterThan(900);
    expect(firstTtlMs).toBeLessThanOrEqual(1102);
    await sleepMs(150);
    // Full again 100 ms after this take, well within the expiry set: the TTL is kept, not set again.
    await limits.acquire(ONE_CALL);
    const keptTtlMs = await inspect.pttl(key);
    expect(keptTtlMs).toBeLessThanOrEqual(firstTtlMs - 100);
    expect(keptTtlMs).toBeGreaterThan(0);
    // A take that leaves the bucket full later than the expiry moves it.
    const slow = limitsFor(requestLimit(1, 5));
    for (let i = 0; i < 5; i++) await slow.acquire(ONE_CALL);
    expect(await inspect.pttl(slow.keys[0]!)).toBeGreaterThan(5000);
    await sleepMs(keptTtlMs + 50);
    expect(await inspect.exists(key)).toBe(0);
  });

  it('lowers a bucket to what the provider says remains, never raising it, once however many say so', async () => {
    const limits = limitsFor(requestLimit(0.001, 10));
    limits.lowerTo('requests', 3);
    limits.lowerTo('requests', 3);
    limits.lowerTo('requests', 5);
    limits.lowerTo('tokens', 0);
    await limits.acquire(ONE_CALL);
    expect(await tokensOf(limits, 0, 0.001, 10)).toBeCloseTo(2, 2);
  });

  it('answers backlogMs from the last reply: 0 before any, then the time until the next grants', async () => {
    // A call in 10 s: what refills while this process runs is a small part of a token, however slow the machine.
    const limits = limitsFor(requestLimit(0.1, 2));
    expect(limits.backlogMs(1)).toBe(0);
    await limits.acquire(ONE_CALL);
    await limits.acquire(ONE_CALL);
    expect(limits.backlogMs(1)).toBeGreaterThan(9000);
    expect(limits.backlogMs(1)).toBeLessThanOrEqual(10_000);
    expect(limits.backlogMs(3)).toBeGreaterThan(29_000);
    expect(limits.backlogMs(3)).toBeLessThanOrEqual(30_000);
  });
});

describe('RedisLimits when Redis goes away', () => {
  it('reloads its scripts after SCRIPT FLUSH and goes on', async () => {
    const limits = limitsFor(requestLimit(1000, 10));
    const evalsBefore = await evalCalls();
    for (let i = 0; i < 5; i++) await limits.acquire(ONE_CALL);
    await inspect.script('FLUSH');
    for (let i = 0; i < 5; i++) await limits.acquire(ONE_CALL);
    // Sent as source once more after the flush (on NOSCRIPT), then by SHA again.
    expect((await evalCalls()) - evalsBefore).toBe(1);
    expect(connection.available).toBe(true);
  });

  it('fails with LimiterUnavailableError within the timeout when Redis is killed, at once after that, and recovers when it is back', async () => {
    const own = await startRedis();
    const conn = await connectRedis(own.url, { timeoutMs: 300 });
    try {
      // Two calls in 1000 s: the bucket emptied here stays empty unless its state is lost.
      const limits = limitsFor(requestLimit(0.002, 2), { on: conn });
      await limits.acquire(ONE_CALL);
      await limits.acquire(ONE_CALL);
      await own.kill();
      const startMs = performance.now();
      const error = await limits.acquire(ONE_CALL).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LimiterUnavailableError);
      expect(isLimiterUnavailableError(error)).toBe(true);
      expect((error as Error).message).toMatch(
        new RegExp(`^Redis at redis://127.0.0.1:${own.port} did not answer within 300ms \\(connection`),
      );
      expect(performance.now() - startMs).toBeGreaterThanOrEqual(299);
      expect(conn.available).toBe(false);
      // At once: the same error again, nothing sent and no second timeout waited for.
      await expect(limits.acquire(ONE_CALL)).rejects.toBe(error);

      await own.restart();
      await until(() => conn.available, 5000);
      // The restarted Redis lost the state: the quota starts full, the whole burst with no wait
      // (a max wait of 0 refuses any), where the emptied bucket would have had none for 500 s.
      await limits.acquire(ONE_CALL, { maxWaitMs: 0 });
      await limits.acquire(ONE_CALL, { maxWaitMs: 0 });
    } finally {
      await conn.close();
      await own.stop();
    }
  });

  it('fails with LimiterUnavailableError when Redis stops answering on an open connection', async () => {
    const own = await startRedis();
    const conn = await connectRedis(own.url, { timeoutMs: 300 });
    try {
      const limits = limitsFor(requestLimit(50, 2), { on: conn });
      await limits.acquire(ONE_CALL);
      own.process.kill('SIGSTOP');
      const error = await limits.acquire(ONE_CALL).catch((e: unknown) => e);
      expect((error as Error).message).toBe(`Redis at redis://127.0.0.1:${own.port} did not answer within 300ms`);
      own.process.kill('SIGCONT');
      await until(() => conn.available, 5000);
      await limits.acquire(ONE_CALL);
    } finally {
      own.process.kill('SIGCONT');
      await conn.close();
      await own.stop();
    }
  });

  it('goes on with a local bucket at the fallback share while Redis is away, and says so at error level', async () => {
    const own = await startRedis();
    const lines: string[] = [];
    const conn = await connectRedis(own.url, { timeoutMs: 300 });
    try {
      const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
      const limits = new RedisLimits({ connection: conn, limits: requestLimit(40, 4), quotaKey: 'fallback', fallbackShare: 0.5, logger });
      await own.kill();
      // Half the quota: 20/s with a burst of 2, so the third call waits 50 ms, the fifth 150 ms.
      const startMs = performance.now();
      for (let i = 0; i < 5; i++) await limits.acquire(ONE_CALL);
      const elapsedMs = performance.now() - startMs;
      expect(elapsedMs).toBeGreaterThanOrEqual(300 + 149);
      expect(lines.map((line) => JSON.parse(line) as { level: number; msg: string }).map(({ level, msg }) => ({ level, msg }))).toEqual([
        { level: 50, msg: `Redis at ${own.url} is unavailable: the quota is no longer shared; going on with a local bucket at 50% of it` },
      ]);
      expect(limits.fallback.stretches).toBe(1);
      expect(limits.fallback.localMs).toBeGreaterThan(0);
    } finally {
      await conn.close();
      await own.stop();
    }
  });
});

describe('connectRedis', () => {
  it('names the URL and the cause when Redis cannot be reached, hiding the password', async () => {
    const port = await freePort();
    const error = await connectRedis(`redis://:secret@127.0.0.1:${port}`).catch((e: unknown) => e);
    expect(error instanceof RedisConnectError).toBe(true);
    expect((error as Error).message).toBe(
      `cannot connect to Redis at redis://:***@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('gives up on a server that accepts the connection and never answers, within the timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as { port: number };
    try {
      const startMs = performance.now();
      await expect(connectRedis(`redis://127.0.0.1:${port}`, { timeoutMs: 300 })).rejects.toThrow(
        `cannot connect to Redis at redis://127.0.0.1:${port}: no answer within 300ms`,
      );
      expect(performance.now() - startMs).toBeLessThan(1500);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('refuses a URL that is not redis:// or rediss://', async () => {
    await expect(connectRedis('http://127.0.0.1:6379')).rejects.toThrow(
      'Expected url to be a redis:// or rediss:// URL, got "http://127.0.0.1:6379"',
    );
    await expect(connectRedis('127.0.0.1:6379')).rejects.toThrow('Expected url to be a redis:// or rediss:// URL');
  });
});

async function evalCalls(): Promise<number> {
  const info = await inspect.info('commandstats');
  return Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const endMs = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > endMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleepMs(10);
  }
}
