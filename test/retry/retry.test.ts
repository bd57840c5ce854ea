import { describe, it, expect } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { RateLimitError, ServerError, TimeoutError } from '../../src/provider/provider.ts';
import type { Backoff } from '../../src/retry/backoff.ts';
import { RetryError, isRetryError, retry } from '../../src/retry/retry.ts';
import type { AttemptOptions, RetryEvent } from '../../src/retry/retry.ts';

type Step = { fail: unknown } | { value: string };

/**
 * An attemptFn that plays `steps` in order, recording when (on `clock`) each attempt started and
 * what it was handed.
 */
function scripted(clock: ManualClock, steps: Step[]) {
  const startedAtMs: number[] = [];
  const received: Array<{ attempt: number; options: AttemptOptions }> = [];
  const attemptFn = async (attempt: number, options: AttemptOptions): Promise<string> => {
    startedAtMs.push(clock.now());
    received.push({ attempt, options });
    const step = steps[attempt - 1];
    if (step === undefined) throw new Error(`unscripted attempt ${attempt}`);
    if ('fail' in step) throw step.fail;
    return step.value;
  };
  return { attemptFn, startedAtMs, received };
}

/** Watches a promise without letting an expected rejection go unhandled. */
function track<T>(promise: Promise<T>) {
  const state: { status: 'pending' | 'fulfilled' | 'rejected'; value?: T; reason?: unknown } = { status: 'pending' };
  promise.then(
    (value) => Object.assign(state, { status: 'fulfilled', value }),
    (reason: unknown) => Object.assign(state, { status: 'rejected', reason }),
  );
  return state;
}

/** 100 ms after the first failure, 200 after the second, …; records what it was asked. */
function linearBackoff() {
  const calls: Array<[attempt: number, previousDelayMs: number]> = [];
  const backoff: Backoff = (attempt, previousDelayMs) => {
    calls.push([attempt, previousDelayMs]);
    return attempt * 100;
  };
  return { backoff, calls };
}

describe('retry()', () => {
  it('retry() - resolves on the first attempt without waiting', async () => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [{ value: 'ok' }]);
    await expect(retry(attemptFn, { clock })).resolves.toEqual({ value: 'ok', attempts: 1 });
    expect(startedAtMs).toEqual([0]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('retry() - retries 429s after the exact backoff delays, then resolves', async () => {
    const clock = new ManualClock();
    const { backoff, calls } = linearBackoff();
    const { attemptFn, startedAtMs } = scripted(clock, [{ fail: new RateLimitError() }, { fail: new RateLimitError() }, { value: 'ok' }]);
    const outcome = track(retry(attemptFn, { clock, backoff }));

    await clock.advance(99);
    expect(startedAtMs).toEqual([0]);
    await clock.advance(1);
    expect(startedAtMs).toEqual([0, 100]);
    await clock.advance(199);
    expect(startedAtMs).toEqual([0, 100]);
    await clock.advance(1);
    expect(startedAtMs).toEqual([0, 100, 300]);
    expect(outcome).toEqual({ status: 'fulfilled', value: { value: 'ok', attempts: 3 } });
    expect(calls).toEqual([
      [1, 0],
      [2, 100],
    ]);
  });

  it('retry() - retries ServerError (503)', async () => {
    const clock = new ManualClock();
    const { attemptFn } = scripted(clock, [{ fail: new ServerError() }, { value: 'ok' }]);
    const outcome = track(retry(attemptFn, { clock, backoff: () => 10 }));
    await clock.advance(10);
    expect(outcome).toEqual({ status: 'fulfilled', value: { value: 'ok', attempts: 2 } });
  });

  it('retry() - gives up with RetryError when the attempts are exhausted', async () => {
    const clock = new ManualClock();
    const errors = [new RateLimitError(), new ServerError(), new RateLimitError()];
    const { attemptFn, startedAtMs } = scripted(
      clock,
      errors.map((fail) => ({ fail })),
    );
    const outcome = track(retry(attemptFn, { clock, backoff: () => 10 }));
    await clock.advance(1000);

    expect(startedAtMs).toEqual([0, 10, 20]);
    expect(outcome.status).toBe('rejected');
    const error = outcome.reason as RetryError;
    expect(error).toBeInstanceOf(RetryError);
    expect(isRetryError(error)).toBe(true);
    expect(error.name).toBe('RetryError');
    expect(error.reason).toBe('exhausted');
    expect(error.attempts).toBe(3);
    expect(error.lastError).toBe(errors[2]);
    expect(error.cause).toBe(errors[2]);
    expect(error.message).toBe('gave up after 3 attempts: rate limited (429)');
  });

  it('retry() - maxAttempts 1 makes a single attempt', async () => {
    const clock = new ManualClock();
    const { attemptFn } = scripted(clock, [{ fail: new ServerError() }]);
    const error = await retry(attemptFn, { clock, maxAttempts: 1 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'exhausted', attempts: 1, message: 'gave up after 1 attempt: service unavailable (503)' });
    expect(clock.pendingTimers).toBe(0);
  });

  it.each([
    { name: 'TimeoutError', error: new TimeoutError(), detail: 'timed out' },
    { name: 'a plain Error', error: new Error('boom'), detail: 'boom' },
    { name: 'a non-Error value', error: 'string failure', detail: 'string failure' },
  ])('retry() - does not retry $name', async ({ error, detail }) => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [{ fail: error }, { value: 'never' }]);
    const thrown = await retry(attemptFn, { clock }).catch((e: unknown) => e);

    expect(startedAtMs).toEqual([0]);
    expect(clock.pendingTimers).toBe(0);
    expect(isRetryError(thrown)).toBe(true);
    expect(thrown).toMatchObject({ reason: 'not-retryable', attempts: 1, lastError: error, cause: error });
    expect((thrown as RetryError).message).toBe(`gave up after 1 attempt (not retryable): ${detail}`);
  });

  it('retry() - isRetryable decides what is retried', async () => {
    const clock = new ManualClock();
    const { attemptFn } = scripted(clock, [{ fail: new TimeoutError() }, { value: 'ok' }]);
    const outcome = track(retry(attemptFn, { clock, backoff: () => 5, isRetryable: (e) => e instanceof TimeoutError }));
    await clock.advance(5);
    expect(outcome).toEqual({ status: 'fulfilled', value: { value: 'ok', attempts: 2 } });
  });

  it('retry() - obeys retry-after over the computed delay, even when shorter', async () => {
    const clock = new ManualClock();
    const { backoff, calls } = linearBackoff();
    const { attemptFn, startedAtMs } = scripted(clock, [
      { fail: new RateLimitError(undefined, { retryAfterMs: 30 }) },
      { fail: new RateLimitError(undefined, { retryAfterMs: 700 }) },
      { value: 'ok' },
    ]);
    const events: RetryEvent[] = [];
    const outcome = track(retry(attemptFn, { clock, backoff, onRetry: (event) => events.push(event) }));
    await clock.advance(10_000);

    expect(startedAtMs).toEqual([0, 30, 730]);
    expect(events.map((event) => event.delayMs)).toEqual([30, 700]);
    expect(calls).toEqual([]);
    expect(outcome.status).toBe('fulfilled');
  });

  it('retry() - caps retry-after at maxRetryAfterMs', async () => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [
      { fail: new RateLimitError(undefined, { retryAfterMs: 3_600_000 }) },
      { fail: new RateLimitError(undefined, { retryAfterMs: 3_600_000 }) },
      { value: 'ok' },
    ]);
    const outcome = track(retry(attemptFn, { clock, maxRetryAfterMs: 5000 }));
    await clock.advance(20_000);
    expect(startedAtMs).toEqual([0, 5000, 10_000]);
    expect(outcome.status).toBe('fulfilled');
  });

  it('retry() - caps retry-after at 60 s by default', async () => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [
      { fail: new RateLimitError(undefined, { retryAfterMs: 3_600_000 }) },
      { value: 'ok' },
    ]);
    const outcome = track(retry(attemptFn, { clock }));
    await clock.advance(59_999);
    expect(startedAtMs).toEqual([0]);
    await clock.advance(1);
    expect(startedAtMs).toEqual([0, 60_000]);
    expect(outcome.status).toBe('fulfilled');
  });

  it.each([Number.NaN, -1, Infinity])('retry() - falls back to the backoff on a retry-after of %s', async (retryAfterMs) => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [{ fail: new RateLimitError(undefined, { retryAfterMs }) }, { value: 'ok' }]);
    const outcome = track(retry(attemptFn, { clock, backoff: () => 250 }));
    await clock.advance(1000);
    expect(startedAtMs).toEqual([0, 250]);
    expect(outcome.status).toBe('fulfilled');
  });

  it('retry() - stops at once, without sleeping, when the next backoff would end past deadlineMs', async () => {
    const clock = new ManualClock();
    const lastError = new RateLimitError();
    const { attemptFn, startedAtMs } = scripted(clock, [{ fail: new RateLimitError() }, { fail: lastError }, { value: 'never' }]);
    const events: RetryEvent[] = [];
    const outcome = track(retry(attemptFn, { clock, backoff: () => 100, deadlineMs: 150, onRetry: (event) => events.push(event) }));

    await clock.advance(100);
    expect(startedAtMs).toEqual([0, 100]);
    expect(clock.now()).toBe(100);
    expect(clock.pendingTimers).toBe(0);
    expect(outcome.status).toBe('rejected');
    expect(outcome.reason).toMatchObject({ reason: 'deadline', attempts: 2, lastError });
    expect(events.map((event) => event.attempt)).toEqual([1]);
  });

  it('retry() - a backoff ending exactly at deadlineMs still runs', async () => {
    const clock = new ManualClock();
    const { attemptFn } = scripted(clock, [{ fail: new ServerError() }, { value: 'ok' }]);
    const outcome = track(retry(attemptFn, { clock, backoff: () => 100, deadlineMs: 100 }));
    await clock.advance(100);
    expect(outcome).toEqual({ status: 'fulfilled', value: { value: 'ok', attempts: 2 } });
  });

  it('retry() - the deadline applies to retry-after too', async () => {
    const clock = new ManualClock(1000);
    const { attemptFn } = scripted(clock, [{ fail: new RateLimitError(undefined, { retryAfterMs: 5000 }) }]);
    const thrown = await retry(attemptFn, { clock, backoff: () => 1, deadlineMs: 2000 }).catch((e: unknown) => e);
    expect(thrown).toMatchObject({ reason: 'deadline', attempts: 1 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('retry() - an abort during the backoff rejects promptly with signal.reason', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const { attemptFn, startedAtMs } = scripted(clock, [{ fail: new RateLimitError() }, { value: 'never' }]);
    const outcome = track(retry(attemptFn, { clock, backoff: () => 1000, signal: controller.signal }));

    await clock.advance(50);
    expect(outcome.status).toBe('pending');
    const reason = new Error('shutting down');
    controller.abort(reason);
    await clock.advance(0);

    expect(outcome).toEqual({ status: 'rejected', reason });
    expect(clock.now()).toBe(50);
    expect(clock.pendingTimers).toBe(0);
    expect(startedAtMs).toEqual([0]);
  });

  it('retry() - an already aborted signal rejects with its reason before any attempt', async () => {
    const clock = new ManualClock();
    const reason = new Error('too late');
    const { attemptFn, startedAtMs } = scripted(clock, [{ value: 'never' }]);
    await expect(retry(attemptFn, { clock, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(startedAtMs).toEqual([]);
  });

  it('retry() - passes the signal to each attempt; an abort mid-attempt rejects with the reason, unwrapped', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const seen: Array<AbortSignal | undefined> = [];
    const attemptFn = (attempt: number, { signal }: AttemptOptions) => {
      seen.push(signal);
      if (attempt === 1) return Promise.reject(new ServerError());
      return new Promise<string>((_resolve, reject) => {
        // A provider that fails its own way on abort: retry() still reports the abort's reason.
        signal?.addEventListener('abort', () => reject(new TimeoutError('aborted mid-call')), { once: true });
      });
    };
    const outcome = track(retry(attemptFn, { clock, backoff: () => 10, signal: controller.signal }));
    await clock.advance(10);
    expect(seen).toEqual([controller.signal, controller.signal]);

    const reason = new Error('cancelled');
    controller.abort(reason);
    await clock.advance(0);
    expect(outcome).toEqual({ status: 'rejected', reason });
  });

  it('retry() - onRetry reports each failed attempt and the delay before the next', async () => {
    const clock = new ManualClock();
    const { backoff } = linearBackoff();
    const first = new RateLimitError();
    const second = new ServerError();
    const { attemptFn } = scripted(clock, [{ fail: first }, { fail: second }, { fail: new RateLimitError() }]);
    const events: RetryEvent[] = [];
    const outcome = track(retry(attemptFn, { clock, backoff, onRetry: (event) => events.push(event) }));
    await clock.advance(1000);

    expect(events).toEqual([
      { attempt: 1, error: first, delayMs: 100 },
      { attempt: 2, error: second, delayMs: 200 },
    ]);
    expect(outcome.status).toBe('rejected');
  });

  it.each([0, -1, 1.5, Number.NaN, Infinity, '3'])('retry() - rejects maxAttempts %s with a TypeError', async (maxAttempts) => {
    const clock = new ManualClock();
    const { attemptFn, startedAtMs } = scripted(clock, [{ value: 'never' }]);
    await expect(retry(attemptFn, { clock, maxAttempts: maxAttempts as number })).rejects.toThrow(
      new TypeError(
        `Expected maxAttempts to be an integer >= 1, got ${typeof maxAttempts === 'string' ? `"${maxAttempts}"` : String(maxAttempts)}`,
      ),
    );
    expect(startedAtMs).toEqual([]);
  });

  it.each([
    [{ maxRetryAfterMs: -1 }, 'Expected maxRetryAfterMs to be a number >= 0 (ms), got -1'],
    [{ maxRetryAfterMs: Number.NaN }, 'Expected maxRetryAfterMs to be a number >= 0 (ms), got NaN'],
    [{ deadlineMs: Number.NaN }, 'Expected deadlineMs to be a number, got NaN'],
  ])('retry() - rejects options %o with a TypeError', async (options, message) => {
    await expect(retry(async () => 'never', options)).rejects.toThrow(new TypeError(message));
  });

  it('retry() - rejects an attemptFn that is not a function', async () => {
    await expect(retry(undefined as never)).rejects.toThrow(new TypeError('Expected attemptFn to be a function, got undefined'));
  });

  it('retry() - rejects a backoff that returns a bad delay', async () => {
    const clock = new ManualClock();
    const { attemptFn } = scripted(clock, [{ fail: new ServerError() }]);
    await expect(retry(attemptFn, { clock, backoff: () => Number.NaN })).rejects.toThrow(
      new TypeError('Expected the backoff delay to be a finite number >= 0 (ms), got NaN'),
    );
    expect(clock.pendingTimers).toBe(0);
  });
});
