import { describe, it, expect } from 'vitest';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { AuthenticationError, BadRequestError, NetworkError, ServerError } from '../../src/provider/provider.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { CancelledError, runPipeline } from '../../src/pipeline/run.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { ScriptedProvider, drive, type Step } from '../../src/testing/scripted-provider.ts';

describe('runPipeline()', () => {
  it('4 articles × 2 calls at rate 2, burst 1 take exactly (8 − 1) / 2 s plus the last call (manual clock)', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 2 }] });
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(4), providers: [{ provider, limits: requestLimit(2, 1) }], workers: 5, clock }),
    );
    expect(provider.calls.map((c) => c.atMs)).toEqual([0, 500, 1000, 1500, 2000, 2500, 3000, 3500]);
    expect(summary).toMatchObject({ articles: 4, succeeded: 4, failed: 0, calls: 8, retries: 0, rateFloorMs: 3500, leastElapsedMs: 3502 });
    expect(summary.elapsedMs).toBe(3502);
    expect(summary.efficiency).toBe(1);
  });

  // The exact schedule is the manual clock's (above); here the real timers: never early, and no
  // more than twice the floor late, a bound that only a lost or doubled wait can break.
  it('4 articles × 2 calls at rate 2, burst 1 take at least 3.5 s on the real clock (and under twice that)', async () => {
    const provider = new SimulatedProvider({ minLatencyMs: 1, maxLatencyMs: 2, clock: systemClock });
    const started = performance.now();
    const summary = await runPipeline({ source: generateArticles(4), providers: [{ provider, limits: requestLimit(2, 1) }], workers: 5 });
    const elapsedMs = performance.now() - started;
    expect(summary.succeeded).toBe(4);
    expect(summary.calls).toBe(8);
    expect(elapsedMs).toBeGreaterThanOrEqual(3500);
    expect(elapsedMs).toBeLessThan(2 * 3500);
  });

  it('takes no token before every provider is ready(): a call granted while an SDK loads would leave with the ones granted after it', async () => {
    const clock = new ManualClock();
    let loaded!: () => void;
    const loading = new Promise<void>((resolve) => (loaded = resolve));
    const provider = Object.assign(new ScriptedProvider({ name: 'loading', clock, script: [{ latencyMs: 1 }] }), {
      ready: () => loading,
    });
    const other = new ScriptedProvider({ name: 'ready', clock, script: [{ latencyMs: 1 }] });
    const limits = new LocalLimits({ limits: requestLimit(1, 1), clock });
    const acquiredAtMs: number[] = [];
    const acquire = limits.acquire.bind(limits);
    limits.acquire = (cost, options) => {
      acquiredAtMs.push(clock.now());
      return acquire(cost, options);
    };
    const run = runPipeline({
      source: generateArticles(2),
      providers: [
        { provider, limits },
        { provider: other, limits: requestLimit(1, 1) },
      ],
      routes: { summarize: 'loading', sentiment: 'ready' },
      clock,
    });
    await clock.advance(3000);
    expect(acquiredAtMs).toEqual([]);
    expect([provider.calls, other.calls]).toEqual([[], []]);
    loaded();
    const summary = await drive(clock, run);
    expect(acquiredAtMs).toEqual([3000, 3000]);
    expect(provider.calls.map((c) => c.atMs)).toEqual([3000, 4000]);
    // The run is timed from when its providers were ready: loading is not the limits' doing.
    expect(summary).toMatchObject({ succeeded: 2, elapsedMs: 1002 });
  });

  it('stops the whole run when a provider refuses the key: no further call, the articles in flight cancelled', async () => {
    const clock = new ManualClock();
    const refused = new AuthenticationError('401 invalid API key', { status: 401 });
    const provider = new ScriptedProvider({
      name: 'p',
      clock,
      script: [{ latencyMs: 10 }, { latencyMs: 10 }, { latencyMs: 5, error: refused }, { latencyMs: 10 }],
    });
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(20),
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        workers: 4,
        clock,
        onResult: (result) => void results.push(result),
      }),
    );
    // Four summaries went out at once; the third was refused at 5 ms and nothing was sent after it.
    expect(provider.calls.map((call) => call.atMs)).toEqual([0, 0, 0, 0]);
    expect(results.map((r) => r.status).sort()).toEqual(['cancelled', 'cancelled', 'cancelled', 'failed']);
    expect(results.find((r) => r.status === 'failed')!.error).toMatchObject({ type: 'AuthenticationError', task: 'summarize' });
    expect(summary).toMatchObject({ articles: 4, failed: 1, cancelled: 3, interrupted: false });
    expect(summary.stoppedBy).toEqual({ by: 'provider', provider: 'p', type: 'AuthenticationError', message: '401 invalid API key' });
  });

  it('routes tasks to their providers, each behind its own limiter', async () => {
    const clock = new ManualClock();
    const a = new ScriptedProvider({ name: 'a', clock, script: [{ latencyMs: 1 }] });
    const b = new ScriptedProvider({ name: 'b', clock, script: [{ latencyMs: 1 }] });
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(3),
        providers: [
          { provider: a, limits: requestLimit(1, 1) },
          { provider: b, limits: requestLimit(10, 1) },
        ],
        routes: { summarize: 'a', sentiment: 'b' },
        clock,
      }),
    );
    expect(a.calls.every((c) => c.request.task === 'summarize')).toBe(true);
    expect(b.calls.every((c) => c.request.task === 'sentiment')).toBe(true);
    expect(a.calls.map((c) => c.atMs)).toEqual([0, 1000, 2000]);
    expect(summary.providers.map((p) => [p.name, p.calls])).toEqual([
      ['a', 3],
      ['b', 3],
    ]);
  });

  it('rejects a route to an unknown provider with a TasksError naming the task and the providers', async () => {
    const provider = new ScriptedProvider({ name: 'a', clock: systemClock });
    await expect(
      runPipeline({ source: [], providers: [{ provider, limits: requestLimit(1, 1) }], routes: { sentiment: 'nope' } }),
    ).rejects.toThrow('the built-in tasks: task "sentiment" asks for provider "nope", which is not one of the run\'s ("a")');
  });

  it('ends every article as exactly one result: a failed one is a dead letter with its reason and attempts', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 1, error: new ServerError() }] });
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(3),
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        retry: { maxAttempts: 2 },
        clock,
        onResult: (r) => void results.push(r),
      }),
    );
    expect(summary).toMatchObject({ articles: 3, failed: 3, deadLetters: 3, calls: 6, retries: 3 });
    expect(results.map((r) => r.id).sort()).toEqual(['1', '2', '3']);
    expect(results[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      error: { type: 'ServerError', task: 'summarize', message: expect.stringMatching(/gave up after 2 attempts/) },
    });
  });

  it('counts network errors (refused, reset) in the summary and per provider', async () => {
    const clock = new ManualClock();
    const refused = new NetworkError('network error (ECONNREFUSED)', { code: 'ECONNREFUSED' });
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ error: refused }, { error: refused }, {}] });
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(1), providers: [{ provider, limits: requestLimit(Infinity, 1) }], clock }),
    );
    expect(summary).toMatchObject({ succeeded: 1, calls: 4, retries: 2, networkErrors: 2, serverErrors: 0, timeouts: 0 });
    expect(summary.providers[0]).toMatchObject({ networkErrors: 2 });
  });

  it('fails an article whose calls outlast --timeout with a TimeoutError', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ hang: true }] });
    const results: ArticleResult[] = [];
    await drive(
      clock,
      runPipeline({
        source: generateArticles(1),
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        timeoutMs: 250,
        clock,
        onResult: (r) => void results.push(r),
      }),
    );
    expect(results).toMatchObject([{ status: 'failed', elapsedMs: 250, error: { type: 'TimeoutError' } }]);
  });

  it("retries a call that hangs once within the article's timeout when the provider has a callTimeoutMs", async () => {
    const run = async (callTimeoutMs: number | undefined) => {
      const clock = new ManualClock();
      const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ hang: true }, { latencyMs: 100 }] });
      const results: ArticleResult[] = [];
      const summary = await drive(
        clock,
        runPipeline({
          source: generateArticles(1),
          providers: [{ provider, limits: requestLimit(Infinity, 1), callTimeoutMs }],
          timeoutMs: 3000,
          clock,
          onResult: (r) => void results.push(r),
        }),
      );
      return { summary, result: results[0]! };
    };
    const cut = await run(500);
    expect(cut.result).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(cut.result.elapsedMs).toBeLessThan(3000);
    expect(cut.summary).toMatchObject({ succeeded: 1, calls: 3, retries: 1, timeouts: 1 });
    // Without it, the hang takes the article's whole budget and nothing is retried.
    const whole = await run(undefined);
    expect(whole.result).toMatchObject({ status: 'failed', attempts: 1, elapsedMs: 3000, error: { type: 'TimeoutError' } });
  });

  it('on abort stops intake and ends the articles in flight as cancelled', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 100 }] });
    const controller = new AbortController();
    const results: ArticleResult[] = [];
    const run = runPipeline({
      source: generateArticles(1_000_000),
      providers: [{ provider, limits: requestLimit(10, 1) }],
      workers: 3,
      clock,
      signal: controller.signal,
      onResult: (r) => void results.push(r),
    });
    await clock.advance(1000);
    controller.abort(new CancelledError('interrupted'));
    const summary = await drive(clock, run);
    expect(summary.interrupted).toBe(true);
    expect(summary.cancelled).toBeGreaterThan(0);
    expect(summary.succeeded + summary.failed + summary.cancelled).toBe(summary.articles);
    expect(results).toHaveLength(summary.articles);
    expect(results.filter((r) => r.status === 'cancelled').every((r) => r.error?.type === 'CancelledError')).toBe(true);
  });

  it('accounts for every one of 1,000 stress-profile articles', async () => {
    const clock = new ManualClock();
    const provider = new SimulatedProvider({ profile: 'stress', minLatencyMs: 0, maxLatencyMs: 20, clock, seed: 7 });
    const ids = new Set<string>();
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(1000),
        providers: [{ provider, limits: requestLimit(200, 10) }],
        workers: 50,
        timeoutMs: 2000,
        clock,
        onResult: (r) => void ids.add(r.id),
      }),
      5,
    );
    expect(ids.size).toBe(1000);
    expect(summary.articles).toBe(1000);
    expect(summary.succeeded + summary.failed).toBe(1000);
    expect(summary.failed).toBeGreaterThan(0);
    expect(summary.rateLimited).toBe(provider.rateLimited);
    expect(summary.calls).toBe(provider.calls);
  });
});

describe('runPipeline() - a 404', () => {
  const notFound = () => new BadRequestError('404 request rejected: Invalid URL (POST /chat/completions)', { status: 404 });
  const run = async (script: readonly Step[]) => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script });
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(10),
        total: 10,
        providers: [{ provider, limits: requestLimit(100, 1) }],
        workers: 1,
        clock,
        onResult: (r) => void results.push(r),
      }),
    );
    return { summary, results, provider };
  };

  it('before the provider has answered anything stops the run: the address or the model is wrong', async () => {
    const { summary, provider } = await run([{ error: notFound() }]);
    expect(provider.calls).toHaveLength(1);
    expect(summary.stoppedBy).toMatchObject({
      by: 'provider',
      provider: 'p',
      type: 'BadRequestError',
      message: expect.stringMatching(/^404 /),
    });
    expect(summary.notStarted).toBe(9);
  });

  it("after an answer is one request's: a dead letter, not retried, and the run goes on", async () => {
    // The first article's two calls succeed; the third call (article 2's summarize) is a 404; then all succeed.
    const { summary, results } = await run([{}, {}, { error: notFound() }, {}]);
    expect(summary.stoppedBy).toBeUndefined();
    expect(summary).toMatchObject({ succeeded: 9, failed: 1, calls: 20 - 1 });
    expect(results.find((r) => r.status === 'failed')).toMatchObject({ attempts: 1, error: { type: 'BadRequestError' } });
  });
});
