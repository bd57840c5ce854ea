import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MaxWaitExceededError } from '../../src/limiter/token-bucket.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import {
  RateLimitError,
  ServerError,
  TimeoutError,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type Provider,
} from '../../src/provider/provider.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { gateCaller } from '../gate-caller.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { RetryError } from '../../src/retry/retry.ts';
import { ScriptedProvider, drive, type Step } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

const request: LlmRequest = builtinRequest('summarize', '7');
const noJitter = (attempt: number) => 100 * 2 ** (attempt - 1);

function setup(script: Step[], rate = 10, burst = 1) {
  const clock = new ManualClock();
  const provider = new ScriptedProvider({ name: 'p', clock, script });
  const limits = new LocalLimits({ limits: requestLimit(rate, burst), clock });
  const limiter = limits.bucket('requests')!;
  const gate = gateCaller({ provider, limits, clock, retry: { backoff: noJitter } });
  const events: AttemptEvent[] = [];
  return { clock, provider, limiter, gate, events, onAttempt: (e: AttemptEvent) => events.push(e) };
}

describe("a call through a provider's gate (CallLoop over a ProviderRoute)", () => {
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

  describe('callTimeoutMs', () => {
    function timedGate(script: Step[], callTimeoutMs: number | undefined) {
      const clock = new ManualClock();
      const provider = new ScriptedProvider({ name: 'p', clock, script });
      const limits = new LocalLimits({ limits: requestLimit(10, 1), clock });
      const gate = gateCaller({ provider, limits, clock, callTimeoutMs, retry: { backoff: noJitter } });
      // The article's deadline, as the pipeline's signal gives it: aborts with a TimeoutError at 3 s.
      const deadline = new AbortController();
      clock.setTimer(3000, () => deadline.abort(new TimeoutError('article timed out after 3000 ms', { timeoutMs: 3000 })));
      const events: AttemptEvent[] = [];
      const options = { signal: deadline.signal, deadlineMs: 3000, onAttempt: (e: AttemptEvent) => events.push(e) };
      return { clock, provider, gate, events, options };
    }

    it('.call() - a call that hangs once is cut at the call timeout and answers on the second attempt, well within the deadline', async () => {
      const { clock, provider, gate, events, options } = timedGate([{ hang: true }, { latencyMs: 50 }], 500);
      const { attempts } = await drive(clock, gate.call(request, options));
      expect(attempts).toBe(2);
      // Cut at 500 ms, 100 ms of backoff, then answered in 50 ms.
      expect(provider.calls.map((c) => c.atMs)).toEqual([0, 600]);
      expect(events).toMatchObject([
        { outcome: 'timeout', called: true, latencyMs: 500, retryInMs: 100 },
        { outcome: 'ok', latencyMs: 50 },
      ]);
      expect(events[0]!.error).toBeInstanceOf(TimeoutError);
      expect(events[0]!.error).toMatchObject({ retryable: true, timeoutMs: 500, message: 'no answer within 500ms (the call timeout)' });
    });

    it('.call() - ends the attempt on time even when the provider does not heed its signal', async () => {
      const clock = new ManualClock();
      let calls = 0;
      // Answers after 10 s whatever it is told, on the second call at once.
      const deaf = {
        name: 'deaf',
        call: async () => {
          if (calls++ === 0) await new Promise((resolve) => clock.setTimer(10_000, () => resolve(undefined)));
          return { output: { summary: 's', keywords: [] } };
        },
      };
      const gate = gateCaller({
        provider: deaf,
        limits: new LocalLimits({ limits: requestLimit(10, 1), clock }),
        clock,
        callTimeoutMs: 500,
        retry: { backoff: noJitter },
      });
      const events: AttemptEvent[] = [];
      const { attempts } = await drive(clock, gate.call(request, { deadlineMs: 3000, onAttempt: (e) => events.push(e) }));
      expect(attempts).toBe(2);
      expect(events).toMatchObject([
        { outcome: 'timeout', latencyMs: 500 },
        { outcome: 'ok', atMs: 600 },
      ]);
    });

    it('.call() - without it, the hang takes the whole deadline and the call fails with it: one attempt', async () => {
      const { clock, gate, events, options } = timedGate([{ hang: true }, { latencyMs: 50 }], undefined);
      const error = await drive(
        clock,
        gate.call(request, options).catch((e: unknown) => e),
      );
      expect(error).toMatchObject({ name: 'TimeoutError', retryable: false, message: 'article timed out after 3000 ms' });
      expect(events).toMatchObject([{ outcome: 'timeout', latencyMs: 3000, retryInMs: undefined }]);
    });

    it(".call() - a provider's own timeout (an SDK's) before the deadline is retried as the call timeout's", async () => {
      const own = new TimeoutError('no answer within 400 ms', { timeoutMs: 400 });
      const { clock, gate, events, options } = timedGate([{ latencyMs: 400, error: own }, { latencyMs: 50 }], 500);
      expect((await drive(clock, gate.call(request, options))).attempts).toBe(2);
      expect(events[0]!.error).toMatchObject({ name: 'TimeoutError', retryable: true, message: 'no answer within 400 ms', cause: own });
    });

    it('.call() - tells the provider the shorter of the call timeout and what is left of the deadline', async () => {
      const clock = new ManualClock();
      const timeouts: (number | undefined)[] = [];
      const provider: Provider = {
        name: 'p',
        call: async (_request: LlmRequest, options?: CallOptions): Promise<LlmResponse> => {
          timeouts.push(options?.timeoutMs);
          return { output: { summary: 's', keywords: [] } };
        },
      };
      const gate = gateCaller({
        provider,
        limits: new LocalLimits({ limits: requestLimit(Infinity, 1), clock }),
        clock,
        callTimeoutMs: 500,
      });
      await gate.call(request, { deadlineMs: 2000 });
      await gate.call(request, { deadlineMs: 300 });
      await gate.call(request);
      expect(timeouts).toEqual([500, 300, 500]);
    });

    it('is refused unless > 0', () => {
      const clock = new ManualClock();
      const make = (callTimeoutMs: number) =>
        new CallGate({
          provider: new ScriptedProvider({ name: 'p', clock }),
          limits: new LocalLimits({ limits: requestLimit(1, 1), clock }),
          clock,
          callTimeoutMs,
        });
      expect(() => make(0)).toThrow('Expected callTimeoutMs to be a number > 0 (ms), got 0');
      expect(() => make(Number.NaN)).toThrow(TypeError);
      expect(() => make(Infinity)).not.toThrow();
    });
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
