import { describe, it, expect } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MaxWaitExceededError } from '../../src/limiter/token-bucket.ts';
import { LocalLimits } from '../../src/gate/local-limits.ts';
import { requestLimit } from '../../src/gate/provider-limits.ts';
import { RateLimitError, ServerError, type LlmRequest } from '../../src/provider/provider.ts';
import { CallGate, type AttemptEvent } from '../../src/gate/call-gate.ts';
import { RetryError } from '../../src/retry/retry.ts';
import { ScriptedProvider, drive, type Step } from '../../src/testing/scripted-provider.ts';

const request: LlmRequest = { task: 'summarize', articleId: '7', title: 'T', text: 'Body.' };
const noJitter = (attempt: number) => 100 * 2 ** (attempt - 1);

function setup(script: Step[], rate = 10, burst = 1) {
  const clock = new ManualClock();
  const provider = new ScriptedProvider('p', clock, script);
  const limits = new LocalLimits(requestLimit(rate, burst), clock);
  const limiter = limits.bucket('requests')!;
  const gate = new CallGate({ provider, limits, clock, retry: { backoff: noJitter } });
  const events: AttemptEvent[] = [];
  return { clock, provider, limiter, gate, events, onAttempt: (e: AttemptEvent) => events.push(e) };
}

describe('CallGate', () => {
  it('.call() - takes a token before every attempt, retries included', async () => {
    const { clock, provider, gate, events, onAttempt } = setup(
      [{ latencyMs: 5, error: new ServerError() }, { latencyMs: 5, error: new ServerError() }, { latencyMs: 5 }],
      1,
    );
    const { attempts } = await drive(clock, gate.call(request, { onAttempt }));
    expect(attempts).toBe(3);
    // burst 1 at 1/s: the retries wait for their tokens (1 s apart), not just the 100/200 ms backoff.
    expect(provider.calls.map((c) => c.atMs)).toEqual([0, 1000, 2000]);
    expect(events.map((e) => e.outcome)).toEqual(['server-error', 'server-error', 'ok']);
    expect(events.map((e) => e.retryInMs)).toEqual([100, 200, undefined]);
    expect(events[1]!.waitMs).toBe(895);
  });

  it('.call() - obeys a 429 retry-after over the computed backoff', async () => {
    const { clock, provider, gate } = setup([{ error: new RateLimitError('429', { retryAfterMs: 750 }) }, {}], 1000, 10);
    await drive(clock, gate.call(request));
    expect(provider.calls.map((c) => c.atMs)).toEqual([0, 750]);
  });

  it('.call() - gives up after maxAttempts with a RetryError carrying the last error', async () => {
    const { clock, gate, events, onAttempt } = setup([{ error: new RateLimitError('429') }], 1000, 10);
    const error = await drive(
      clock,
      gate.call(request, { onAttempt }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(RetryError);
    expect((error as RetryError).attempts).toBe(3);
    expect((error as RetryError).lastError).toBeInstanceOf(RateLimitError);
    expect(events.map((e) => e.outcome)).toEqual(['rate-limited', 'rate-limited', 'rate-limited']);
  });

  it('.call() - fails at once, calling nothing, when the token cannot come before the deadline', async () => {
    const { clock, provider, limiter, gate, events, onAttempt } = setup([{}], 1, 1);
    limiter.tryAcquire(1);
    const error = await gate.call(request, { deadlineMs: 500, onAttempt }).catch((e: unknown) => e);
    expect((error as RetryError).lastError).toBeInstanceOf(MaxWaitExceededError);
    expect(provider.calls).toHaveLength(0);
    expect(events).toMatchObject([{ outcome: 'limiter-timeout', called: false }]);
    expect(clock.now()).toBe(0);
    expect(limiter.tokens()).toBe(0);
  });

  it('.call() - an abort mid-call rejects with the reason and reports the attempt', async () => {
    const { clock, gate, events, onAttempt } = setup([{ latencyMs: 100 }]);
    const controller = new AbortController();
    const reason = new Error('stop');
    const call = gate.call(request, { signal: controller.signal, onAttempt }).catch((e: unknown) => e);
    await clock.advance(40);
    controller.abort(reason);
    expect(await call).toBe(reason);
    expect(events).toMatchObject([{ outcome: 'aborted', called: true, latencyMs: 40 }]);
  });

  it('.call() - an abort while waiting for the token refunds it to the queue', async () => {
    const { clock, limiter, gate } = setup([{}], 1, 1);
    limiter.tryAcquire(1);
    const controller = new AbortController();
    const call = gate.call(request, { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(100);
    controller.abort();
    await call;
    expect(limiter.waiting).toBe(0);
    expect(limiter.tokens()).toBeCloseTo(0.1, 9);
  });
});
