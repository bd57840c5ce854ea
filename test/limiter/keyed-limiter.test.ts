import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Clock, ManualClock } from '../../src/clock.ts';
import { KEYED_LIMITER_DEFAULTS, KeyedLimiter, type KeyedLimiterOptions } from '../../src/limiter/keyed-limiter.ts';
import { MaxWaitExceededError, TokenBucket } from '../../src/limiter/token-bucket.ts';

function limiterAt(rate: number, burst: number, options: Partial<KeyedLimiterOptions> = {}) {
  const clock = new ManualClock();
  return { clock, limiter: new KeyedLimiter({ rate, burst, clock, ...options }) };
}

/** Records the clock instant at which each promise settles. */
function track(clock: Clock, promise: Promise<unknown>) {
  const record: { atMs?: number; error?: unknown } = {};
  promise.then(
    () => (record.atMs = clock.now()),
    (error: unknown) => (record.error = error),
  );
  return record;
}

describe('new KeyedLimiter()', () => {
  it.each([
    [null, 'Expected options to be an object, got null'],
    [{ rate: -1, burst: 1 }, 'Expected rate to be a number >= 0 (tokens per second), got -1'],
    [{ rate: Number.NaN, burst: 1 }, 'Expected rate to be a number >= 0 (tokens per second), got NaN'],
    [{ rate: 1, burst: Infinity }, 'Expected burst to be a finite number >= 0, got Infinity'],
    [{ rate: 1, burst: '3' }, 'Expected burst to be a finite number >= 0, got "3"'],
    [{ rate: 1, burst: 1, maxKeys: 0 }, 'Expected maxKeys to be an integer >= 1, got 0'],
    [{ rate: 1, burst: 1, maxKeys: 2.5 }, 'Expected maxKeys to be an integer >= 1, got 2.5'],
    [{ rate: 1, burst: 1, clock: Date }, 'Expected clock to be a Clock, got function'],
  ])('throws a TypeError for %o', (options, message) => {
    expect(() => new KeyedLimiter(options as unknown as KeyedLimiterOptions)).toThrow(new TypeError(message));
  });

  it('holds no key until one is used, and a million at most by default', () => {
    expect(new KeyedLimiter({ rate: 1, burst: 1 }).size).toBe(0);
    expect(KEYED_LIMITER_DEFAULTS.maxKeys).toBe(1_000_000);
    expect(Object.isFrozen(KEYED_LIMITER_DEFAULTS)).toBe(true);
  });
});

describe('.take()', () => {
  // Each row: clock instant, key, n, then what take() says. rate 10/s, burst 3.
  type Row = [atMs: number, key: string, n: number, allowed: boolean, remaining: number, resetMs: number, retryAfterMs: number];
  it.each<{ name: string; rows: Row[] }>([
    {
      name: 'drains the burst at one instant, then says when one more will be there',
      rows: [
        [0, 'a', 1, true, 2, 100, 0],
        [0, 'a', 1, true, 1, 200, 0],
        [0, 'a', 1, true, 0, 300, 0],
        [0, 'a', 1, false, 0, 300, 100],
        [0, 'a', 2, false, 0, 300, 200],
      ],
    },
    {
      name: 'refills at the rate, each key on its own',
      rows: [
        [0, 'a', 3, true, 0, 300, 0],
        [0, 'b', 1, true, 2, 100, 0],
        [150, 'a', 1, true, 0, 250, 0],
        [150, 'a', 1, false, 0, 250, 50],
        [150, 'b', 1, true, 2, 100, 0],
        [200, 'a', 1, true, 0, 300, 0],
      ],
    },
    {
      name: 'caps the refill at the burst',
      rows: [
        [0, 'a', 3, true, 0, 300, 0],
        [10_000, 'a', 3, true, 0, 300, 0],
      ],
    },
    {
      name: 'refuses more than the burst for good, taking nothing',
      rows: [
        [0, 'a', 4, false, 3, 0, Infinity],
        [0, 'a', 1, true, 2, 100, 0],
        [0, 'a', 4, false, 2, 100, Infinity],
      ],
    },
    {
      name: 'allows n = 0 always, and fractional tokens',
      rows: [
        [0, 'a', 0, true, 3, 0, 0],
        [0, 'a', 2.5, true, 0, 250, 0],
        [0, 'a', 0, true, 0, 250, 0],
        [0, 'a', 1, false, 0, 250, 50],
        [20, 'a', 0.7, true, 0, 300, 0],
      ],
    },
  ])('$name', ({ rows }) => {
    const { clock, limiter } = limiterAt(10, 3);
    for (const [atMs, key, n, allowed, remaining, resetMs, retryAfterMs] of rows) {
      clock.set(atMs);
      const decision = limiter.take(key, n);
      expect(decision.allowed).toBe(allowed);
      expect(decision.limit).toBe(3);
      expect(decision.remaining).toBe(remaining);
      expect(decision.resetMs).toBeCloseTo(resetMs, 9);
      if (Number.isFinite(retryAfterMs)) expect(decision.retryAfterMs).toBeCloseTo(retryAfterMs, 9);
      else expect(decision.retryAfterMs).toBe(Infinity);
    }
  });

  it('says whole tokens left even when float refills land a hair short', () => {
    const { clock, limiter } = limiterAt(3, 1);
    limiter.take('a');
    clock.set(1000 / 3);
    expect(limiter.take('a', 0).remaining).toBe(1);
  });

  it('at rate 0 allows the burst once, then never: the reset and the retry are Infinity', () => {
    const { clock, limiter } = limiterAt(0, 2);
    expect(limiter.take('a', 2).allowed).toBe(true);
    clock.set(1e9);
    expect(limiter.take('a')).toEqual({ allowed: false, limit: 2, remaining: 0, resetMs: Infinity, retryAfterMs: Infinity });
  });

  it('at rate Infinity allows everything and holds no key', () => {
    const { limiter } = limiterAt(Infinity, 5);
    expect(limiter.take('a', 1e9)).toEqual({ allowed: true, limit: 5, remaining: 5, resetMs: 0, retryAfterMs: 0 });
    expect(limiter.size).toBe(0);
  });

  it('does not count a refill twice when a take happens while the clock reads earlier, as TokenBucket', () => {
    const { clock, limiter } = limiterAt(10, 2);
    clock.set(1000);
    expect(limiter.take('a').allowed).toBe(true);
    clock.set(500);
    expect(limiter.take('a').allowed).toBe(true);
    clock.set(1000);
    expect(limiter.take('a', 1).allowed).toBe(false);
    clock.set(1100);
    expect(limiter.take('a', 1).allowed).toBe(true);
  });

  it.each([
    [-1, 'Expected n to be a finite number >= 0, got -1'],
    [Number.NaN, 'Expected n to be a finite number >= 0, got NaN'],
    [Infinity, 'Expected n to be a finite number >= 0, got Infinity'],
    ['1', 'Expected n to be a finite number >= 0, got "1"'],
  ])('throws a TypeError for n = %o, taking nothing', (n, message) => {
    const { limiter } = limiterAt(10, 3);
    limiter.take('a', 1);
    expect(() => limiter.take('a', n as number)).toThrow(new TypeError(message));
    expect(() => limiter.take('b', n as number)).toThrow(TypeError);
    expect(limiter.take('a', 0).remaining).toBe(2);
    expect(limiter.size).toBe(1);
  });

  it('.tryAcquire() is take().allowed', () => {
    const { limiter } = limiterAt(10, 1);
    expect(limiter.tryAcquire('a')).toBe(true);
    expect(limiter.tryAcquire('a')).toBe(false);
    expect(limiter.tryAcquire('b', 1)).toBe(true);
  });
});

describe('KeyedLimiter - memory', () => {
  it('holds a key only while its bucket is not full: a take of 0 or of nothing new holds none', () => {
    const { limiter } = limiterAt(10, 3);
    limiter.take('a', 0);
    limiter.take('b', 4);
    expect(limiter.size).toBe(0);
    limiter.take('c', 1);
    expect(limiter.size).toBe(1);
  });

  it('drops buckets that have refilled as new keys come, without a timer', async () => {
    const { clock, limiter } = limiterAt(10, 1);
    for (let i = 0; i < 1000; i++) limiter.take(`old-${i}`);
    expect(limiter.size).toBe(1000);
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(0);
    for (let i = 0; i < 1000; i++) limiter.take(`new-${i}`);
    // The hand passed every old key (two slots per new key): all were full again and went.
    expect(limiter.size).toBe(1000);
  });

  it('keeps a bucket a hair short of full: only a full one is the same as a new one', () => {
    const { clock, limiter } = limiterAt(10, 1);
    limiter.take('a');
    clock.set(100 - 1e-7);
    limiter.take('b'); // a new key: the hand passes 'a', which is 1e-9 tokens short
    expect(limiter.take('a').allowed).toBe(false);
    clock.set(100);
    limiter.take('c'); // now 'a' is full, and goes
    expect(limiter.size).toBe(2);
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('keeps no more than about twice the keys not yet full, under a steady stream of new clients', () => {
    const { clock, limiter } = limiterAt(1, 1);
    // 1,000 new clients a second, each full again a second after its one request: ~1,000 live.
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      clock.set(i);
      limiter.take(`client-${i}`);
      most = Math.max(most, limiter.size);
    }
    expect(most).toBeGreaterThanOrEqual(1000);
    expect(most).toBeLessThanOrEqual(2 * 1000 + 2);
  });

  it('stays at maxKeys under a flood of a million distinct keys', () => {
    const { clock, limiter } = limiterAt(1, 10, { maxKeys: 100_000 });
    let most = 0;
    for (let i = 0; i < 1_000_000; i++) {
      if (i % 1000 === 0) clock.set(i / 1000);
      limiter.take(`flood-${i}`);
      if (i % 1000 === 999) most = Math.max(most, limiter.size);
    }
    expect(most).toBe(100_000);
    expect(limiter.size).toBe(100_000);
  });

  it('evicts keys not used since the hand last passed before those used again: a busy client keeps its state', () => {
    const { limiter } = limiterAt(0, 3, { maxKeys: 100 });
    expect(limiter.take('busy', 3).allowed).toBe(true);
    for (let i = 0; i < 10_000; i++) {
      limiter.take(`once-${i}`);
      // Remembered as empty: had it been evicted, it would start full and be allowed.
      if (i % 10 === 0) expect(limiter.take('busy').allowed, `after ${i} one-time clients`).toBe(false);
    }
  });

  it('an evicted client starts full again, as a client never seen', () => {
    const { limiter } = limiterAt(0, 1, { maxKeys: 1 });
    limiter.take('a');
    expect(limiter.take('a').allowed).toBe(false);
    limiter.take('b');
    expect(limiter.size).toBe(1);
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('holds at most 200 bytes per live key beyond the key strings', () => {
    // Measured in a child with --expose-gc: the heap and the typed arrays' buffers, after full collections.
    const script = `
      import { KeyedLimiter } from ${JSON.stringify(fileURLToPath(new URL('../../src/limiter/keyed-limiter.ts', import.meta.url)))};
      const used = () => { gc(); gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const keys = Array.from({ length: 200_000 }, (_, i) => 'client-' + i);
      const before = used();
      const limiter = new KeyedLimiter({ rate: 1e-9, burst: 10 });
      for (const key of keys) limiter.take(key);
      const after = used();
      console.log(JSON.stringify({ size: limiter.size, bytes: after - before, keys: keys.length }));
    `;
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    const { size, bytes } = JSON.parse(child.stdout) as { size: number; bytes: number };
    expect(size).toBe(200_000);
    expect(bytes / size).toBeLessThanOrEqual(200);
    expect(bytes / size).toBeGreaterThan(0);
  }, 60_000);
});

describe('KeyedLimiter - properties', () => {
  type Op = { kind: 'take'; key: number; n: number } | { kind: 'advance'; ms: number };
  // Few keys, so each sees many takes; refills as random doubles, so the float arithmetic is inexact.
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('take' as const), key: fc.nat(8), n: fc.constantFrom(0, 0.5, 1, 1, 2, 3, 5) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        ms: fc.oneof({ weight: 5, arbitrary: fc.double({ min: 0, max: 3000, noNaN: true }) }, fc.constantFrom(0, 1e6)),
      }),
    },
  );

  it('answers exactly as one never-dropped TokenBucket per key, under any schedule of takes and clock moves', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0, 0.3, 1 / 3, 7, 1000, Infinity),
        fc.constantFrom(0, 1, 2.5, 4),
        fc.array(op, { maxLength: 300, size: 'max' }),
        (rate, burst, ops) => {
          const clock = new ManualClock(1000);
          const limiter = new KeyedLimiter({ rate, burst, clock });
          const reference = new Map<number, TokenBucket>();
          for (const step of ops) {
            if (step.kind === 'advance') {
              clock.set(clock.now() + step.ms);
              continue;
            }
            let bucket = reference.get(step.key);
            if (bucket === undefined) {
              bucket = new TokenBucket({ rate, burst, clock });
              reference.set(step.key, bucket);
            }
            const decision = limiter.take(`key-${step.key}`, step.n);
            const allowed = bucket.tryAcquire(step.n);
            expect(decision.allowed).toBe(allowed);
            const tokens = bucket.tokens();
            expect(decision.remaining).toBe(Math.floor(tokens + 1e-9));
            if (rate !== Infinity) {
              expect(decision.resetMs).toBe(bucket.msUntil(burst));
              expect(decision.retryAfterMs).toBe(allowed ? 0 : step.n > burst ? Infinity : bucket.msUntil(step.n));
            }
          }
          // Full buckets went; what is held is not full.
          const notFull = [...reference.values()].filter((bucket) => bucket.tokens() < burst).length;
          expect(limiter.size).toBeGreaterThanOrEqual(notFull);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('.acquire()', () => {
  it('resolves at once while tokens last, then at the refill instants, each key on its own', async () => {
    const { clock, limiter } = limiterAt(2, 1);
    const a = [0, 1, 2].map(() => track(clock, limiter.acquire('a')));
    const b = track(clock, limiter.acquire('b'));
    await clock.advance(0);
    expect(a.map((grant) => grant.atMs)).toEqual([0, undefined, undefined]);
    expect(b.atMs).toBe(0);
    await clock.advance(2000);
    expect(a.map((grant) => grant.atMs)).toEqual([0, 500, 1000]);
  });

  it('serves waiters first-in-first-out, and take() lines up behind them', async () => {
    const { clock, limiter } = limiterAt(10, 3);
    limiter.take('a', 3);
    const big = track(clock, limiter.acquire('a', 3));
    const small = track(clock, limiter.acquire('a', 1));
    await clock.advance(200);
    const refused = limiter.take('a', 1);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeCloseTo(300, 9);
    expect(refused.resetMs).toBeCloseTo(500, 9);
    await clock.advance(1000);
    expect(big.atMs).toBeCloseTo(300, 9);
    expect(small.atMs).toBeCloseTo(400, 9);
  });

  it('gives the key back to the shared arrays once its queue is empty, and drops it when full', async () => {
    const { clock, limiter } = limiterAt(10, 2);
    limiter.take('a', 2);
    const waiter = limiter.acquire('a', 1);
    expect(limiter.size).toBe(1);
    await clock.advance(100);
    await waiter;
    expect(limiter.size).toBe(1);
    expect(limiter.take('a', 0).remaining).toBe(0);
    await clock.advance(50);
    expect(limiter.take('a', 0.5).allowed).toBe(true);
    expect(limiter.take('a', 0.1).allowed).toBe(false);
  });

  it('an aborted waiter rejects with the reason and gives its tokens back exactly', async () => {
    const { clock, limiter } = limiterAt(10, 1);
    limiter.take('a');
    const controller = new AbortController();
    const aborted = track(clock, limiter.acquire('a', 1, { signal: controller.signal }));
    await clock.advance(50);
    controller.abort(new Error('gone'));
    await clock.advance(0);
    expect((aborted.error as Error).message).toBe('gone');
    expect(limiter.take('a', 0).remaining).toBe(0);
    await clock.advance(50);
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('rejects with signal.reason when already aborted, taking nothing', async () => {
    const { limiter } = limiterAt(10, 1);
    await expect(limiter.acquire('a', 1, { signal: AbortSignal.abort(new Error('before')) })).rejects.toThrow('before');
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('fails fast, taking nothing, when the wait would exceed maxWaitMs', async () => {
    const { limiter } = limiterAt(10, 1);
    limiter.take('a');
    await expect(limiter.acquire('a', 1, { maxWaitMs: 99 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    expect(limiter.take('a', 0).retryAfterMs).toBe(0);
    expect(limiter.take('a', 1).retryAfterMs).toBeCloseTo(100, 9);
  });

  it('rejects n > burst at once with a RangeError, holding nothing', async () => {
    const { limiter } = limiterAt(10, 2);
    await expect(limiter.acquire('a', 3)).rejects.toThrow(new RangeError('Cannot acquire 3 tokens: more than the burst of 2'));
    expect(limiter.size).toBe(0);
  });

  it.each([
    [['', 1, {}], 'Expected key to be a non-empty string, got ""'],
    [['a', -1, {}], 'Expected n to be a finite number >= 0, got -1'],
    [['a', 1, null], 'Expected options to be an object, got null'],
    [['a', 1, { maxWaitMs: -5 }], 'Expected maxWaitMs to be a number >= 0, got -5'],
  ])('rejects %o with a TypeError, taking nothing', async (args, message) => {
    const { limiter } = limiterAt(10, 1);
    const [key, n, options] = args as [string, number, object];
    await expect(limiter.acquire(key, n, options)).rejects.toThrow(new TypeError(message));
    expect(limiter.take('a').allowed).toBe(true);
  });
});
