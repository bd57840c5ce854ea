import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { ManualClock, type Clock } from '../../src/clock.ts';
import { TokenBucket, MaxWaitExceededError, isMaxWaitExceededError } from '../../src/limiter/token-bucket.ts';

function bucketAt(rate: number, burst: number, startMs = 0) {
  const clock = new ManualClock(startMs);
  return { clock, bucket: new TokenBucket({ rate, burst, clock }) };
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

describe('new TokenBucket()', () => {
  it.each([
    [{ rate: -1, burst: 1 }, /rate/],
    [{ rate: Number.NaN, burst: 1 }, /rate/],
    [{ rate: 1, burst: -1 }, /burst/],
    [{ rate: 1, burst: Infinity }, /burst/],
    [{ rate: '3' as unknown as number, burst: 1 }, /rate/],
    [{ rate: 1, burst: 2, tokens: 3 }, /Expected tokens to be a finite number in \[0, 2\], got 3/],
    [{ rate: 1, burst: 1, clock: {} as Clock }, /Expected clock to be a Clock, got {}/],
  ])('throws a TypeError for %o', (options, message) => {
    expect(() => new TokenBucket(options)).toThrow(TypeError);
    expect(() => new TokenBucket(options)).toThrow(message);
  });

  it('starts full', () => {
    const { bucket } = bucketAt(1, 3);
    expect(bucket.tokens()).toBe(3);
  });
});

describe('.tryAcquire()', () => {
  // Each row: clock instant, n, expected result, expected tokens after. rate 10/s, burst 3.
  it.each([
    {
      steps: [
        [0, 1, true, 2],
        [0, 1, true, 1],
        [0, 1, true, 0],
        [0, 1, false, 0],
      ],
      name: 'drains the burst at one instant',
    },
    {
      steps: [
        [0, 3, true, 0],
        [100, 1, true, 0],
        [150, 1, false, 0.5],
        [200, 1, true, 0],
      ],
      name: 'refills at the rate',
    },
    {
      steps: [
        [0, 3, true, 0],
        [10_000, 3, true, 0],
      ],
      name: 'caps the refill at burst',
    },
    { steps: [[0, 4, false, 3]], name: 'refuses n > burst' },
    {
      steps: [
        [0, 0, true, 3],
        [0, 3, true, 0],
        [0, 0, true, 0],
      ],
      name: 'allows n = 0 while not in debt',
    },
    {
      steps: [
        [0, 2.5, true, 0.5],
        [20, 0.7, true, 0],
      ],
      name: 'takes fractional tokens',
    },
  ])('$name', ({ steps }) => {
    const { clock, bucket } = bucketAt(10, 3);
    for (const [atMs, n, allowed, after] of steps as [number, number, boolean, number][]) {
      clock.set(atMs);
      expect(bucket.tryAcquire(n)).toBe(allowed);
      expect(bucket.tokens()).toBeCloseTo(after, 9);
    }
  });

  it('does not count a refill twice when a take happens while the clock reads earlier', () => {
    const { clock, bucket } = bucketAt(10, 2);
    clock.set(1000);
    expect(bucket.tryAcquire(1)).toBe(true);
    clock.set(500);
    expect(bucket.tryAcquire(1)).toBe(true);
    clock.set(1000);
    expect(bucket.tokens()).toBe(0);
    expect(bucket.tryAcquire(1)).toBe(false);
    clock.set(1100);
    expect(bucket.tokens()).toBeCloseTo(1, 9);
  });

  it('refuses n = 0 while reservations keep the count negative', () => {
    const { bucket } = bucketAt(10, 1);
    bucket.reserve(2 - 1);
    bucket.reserve(1);
    expect(bucket.tokens()).toBe(-1);
    expect(bucket.tryAcquire(0)).toBe(false);
  });

  it('throws a TypeError for a negative or non-finite n', () => {
    const { bucket } = bucketAt(10, 1);
    expect(() => bucket.tryAcquire(-1)).toThrow(TypeError);
    expect(() => bucket.tryAcquire(Number.NaN)).toThrow(TypeError);
    expect(() => bucket.tryAcquire(Infinity)).toThrow(/Expected n/);
  });

  it('survives time going backwards: no refill until the clock passes the last update', () => {
    const { clock, bucket } = bucketAt(10, 2, 1000);
    expect(bucket.tryAcquire(2)).toBe(true);
    clock.set(500);
    expect(bucket.tokens()).toBe(0);
    expect(bucket.tryAcquire(1)).toBe(false);
    clock.set(1000);
    expect(bucket.tokens()).toBe(0);
    clock.set(1100);
    expect(bucket.tokens()).toBeCloseTo(1, 9);
  });

  it('never lets a newcomer jump queued waiters', async () => {
    const { clock, bucket } = bucketAt(1, 3);
    bucket.tryAcquire(3);
    await clock.advance(1000);
    const waiter = track(clock, bucket.acquire(3));
    expect(bucket.tryAcquire(1)).toBe(false);
    await clock.advance(2000);
    expect(waiter.atMs).toBe(3000);
    expect(bucket.tryAcquire(1)).toBe(false);
  });
});

describe('.reserve()', () => {
  it('goes into debt with a fixed time to act, as ReserveN does', () => {
    const { clock, bucket } = bucketAt(10, 2);
    const delays = [2, 1, 1, 1].map((n) => bucket.reserve(n).delayMs);
    expect(delays).toEqual([0, 100, 200, 300]);
    expect(bucket.tokens()).toBe(-3);
    clock.set(150);
    expect(bucket.tokens()).toBeCloseTo(-1.5, 9);
    expect(bucket.reserve(1).timeToActMs).toBeCloseTo(400, 9);
  });

  it('is not ok, and changes nothing, when n > burst, beyond maxDelayMs, or at rate 0', () => {
    const { bucket } = bucketAt(10, 2);
    const tooMany = bucket.reserve(3);
    expect(tooMany.ok).toBe(false);
    expect(tooMany.delayMs).toBe(Infinity);
    bucket.reserve(2);
    expect(bucket.reserve(1, { maxDelayMs: 99 }).ok).toBe(false);
    expect(bucket.tokens()).toBe(0);
    expect(bucket.reserve(1, { maxDelayMs: 100 }).ok).toBe(true);

    const { bucket: frozen } = bucketAt(0, 1);
    expect(frozen.reserve(1).ok).toBe(true);
    expect(frozen.reserve(1).ok).toBe(false);
  });

  it('is always ok at once at rate Infinity, for any n', () => {
    const { bucket } = bucketAt(Infinity, 1);
    const reservation = bucket.reserve(1e9);
    expect(reservation.ok).toBe(true);
    expect(reservation.delayMs).toBe(0);
    reservation.cancel();
  });

  // rate 10/s, burst 1, all at t=0 unless said: r1 acts at 100, r2 at 200.
  it.each([
    { name: 'the last reservation refunds everything', cancel: 'r2', atMs: 0, tokensAfter: -1, nextDelayMs: 200 },
    { name: 'an earlier one refunds nothing that later ones count on', cancel: 'r1', atMs: 0, tokensAfter: -2, nextDelayMs: 300 },
    { name: 'a reservation past its time to act refunds nothing', cancel: 'r2', atMs: 250, tokensAfter: 0.5, nextDelayMs: 50 },
  ])('.cancel() - $name', ({ cancel, atMs, tokensAfter, nextDelayMs }) => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.reserve(1);
    const reservations = { r1: bucket.reserve(1), r2: bucket.reserve(1) };
    clock.set(atMs);
    reservations[cancel as 'r1' | 'r2'].cancel();
    expect(bucket.tokens()).toBeCloseTo(tokensAfter, 9);
    expect(bucket.reserve(1).delayMs).toBeCloseTo(nextDelayMs, 9);
  });

  it('.cancel() - refunds partly when fewer tokens were reserved after it than it holds', () => {
    const { bucket } = bucketAt(10, 3);
    bucket.reserve(3);
    const big = bucket.reserve(3); // acts at 300
    bucket.reserve(1); // acts at 400
    big.cancel(); // 3 − 1 come back
    expect(bucket.tokens()).toBeCloseTo(-2, 9);
  });

  it('.cancel() - never gives back more than it reserved, even after a refund let a later take act first', () => {
    const { bucket } = bucketAt(1, 5);
    bucket.reserve(5);
    const later = bucket.reserve(2); // acts at 2000 ms
    bucket.adjust(4);
    expect(bucket.reserve(1).delayMs).toBe(0); // acts now, before `later`
    const before = bucket.tokens();
    later.cancel();
    expect(bucket.tokens() - before).toBeLessThanOrEqual(2);
  });

  it('.cancel() - refunds nothing an at-once acquire() has used since, even on a clock set back before it', async () => {
    const { clock, bucket } = bucketAt(1, 1);
    bucket.tryAcquire(1);
    const reservation = bucket.reserve(1); // acts at 1000 ms
    clock.set(3000);
    await bucket.acquire(1); // at once: the refill has paid the reservation and one more
    clock.set(500);
    reservation.cancel();
    clock.set(3000);
    // A refund here would grant a second token at 3000 ms with a burst of 1.
    expect(bucket.tokens()).toBe(0);
    expect(bucket.tryAcquire(1)).toBe(false);
  });

  it('.cancel() - is idempotent', () => {
    const { bucket } = bucketAt(10, 1);
    bucket.reserve(1);
    const reservation = bucket.reserve(1);
    reservation.cancel();
    reservation.cancel();
    expect(bucket.tokens()).toBe(0);
  });

  it('lines up behind queued waiters, and cancelling lets those behind it move up', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const first = track(clock, bucket.acquire(1));
    const reservation = bucket.reserve(1);
    expect(reservation.timeToActMs).toBeCloseTo(200, 9);
    const second = track(clock, bucket.acquire(1));
    reservation.cancel();
    await clock.advance(1000);
    expect(first.atMs).toBeCloseTo(100, 9);
    expect(second.atMs).toBeCloseTo(200, 9);
  });
});

describe('.acquire()', () => {
  it('resolves at once while tokens last, then at the refill instants', async () => {
    const { clock, bucket } = bucketAt(2, 1);
    const grants = [0, 1, 2, 3].map(() => track(clock, bucket.acquire()));
    await clock.advance(0);
    expect(grants[0]!.atMs).toBe(0);
    expect(grants[1]!.atMs).toBeUndefined();
    await clock.advance(2000);
    expect(grants.map((g) => g.atMs)).toEqual([0, 500, 1000, 1500]);
  });

  it('serves 20 waiters of mixed sizes strictly first-in-first-out', async () => {
    const { clock, bucket } = bucketAt(10, 5);
    bucket.tryAcquire(5);
    const sizes = Array.from({ length: 20 }, (_, i) => 1 + ((i * 7) % 5));
    const order: number[] = [];
    const done = sizes.map((n, i) => bucket.acquire(n).then(() => order.push(i)));
    await clock.advance(60_000);
    await Promise.all(done);
    expect(order).toEqual(sizes.map((_, i) => i));
  });

  it('never grants a waiter before its tokens have refilled, and a small one waits behind a big one', async () => {
    const { clock, bucket } = bucketAt(10, 5);
    bucket.tryAcquire(4); // 1 token left
    const big = track(clock, bucket.acquire(5)); // needs 4 more: 400 ms
    const small = track(clock, bucket.acquire(1)); // then 1 more: 500 ms
    await clock.advance(399.999);
    expect(big.atMs).toBeUndefined();
    expect(small.atMs).toBeUndefined();
    await clock.advance(1);
    expect(big.atMs).toBeCloseTo(400, 9);
    await clock.advance(200);
    expect(small.atMs).toBeCloseTo(500, 9);
  });

  it('rejects n > burst at once with a RangeError', async () => {
    const { bucket } = bucketAt(10, 2);
    await expect(bucket.acquire(3)).rejects.toThrow(RangeError);
    expect(bucket.tokens()).toBe(2);
  });

  it('fails fast, consuming nothing, when the wait would exceed maxWaitMs', async () => {
    const { bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const error = await bucket.acquire(1, { maxWaitMs: 99 }).catch((e: unknown) => e);
    expect(isMaxWaitExceededError(error)).toBe(true);
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    expect((error as MaxWaitExceededError).waitMs).toBeCloseTo(100, 9);
    expect(bucket.tokens()).toBe(0);
    expect(bucket.waiting).toBe(0);
  });

  it('counts the queue ahead when checking maxWaitMs', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const ahead = track(clock, bucket.acquire(1));
    await expect(bucket.acquire(1, { maxWaitMs: 150 })).rejects.toThrow(MaxWaitExceededError);
    const fits = track(clock, bucket.acquire(1, { maxWaitMs: 200 }));
    await clock.advance(200);
    expect([ahead.atMs, fits.atMs]).toEqual([100, 200]);
  });

  it('rejects with signal.reason when already aborted, taking nothing', async () => {
    const { bucket } = bucketAt(10, 1);
    const reason = new Error('stop');
    await expect(bucket.acquire(1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(bucket.tokens()).toBe(1);
  });

  it('an aborted waiter gives its place back: those behind move up and the refund is exact', async () => {
    const { clock, bucket } = bucketAt(1, 1);
    bucket.tryAcquire(1);
    const controller = new AbortController();
    const first = track(clock, bucket.acquire(1));
    const second = track(clock, bucket.acquire(1, { signal: controller.signal }));
    const third = track(clock, bucket.acquire(1));
    expect(bucket.tokens()).toBe(-3);
    await clock.advance(500);
    controller.abort(new Error('user gave up'));
    await clock.advance(0);
    expect((second.error as Error).message).toBe('user gave up');
    expect(bucket.tokens()).toBeCloseTo(-1.5, 9);
    expect(bucket.waiting).toBe(2);
    await clock.advance(5000);
    expect([first.atMs, third.atMs]).toEqual([1000, 2000]);
    expect(bucket.tokens()).toBe(1);
  });

  it('aborting the head re-times the queue behind it', async () => {
    const { clock, bucket } = bucketAt(1, 2);
    bucket.tryAcquire(2);
    const controller = new AbortController();
    const head = track(clock, bucket.acquire(2, { signal: controller.signal }));
    const next = track(clock, bucket.acquire(1));
    await clock.advance(300);
    controller.abort();
    await clock.advance(5000);
    expect(head.error).toBeInstanceOf(DOMException);
    expect(next.atMs).toBeCloseTo(1000, 9);
  });

  it('accounts each grant at the instant it became due, so late timers lose no tokens', async () => {
    const inner = new ManualClock();
    const lateByMs = 7;
    const lateClock: Clock = {
      now: () => inner.now(),
      setTimer: (delayMs, callback) => inner.setTimer(delayMs + lateByMs, callback),
    };
    const bucket = new TokenBucket({ rate: 10, burst: 1, clock: lateClock });
    const grants = [0, 1, 2, 3].map(() => track(inner, bucket.acquire()));
    await inner.advance(1000);
    expect(grants.map((g) => g.atMs)).toEqual([0, 107, 207, 307]);
  });

  it('grants a waiter at its instant after large fractional waiters came and went', async () => {
    const { clock, bucket } = bucketAt(1, 4e7);
    bucket.tryAcquire(4e7);
    const controller = new AbortController();
    // Sizes whose sum, less each of them, leaves a float residue below zero.
    const gone = [2e7 + 0.1, 1e7 + 0.4].map((n) => bucket.acquire(n, { signal: controller.signal }));
    controller.abort();
    await Promise.allSettled(gone);
    bucket.adjust(4e7);
    bucket.tryAcquire(4e7);
    const waiter = track(clock, bucket.acquire(1));
    await clock.advance(1000);
    expect(waiter.atMs).toBe(1000);
  });

  it('rejects at once at rate 0 once the burst is spent', async () => {
    const { bucket } = bucketAt(0, 2);
    await bucket.acquire(2);
    await expect(bucket.acquire(1)).rejects.toThrow(MaxWaitExceededError);
  });

  it('resolves everything at rate Infinity, for any n', async () => {
    const { bucket } = bucketAt(Infinity, 0);
    await expect(bucket.acquire(1e6)).resolves.toBeUndefined();
  });

  it('keeps a single timer for the whole queue', async () => {
    const { clock, bucket } = bucketAt(1000, 1);
    const all = Array.from({ length: 1000 }, () => bucket.acquire());
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(1000);
    await Promise.all(all);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('.acquire() with ranks', () => {
  it('serves lower ranks first, arrival order within a rank, unranked waiters last', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const order: string[] = [];
    const waiters = [
      ['unranked', undefined],
      ['rank 5 a', 5],
      ['rank 2', 2],
      ['rank 5 b', 5],
      ['rank 0', 0],
    ] as const;
    const done = waiters.map(([name, rank]) => bucket.acquire(1, { rank }).then(() => order.push(name)));
    await clock.advance(1000);
    await Promise.all(done);
    expect(order).toEqual(['rank 0', 'rank 2', 'rank 5 a', 'rank 5 b', 'unranked']);
  });

  it('times a ranked waiter by its place, and those it goes ahead of wait the longer', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const late = track(clock, bucket.acquire(1, { rank: 9 }));
    const later = track(clock, bucket.acquire(1, { rank: 9 }));
    // Second in line, not third: 200 ms fits a 200 ms limit where the tail would need 300.
    const early = track(clock, bucket.acquire(1, { rank: 1, maxWaitMs: 200 }));
    await clock.advance(1000);
    expect([early.atMs, late.atMs, later.atMs].map((ms) => Math.round(ms!))).toEqual([100, 200, 300]);
  });

  it('never goes ahead of a reservation, whose time is fixed', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const waiter = track(clock, bucket.acquire(1, { rank: 5 }));
    const reservation = bucket.reserve(1);
    const urgent = track(clock, bucket.acquire(1, { rank: 0 }));
    await clock.advance(1000);
    expect(Math.round(reservation.timeToActMs)).toBe(200);
    expect(Math.round(urgent.atMs!)).toBe(300);
    expect(Math.round(waiter.atMs!)).toBe(100);
  });

  it('an aborted ranked waiter gives its place back exactly', async () => {
    const { clock, bucket } = bucketAt(10, 1);
    bucket.tryAcquire(1);
    const behind = track(clock, bucket.acquire(1, { rank: 3 }));
    const controller = new AbortController();
    const ahead = track(clock, bucket.acquire(1, { rank: 1, signal: controller.signal }));
    await clock.advance(50);
    controller.abort(new Error('gone'));
    await clock.advance(1000);
    expect((ahead.error as Error).message).toBe('gone');
    expect(Math.round(behind.atMs!)).toBe(100);
    expect(bucket.tokens()).toBeCloseTo(1, 9);
  });

  it('throws a TypeError for a rank that is not a number', () => {
    const { bucket } = bucketAt(10, 1);
    expect(() => bucket.acquire(1, { rank: Number.NaN })).toThrow(TypeError);
  });
});

describe('.msUntil()', () => {
  it('says when a newcomer could take n: now, after the queue, when full again, never', async () => {
    const { clock, bucket } = bucketAt(10, 4);
    expect(bucket.msUntil(4)).toBe(0);
    bucket.tryAcquire(3);
    expect(bucket.msUntil(1)).toBe(0);
    expect(bucket.msUntil(2)).toBeCloseTo(100, 9);
    void bucket.acquire(3);
    // Behind the waiter: 2 owed, then 2 more.
    expect(bucket.msUntil(2)).toBeCloseTo(400, 9);
    expect(bucket.msUntil(4)).toBeCloseTo(600, 9);
    await clock.advance(600);
    expect(bucket.msUntil(4)).toBeCloseTo(0, 9);
    const stopped = new TokenBucket({ rate: 0, burst: 1, clock });
    stopped.tryAcquire(1);
    expect(stopped.msUntil(1)).toBe(Infinity);
    expect(new TokenBucket({ rate: Infinity, burst: 1, clock }).msUntil(5)).toBe(0);
  });
});

describe('.setRate()', () => {
  it('keeps accrued tokens and re-times queued waiters from now', async () => {
    const { clock, bucket } = bucketAt(1, 1);
    bucket.tryAcquire(1);
    const waiter = track(clock, bucket.acquire(1));
    await clock.advance(500); // half a token at the old rate
    bucket.setRate(10); // the other half takes 50 ms
    await clock.advance(49);
    expect(waiter.atMs).toBeUndefined();
    await clock.advance(1);
    expect(waiter.atMs).toBeCloseTo(550, 9);
  });

  it('to Infinity releases every waiter; to 0 holds them until raised again', async () => {
    const { clock, bucket } = bucketAt(1, 1);
    bucket.tryAcquire(1);
    const held = track(clock, bucket.acquire(1));
    bucket.setRate(0);
    await clock.advance(10_000);
    expect(held.atMs).toBeUndefined();
    bucket.setRate(Infinity);
    await clock.advance(0);
    expect(held.atMs).toBe(10_000);
    bucket.setRate(2);
    expect(bucket.tokens()).toBe(1);
  });

  it('throws a TypeError for a negative rate', () => {
    const { bucket } = bucketAt(1, 1);
    expect(() => bucket.setRate(-2)).toThrow(TypeError);
  });
});

describe('.setBurst()', () => {
  it('caps the count from now on and rejects queued waiters that can no longer fit', async () => {
    const { clock, bucket } = bucketAt(1, 5);
    bucket.tryAcquire(5);
    const big = track(clock, bucket.acquire(4));
    const small = track(clock, bucket.acquire(1));
    bucket.setBurst(2);
    await clock.advance(0);
    expect(big.error).toBeInstanceOf(RangeError);
    await clock.advance(5000);
    expect(small.atMs).toBe(1000);
    expect(bucket.tokens()).toBe(2);
  });
});

describe('.adjust()', () => {
  it('gives tokens back, capped at burst, and takes an overrun into debt', () => {
    const { clock, bucket } = bucketAt(10, 100);
    bucket.tryAcquire(80);
    bucket.adjust(30);
    expect(bucket.tokens()).toBe(50);
    bucket.adjust(1000);
    expect(bucket.tokens()).toBe(100);
    bucket.adjust(-130);
    expect(bucket.tokens()).toBe(-30);
    clock.set(3000);
    expect(bucket.tokens()).toBeCloseTo(0, 9);
  });

  it('moves queued waiters up on a refund and back on a debit', async () => {
    const { clock, bucket } = bucketAt(1, 2);
    bucket.tryAcquire(2);
    const waiter = track(clock, bucket.acquire(2));
    bucket.adjust(1);
    await clock.advance(999);
    expect(waiter.atMs).toBeUndefined();
    await clock.advance(1);
    expect(waiter.atMs).toBe(1000);
    bucket.adjust(-1);
    expect(bucket.tokens()).toBe(-1);
  });

  it('throws a TypeError for a non-finite amount', () => {
    const { bucket } = bucketAt(1, 1);
    expect(() => bucket.adjust(Number.NaN)).toThrow(TypeError);
  });
});

describe('TokenBucket - properties', () => {
  type Op =
    | { kind: 'acquire'; n: number; abortAfterMs: number | null; rank: number | null }
    | { kind: 'try'; n: number }
    | { kind: 'reserve'; n: number }
    | { kind: 'cancel'; pick: number }
    | { kind: 'advance'; ms: number };

  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant('acquire' as const),
      n: fc.integer({ min: 0, max: 4 }),
      abortAfterMs: fc.option(fc.integer({ min: 0, max: 2000 })),
      rank: fc.constant(null),
    }),
    fc.record({ kind: fc.constant('try' as const), n: fc.integer({ min: 0, max: 4 }) }),
    fc.record({ kind: fc.constant('reserve' as const), n: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.double({ min: 0, max: 1500, noNaN: true }) }),
  );

  it('grants no more than burst + rate·t in any window of length t, and waiters in FIFO order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { minLength: 1, maxLength: 40 }),
        async (rate, burst, ops) => {
          const clock = new ManualClock();
          const bucket = new TokenBucket({ rate, burst, clock });
          const grants: { atMs: number; n: number }[] = [];
          const reservations: { grant: { atMs: number; n: number }; cancel: () => void }[] = [];
          const order: number[] = [];
          const pending: Promise<unknown>[] = [];
          let nextWaiter = 0;
          for (const step of ops) {
            if (step.kind === 'advance') {
              await clock.advance(step.ms);
            } else if (step.kind === 'try') {
              if (bucket.tryAcquire(step.n)) grants.push({ atMs: clock.now(), n: step.n });
            } else if (step.kind === 'reserve') {
              const reservation = bucket.reserve(step.n);
              if (reservation.ok) {
                const grant = { atMs: reservation.timeToActMs, n: step.n };
                grants.push(grant);
                reservations.push({ grant, cancel: () => reservation.cancel() });
              }
            } else if (step.kind === 'cancel') {
              const picked = reservations.splice(step.pick % Math.max(1, reservations.length), 1)[0];
              if (picked !== undefined && picked.grant.atMs >= clock.now()) {
                picked.cancel();
                grants.splice(grants.indexOf(picked.grant), 1);
              }
            } else if (step.n <= burst) {
              const id = nextWaiter++;
              const controller = new AbortController();
              if (step.abortAfterMs !== null) clock.setTimer(step.abortAfterMs, () => controller.abort());
              pending.push(
                bucket.acquire(step.n, { signal: controller.signal, rank: step.rank ?? undefined }).then(
                  () => {
                    grants.push({ atMs: clock.now(), n: step.n });
                    order.push(id);
                  },
                  () => {},
                ),
              );
            }
          }
          await clock.advance(1e6);
          await Promise.all(pending);
          expect(order).toEqual([...order].sort((a, b) => a - b));
          grants.sort((a, b) => a.atMs - b.atMs);
          for (let i = 0; i < grants.length; i++) {
            let granted = 0;
            for (let j = i; j < grants.length; j++) {
              granted += grants[j]!.n;
              const windowMs = grants[j]!.atMs - grants[i]!.atMs;
              expect(granted).toBeLessThanOrEqual(burst + (rate * windowMs) / 1000 + 1e-6);
            }
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('holds the envelope with ranked waiters too, and serves ranks in order among waiters queued together', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.record({ n: fc.integer({ min: 1, max: 4 }), rank: fc.option(fc.integer({ min: 0, max: 5 })) }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.array(fc.double({ min: 0, max: 500, noNaN: true }), { maxLength: 10 }),
        async (rate, burst, waiters, advances) => {
          const clock = new ManualClock();
          const bucket = new TokenBucket({ rate, burst, clock });
          bucket.tryAcquire(burst);
          const grants: { atMs: number; n: number; rank: number; id: number }[] = [];
          const pending = waiters
            .filter((w) => w.n <= burst)
            .map((w, id) => {
              const rank = w.rank ?? Infinity;
              return bucket.acquire(w.n, { rank: w.rank ?? undefined }).then(() => grants.push({ atMs: clock.now(), n: w.n, rank, id }));
            });
          for (const ms of advances) await clock.advance(ms);
          await clock.advance(1e6);
          await Promise.all(pending);
          // All queued at once (the bucket was empty): served by rank, then arrival.
          const expected = [...grants].sort((a, b) => a.rank - b.rank || a.id - b.id).map((g) => g.id);
          expect(grants.map((g) => g.id)).toEqual(expected);
          for (let i = 0; i < grants.length; i++) {
            let granted = 0;
            for (let j = i; j < grants.length; j++) {
              granted += grants[j]!.n;
              expect(granted).toBeLessThanOrEqual(burst + (rate * (grants[j]!.atMs - grants[i]!.atMs)) / 1000 + 1e-6);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
