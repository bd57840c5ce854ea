import { describe, it, expect } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MaxWaitExceededError } from '../../src/limiter/token-bucket.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { type LimitTooSmallError, isLimitTooSmallError } from '../../src/quota/provider-limits.ts';

const cost = (inputTokens: number, outputTokens: number) => ({ requests: 1, inputTokens, outputTokens });

function limitsAt(clock: ManualClock) {
  // 10 requests/s (burst 2) and 600 tokens/min = 10 tokens/s (burst 600).
  return new LocalLimits({
    limits: [
      { kind: 'requests', rate: 10, burst: 2 },
      { kind: 'tokens', rate: 10, burst: 600 },
    ],
    clock,
  });
}

/** 1 request/s (burst 1) and 10 tokens/s (burst 100): the request limit spaces calls the token limit lets through. */
function oneRequestASecondAt(clock: ManualClock) {
  return new LocalLimits({
    limits: [
      { kind: 'requests', rate: 1, burst: 1 },
      { kind: 'tokens', rate: 10, burst: 100 },
    ],
    clock,
  });
}

describe('ProviderLimits', () => {
  it('.acquire() - acts when the last of the limits allows', async () => {
    const clock = new ManualClock();
    const limits = limitsAt(clock);
    await limits.acquire(cost(500, 50));
    let grantedAtMs: number | undefined;
    // 100 more tokens than remain: the token limit (10/s) decides, 10 s; the request limit alone would say 0.
    const second = limits.acquire(cost(100, 50)).then(() => (grantedAtMs = clock.now()));
    await clock.advance(9999);
    expect(grantedAtMs).toBeUndefined();
    await clock.advance(1);
    await second;
    expect(grantedAtMs).toBe(10_000);
  });

  it('.acquire() - takes the request token when the call really goes, so requests keep their spacing', async () => {
    const clock = new ManualClock();
    const limits = oneRequestASecondAt(clock);
    const sent: number[] = [];
    const first = await limits.acquire(cost(100, 0));
    sent.push(clock.now());
    const second = limits.acquire(cost(100, 0)).then(() => sent.push(clock.now()));
    const third = limits.acquire(cost(1, 0)).then(() => sent.push(clock.now()));
    first.settle({ inputTokens: 0, outputTokens: 0 });
    await clock.advance(20_000);
    await Promise.all([second, third]);
    expect(sent[0]).toBe(0);
    expect(sent[1]).toBeCloseTo(10_000, 6);
    // Both waited on the token limit until ~10 s; the request limit (1/s, burst 1) still spaces them.
    expect(sent[2]! - sent[1]!).toBeGreaterThanOrEqual(1000 - 1e-6);
  });

  it('.acquire() - a call larger than a limit fails at once with a clear error and takes nothing', async () => {
    const clock = new ManualClock();
    const limits = limitsAt(clock);
    const error = await limits.acquire(cost(700, 0)).catch((e: unknown) => e);
    expect(isLimitTooSmallError(error)).toBe(true);
    expect((error as LimitTooSmallError).message).toBe('the call needs 700 tokens but the tokens limit allows at most 600 at once');
    expect(limits.bucket('tokens')!.tokens()).toBe(600);
    expect(limits.bucket('requests')!.tokens()).toBe(2);
  });

  it('.acquire() - past maxWaitMs cancels every reservation made', async () => {
    const clock = new ManualClock();
    const limits = limitsAt(clock);
    await limits.acquire(cost(600, 0));
    await expect(limits.acquire(cost(10, 0), { maxWaitMs: 500 })).rejects.toThrow(MaxWaitExceededError);
    expect(limits.bucket('requests')!.tokens()).toBe(1);
    expect(limits.bucket('tokens')!.tokens()).toBe(0);
  });

  it('.acquire() - a request token that cannot come in time gives the reserved tokens back', async () => {
    const clock = new ManualClock();
    const limits = oneRequestASecondAt(clock);
    await limits.acquire(cost(10, 0));
    await expect(limits.acquire(cost(10, 0), { maxWaitMs: 500 })).rejects.toThrow(MaxWaitExceededError);
    expect(limits.bucket('tokens')!.tokens()).toBe(90);
  });

  it('.acquire() - an abort while waiting cancels every reservation', async () => {
    const clock = new ManualClock();
    const limits = limitsAt(clock);
    await limits.acquire(cost(600, 0));
    const controller = new AbortController();
    const waiting = limits.acquire(cost(100, 0), { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(1000);
    controller.abort(new Error('stop'));
    expect(((await waiting) as Error).message).toBe('stop');
    expect(limits.bucket('tokens')!.tokens()).toBeCloseTo(10, 9);
    // The request token was never taken: it waits until the token limits allow.
    expect(limits.bucket('requests')!.tokens()).toBe(2);
  });

  it('.acquire() - with the request limit alone queues FIFO on one bucket', async () => {
    const clock = new ManualClock();
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 2, burst: 1 }], clock });
    const order: number[] = [];
    const all = [0, 1, 2].map(() => limits.acquire(cost(0, 0)).then(() => order.push(clock.now())));
    await clock.advance(1000);
    await Promise.all(all);
    expect(order).toEqual([0, 500, 1000]);
  });

  it('settle() - refunds unused estimated tokens and debits an overrun, once', async () => {
    const clock = new ManualClock();
    const limits = new LocalLimits({
      limits: [
        { kind: 'requests', rate: 10, burst: 10 },
        { kind: 'input-tokens', rate: 10, burst: 1000 },
        { kind: 'output-tokens', rate: 10, burst: 1000 },
      ],
      clock,
    });
    const grant = await limits.acquire(cost(300, 256));
    grant.settle({ inputTokens: 280, outputTokens: 40 });
    grant.settle({ inputTokens: 0, outputTokens: 0 });
    expect(limits.bucket('input-tokens')!.tokens()).toBe(720);
    expect(limits.bucket('output-tokens')!.tokens()).toBe(960);
    const overrun = await limits.acquire(cost(100, 10));
    overrun.settle({ inputTokens: 100, outputTokens: 60 });
    expect(limits.bucket('output-tokens')!.tokens()).toBe(900);
  });

  it('new LocalLimits({  }) - rejects no limits, unknown kinds and duplicates with a TypeError', () => {
    expect(() => new LocalLimits({ limits: [] })).toThrow(TypeError);
    expect(() => new LocalLimits({ limits: [{ kind: 'bytes' as never, rate: 1, burst: 1 }] })).toThrow(/limit kind/);
    expect(
      () =>
        new LocalLimits({
          limits: [
            { kind: 'tokens', rate: 1, burst: 1 },
            { kind: 'tokens', rate: 2, burst: 1 },
          ],
        }),
    ).toThrow(/twice/);
  });
});
