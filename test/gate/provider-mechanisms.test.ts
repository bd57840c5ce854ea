import { describe, expect, it } from 'vitest';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { ManualClock } from '../../src/clock.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { RateLimitError, ServerError, TimeoutError, type LlmRequest } from '../../src/provider/provider.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { formatRateLimitHeaders, parseRateLimitHeaders } from '../../src/vendors/rate-limit-headers.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { gateCaller } from '../gate-caller.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import type { RetryError } from '../../src/retry/retry.ts';
import { ScriptedProvider, drive } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

const request: LlmRequest = builtinRequest('summarize', '1');
const fixedBackoff = () => 100;

describe('CallGate - circuit breaker', () => {
  it('an open circuit refuses at once, spending no token and no attempt: the call waits for it within its deadline', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new ServerError() }, { error: new ServerError() }, {}] });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 0.001, burst: 100 }], clock });
    const { gate, call } = gateCaller({
      provider,
      limits,
      breaker: { failureThreshold: 2, cooldownMs: 10_000 },
      clock,
      retry: { backoff: fixedBackoff, maxAttempts: 3 },
    });
    const breaker = gate.breaker!;
    const events: AttemptEvent[] = [];
    const { attempts } = await drive(clock, call(request, { deadlineMs: 60_000, onAttempt: (e) => events.push(e) }));
    // Two 503s open it (at 100 ms, until 10,100 ms); the third attempt meets the open circuit after
    // its 100 ms backoff, waits out the rest of the cooldown (9,900 ms) and is the probe that
    // succeeds: still attempt 3 of 3.
    expect(events.map((e) => [e.outcome, e.attempt, e.called])).toEqual([
      ['server-error', 1, true],
      ['server-error', 2, true],
      ['circuit-open', 3, false],
      ['ok', 3, true],
    ]);
    expect(events[2]!.retryInMs).toBe(9900);
    expect(attempts).toBe(3);
    expect(provider.calls.map((c) => c.atMs)).toEqual([0, 100, 10_100]);
    expect(breaker.state.kind).toBe('closed');
    // Three tokens for the three calls (plus a sliver of refill at 0.001/s), none for the refused attempt.
    expect(limits.bucket('requests')!.tokens()).toBeCloseTo(97, 1);
  });

  it('an open circuit that will not admit probes before the deadline fails the call at once, saying so', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new ServerError() }, { error: new ServerError() }] });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1000, burst: 100 }], clock });
    const { call } = gateCaller({
      provider,
      limits,
      breaker: { failureThreshold: 2, cooldownMs: 10_000 },
      clock,
      retry: { backoff: fixedBackoff, maxAttempts: 5 },
    });
    const events: AttemptEvent[] = [];
    const error = await drive(
      clock,
      call(request, { deadlineMs: 5000, onAttempt: (e) => events.push(e) }).catch((e: unknown) => e),
    );
    expect(events.map((e) => e.outcome)).toEqual(['server-error', 'server-error', 'circuit-open']);
    expect(provider.calls).toHaveLength(2);
    // Two attempts made; the refused third is none.
    expect(error).toMatchObject({ name: 'RetryError', reason: 'deadline', attempts: 2, lastError: { name: 'BrokenCircuitError' } });
    expect((error as Error).message).toMatch(
      /^gave up after 2 attempts \(the next attempt could not start before the deadline\): circuit "p" is open; probes admitted in 9\.9s$/,
    );
    expect(clock.now()).toBe(200);
  });

  it('half-open, every probe slot taken: a refused call waits for the probe to settle, not polling, whatever the backoff', async () => {
    const clock = new ManualClock();
    // The probe takes 3 s to answer; a backoff of 0 and no retry-after cap could spin a poll.
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new ServerError() }, { latencyMs: 3000 }, {}] });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1000, burst: 100 }], clock });
    const { call } = gateCaller({
      provider,
      limits,
      breaker: { failureThreshold: 1, cooldownMs: 1000 },
      clock,
      retry: { backoff: () => 0, maxRetryAfterMs: 0, maxAttempts: 2 },
    });
    const events: AttemptEvent[] = [];
    const onAttempt = (e: AttemptEvent) => events.push(e);
    const first = call(request, { deadlineMs: 60_000, onAttempt });
    // The first call's 503 opens the circuit at 0 ms; its retry waits out the cooldown and is the probe, at 1,000 ms.
    await clock.advance(1500);
    const second = call({ ...request, articleId: '2' }, { deadlineMs: 60_000, onAttempt });
    await drive(clock, Promise.all([first, second]));
    const refused = events.filter((e) => e.outcome === 'circuit-open');
    // One refusal each: the first call's before the cooldown, the second's while the probe was out.
    expect(refused.map((e) => [e.articleId, e.atMs, e.retryInMs])).toEqual([
      ['1', 0, 1000],
      ['2', 1500, 58_500],
    ]);
    // The second call went as the probe succeeded and closed the circuit, at 4,000 ms.
    expect(provider.calls.map((c) => [c.request.articleId, c.atMs])).toEqual([
      ['1', 0],
      ['1', 1000],
      ['2', 4000],
    ]);
  });

  it('half-open: a refused call waits for the probe even where the float sum now + (deadline − now) passes the deadline', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1000, burst: 100 }], clock });
    const { gate, call } = gateCaller({ provider, limits, breaker: { failureThreshold: 1, cooldownMs: 1000 }, clock });
    const breaker = gate.breaker!;
    breaker.acquirePermit().failure();
    // Seen in a run: 1090.711147 + (20637.385201 − 1090.711147) > 20637.385201.
    clock.set(1090.711147);
    const probe = breaker.acquirePermit(); // half-open, the probe out
    const events: AttemptEvent[] = [];
    const made = call(request, { deadlineMs: 20637.385201, onAttempt: (e) => events.push(e) });
    await Promise.resolve();
    probe.success();
    await drive(clock, made);
    expect(events.map((e) => e.outcome)).toEqual(['circuit-open', 'ok']);
  });

  it('open: a refused call waits the cooldown however small the retry-after cap, never polling', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new ServerError() }, {}] });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1000, burst: 100 }], clock });
    const { call } = gateCaller({
      provider,
      limits,
      breaker: { failureThreshold: 1, cooldownMs: 1000 },
      clock,
      retry: { backoff: () => 0, maxRetryAfterMs: 0, maxAttempts: 2 },
    });
    const events: AttemptEvent[] = [];
    await drive(clock, call(request, { deadlineMs: 60_000, onAttempt: (e) => events.push(e) }));
    expect(events.map((e) => [e.outcome, e.attempt, e.atMs])).toEqual([
      ['server-error', 1, 0],
      ['circuit-open', 2, 0],
      ['ok', 2, 1000],
    ]);
  });

  it('does not count a deadline that passes while waiting for the token as a provider failure', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 2, burst: 1 }], clock });
    const { gate, call } = gateCaller({ provider, limits, breaker: { failureThreshold: 1 }, clock });
    const breaker = gate.breaker!;
    limits.bucket('requests')!.tryAcquire(1);
    const controller = new AbortController();
    const events: AttemptEvent[] = [];
    const made = call(request, { signal: controller.signal, deadlineMs: 1000, onAttempt: (e) => events.push(e) }).catch((e: unknown) => e);
    limits.bucket('requests')!.setRate(0.5); // an adaptive cut elsewhere pushes the queue back
    clock.setTimer(1000, () => controller.abort(new TimeoutError('article timed out')));
    await clock.advance(1500);
    await made;
    expect(events).toMatchObject([{ outcome: 'limiter-timeout', called: false }]);
    expect(provider.calls).toHaveLength(0);
    expect(breaker.state.kind).toBe('closed');
  });

  it('does not count 429s as failures', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new RateLimitError('429', { retryAfterMs: 10 }) }] });
    const { gate, call } = gateCaller({
      provider,
      limits: new LocalLimits({ limits: [{ kind: 'requests', rate: 1000, burst: 10 }], clock }),
      breaker: { failureThreshold: 1 },
      clock,
    });
    const breaker = gate.breaker!;
    await drive(
      clock,
      call(request).catch(() => {}),
    );
    expect(breaker.state.kind).toBe('closed');
  });

  it('an outage: articles wait for the circuit instead of spending attempts on it', async () => {
    const run = async (maxAttempts: number) => {
      const clock = new ManualClock();
      const provider = new SimulatedProvider({ minLatencyMs: 10, maxLatencyMs: 20, clock, outage: { startMs: 1000, endMs: 4000 } });
      const results: ArticleResult[] = [];
      const summary = await drive(
        clock,
        runPipeline({
          source: generateArticles(60),
          providers: [{ provider, limits: requestLimit(10, 2), breaker: { failureThreshold: 3, cooldownMs: 1000 } }],
          retry: { maxAttempts },
          timeoutMs: 30_000,
          clock,
          onResult: (r) => void results.push(r),
        }),
        5,
      );
      return { summary, results };
    };
    // The refusals of the open circuit cost no attempt: with two, only articles whose two calls
    // reached the provider during the outage fail; with enough attempts, none.
    const few = await run(2);
    expect(few.summary.providers[0]!.breakerOpens).toBeGreaterThan(0);
    expect(few.summary.providers[0]!.circuitRejections).toBeGreaterThan(0);
    const failures = few.results.filter((r) => r.status !== 'succeeded');
    // Only articles whose two attempts both reached the provider as the outage began (2 to 4 here,
    // with the order of callbacks between clock steps): under a tenth.
    expect(failures.length).toBeLessThanOrEqual(6);
    for (const r of failures)
      expect(r.error).toMatchObject({ type: 'ServerError', message: expect.stringMatching(/^gave up after 2 attempts/) });
    expect(few.summary.succeeded + few.summary.failed).toBe(60);

    const many = await run(12);
    expect(many.summary.providers[0]!.breakerOpens).toBeGreaterThan(0);
    expect(many.summary.succeeded).toBe(60);
    expect(many.summary.stoppedBy).toBeUndefined();
  });

  it('a provider down past giveUpAfterMs stops the run: in flight cancelled, the rest not started, stoppedBy says so', async () => {
    const clock = new ManualClock();
    const provider = new SimulatedProvider({ minLatencyMs: 10, maxLatencyMs: 20, clock, outage: { startMs: 500, endMs: 1e9 } });
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(100),
        total: 100,
        providers: [{ provider, limits: requestLimit(10, 2), breaker: { failureThreshold: 3, cooldownMs: 1000, giveUpAfterMs: 5000 } }],
        workers: 4,
        timeoutMs: 30_000,
        clock,
        onResult: (r) => void results.push(r),
      }),
      5,
    );
    expect(summary.stoppedBy).toMatchObject({ by: 'provider-down', provider: 'simulated', type: 'ServerError' });
    expect(summary.stoppedBy!.message).toMatch(/^down for 5\.\d+s, its circuit open and every probe failing \(the last: ServerError: /);
    // The first probe to fail 5 s after the circuit opened: opened just after 500 ms, probes each second.
    expect(clock.now()).toBeGreaterThanOrEqual(5500);
    expect(clock.now()).toBeLessThan(7000);
    expect(summary.cancelled).toBeGreaterThan(0);
    expect(summary.notStarted).toBeGreaterThan(50);
    expect(summary.succeeded + summary.failed + summary.cancelled + summary.notStarted!).toBe(100);
    expect(results.filter((r) => r.status === 'cancelled').every((r) => r.error?.type === 'RunStoppedError')).toBe(true);
  });

  it('a circuit that recovers before giveUpAfterMs does not stop the run', async () => {
    const clock = new ManualClock();
    const provider = new SimulatedProvider({ minLatencyMs: 10, maxLatencyMs: 20, clock, outage: { startMs: 500, endMs: 4000 } });
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(100),
        providers: [{ provider, limits: requestLimit(10, 2), breaker: { failureThreshold: 3, cooldownMs: 1000, giveUpAfterMs: 5000 } }],
        workers: 4,
        retry: { maxAttempts: 12 },
        timeoutMs: 30_000,
        clock,
      }),
      5,
    );
    expect(summary.stoppedBy).toBeUndefined();
    expect(summary.succeeded).toBe(100);
  });
});

describe('CallGate - token limits', () => {
  it('reserves the estimate, then settles on the reported usage', async () => {
    const clock = new ManualClock();
    const provider = {
      name: 'p',
      call: async () => ({
        output: { summary: 's', keywords: [] },
        usage: { inputTokens: 90, outputTokens: 10 },
      }),
    };
    const limits = new LocalLimits({
      limits: [
        { kind: 'requests', rate: 10, burst: 10 },
        { kind: 'tokens', rate: 10, burst: 1000 },
      ],
      clock,
    });
    const { call } = gateCaller({ provider, limits, clock, estimateInputTokens: () => 100, maxOutputTokens: 300 });
    const events: AttemptEvent[] = [];
    await call(request, { onAttempt: (e) => events.push(e) });
    expect(limits.bucket('tokens')!.tokens()).toBe(900);
    expect(events[0]!.usage).toEqual({ inputTokens: 90, outputTokens: 10 });
  });

  it('a request larger than the token burst is a dead letter at once, not a hang', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock });
    const limits = new LocalLimits({
      limits: [
        { kind: 'requests', rate: 10, burst: 10 },
        { kind: 'tokens', rate: 10, burst: 500 },
      ],
      clock,
    });
    const { call } = gateCaller({ provider, limits, clock, estimateInputTokens: () => 400, maxOutputTokens: 256 });
    const error = await call(request).catch((e: unknown) => e);
    expect((error as RetryError).reason).toBe('not-retryable');
    expect(String((error as RetryError).lastError)).toMatch(/needs 656 tokens but the tokens limit allows at most 500/);
    expect(provider.calls).toHaveLength(0);
  });
});

describe('CallGate - headers and adaptive rate', () => {
  it('with syncHeaders lowers the bucket to what the provider says remains, never raises it', async () => {
    const clock = new ManualClock();
    let remaining = 3;
    const provider = {
      name: 'p',
      call: async () => ({
        output: { summary: 's', keywords: [] },
        headers: formatRateLimitHeaders('openai', [{ kind: 'requests', limit: 100, remaining, resetMs: 1000 }]),
      }),
      // A provider of one's own says how its headers read: here, OpenAI's.
      rateLimits: (headers: Readonly<Record<string, string>>) => parseRateLimitHeaders(headers, { styles: ['openai'] }),
    };
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1, burst: 10 }], clock });
    const { call } = gateCaller({ provider, limits, clock, syncHeaders: true });
    await call(request);
    expect(limits.bucket('requests')!.tokens()).toBe(3);
    remaining = 50;
    await call(request);
    expect(limits.bucket('requests')!.tokens()).toBe(2);
  });

  it('a 429 with a garbage retry-after is still a 429 to the adaptive rate and the retry loop', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({
      name: 'p',
      clock,
      script: [{ error: new RateLimitError('429', { retryAfterMs: Number.NaN }) }, {}],
    });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 20, burst: 1 }], clock });
    const { gate, call } = gateCaller({ provider, limits, adaptive: {}, clock });
    const adaptive = gate.adaptive!;
    const events: AttemptEvent[] = [];
    const { attempts } = await drive(clock, call(request, { onAttempt: (e) => events.push(e) }));
    expect(attempts).toBe(2);
    expect(events.map((e) => e.outcome)).toEqual(['rate-limited', 'ok']);
    expect(adaptive.decreases).toBe(1);
  });

  it('adopts the request limit the provider states in its headers, instead of searching for it', async () => {
    const clock = new ManualClock();
    // 5 calls/s, said as 300 a minute in OpenAI's x-ratelimit-limit-requests.
    const provider = new SimulatedProvider({
      minLatencyMs: 1,
      maxLatencyMs: 1,
      quota: { rate: 5, burst: 2 },
      headerStyle: 'openai',
      clock,
    });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 20, burst: 1 }], clock });
    const { gate, call } = gateCaller({ provider, limits, adaptive: {}, clock });
    const adaptive = gate.adaptive!;
    await drive(clock, call(request));
    expect(limits.rate).toBe(5);
    expect(adaptive.decreases).toBe(0);
    // 20 more calls at the stated rate draw no 429.
    for (let i = 0; i < 20; i++) await drive(clock, call(request));
    expect(provider.rateLimited).toBe(0);
  });

  it('tells the adaptive rate of 429s, which cuts the request rate', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ error: new RateLimitError('429', { retryAfterMs: 50 }) }, {}] });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 20, burst: 1 }], clock });
    const bucket = limits.bucket('requests')!;
    const { gate, call } = gateCaller({ provider, limits, adaptive: {}, clock });
    const adaptive = gate.adaptive!;
    await drive(clock, call(request));
    expect(adaptive.decreases).toBe(1);
    expect(bucket.rate).toBeLessThan(20);
  });
});
