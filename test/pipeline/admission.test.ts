import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { CancelledError, runPipeline } from '../../src/pipeline/run.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { ScriptedProvider, drive } from '../../src/testing/scripted-provider.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { Admission } from '../../src/pipeline/admission.ts';

/** 200 articles (400 calls) at 20/s, burst 1, latency 1–2 ms, a 5 s timeout: the run that used to fail 200 of 200. */
async function crowdedRun(workers: number) {
  const clock = new ManualClock();
  const provider = new SimulatedProvider({ minLatencyMs: 1, maxLatencyMs: 2, clock });
  return drive(
    clock,
    runPipeline({ source: generateArticles(200), providers: [{ provider, limits: requestLimit(20, 1) }], workers, timeoutMs: 5000, clock }),
    5,
  );
}

describe('Admission - an open circuit', () => {
  /** A breaker that opens on one failure, behind one gate whose articles make `callsPerArticle` calls, each with `budgetMs`. */
  function circuitAdmission(cooldownMs: number, budgetMs: number, callsPerArticle = 1) {
    const clock = new ManualClock();
    const limits = new LocalLimits({ limits: requestLimit(1000, 10), clock });
    const gate = new CallGate({
      provider: new ScriptedProvider({ name: 'p', clock }),
      limits,
      breaker: { failureThreshold: 1, cooldownMs },
      clock,
    });
    const breaker = gate.breaker!;
    const admission = new Admission(Array(callsPerArticle).fill(gate), clock, () => budgetMs, undefined);
    /** Asks for the next article; `at()` is when it was let in, undefined until then. */
    const next = () => {
      let admittedAtMs: number | undefined;
      void admission.admit()!.then(() => (admittedAtMs = clock.now()));
      return { at: () => admittedAtMs };
    };
    return { clock, breaker, admission, next };
  }

  it('starts no article while a provider it needs has its circuit open or half-open: the next starts as the probe closes it', async () => {
    const { clock, breaker, admission, next } = circuitAdmission(2000, 5000, 2);
    expect(admission.admit()).toBeUndefined(); // one under way: it will make the probe
    clock.set(300);
    breaker.acquirePermit().failure(); // opens until 2,300 ms
    const second = next();
    await clock.advance(2100);
    expect(breaker.state.kind).toBe('half-open');
    expect(second.at()).toBeUndefined();
    await clock.advance(100);
    breaker.acquirePermit().success(); // the probe, at 2,500 ms, closes the circuit
    await clock.advance(1);
    expect(second.at()).toBe(2500);
    admission.dispose();
  });

  it('half-open with its probe out, lets no article in until the probe settles', async () => {
    const { clock, breaker, admission, next } = circuitAdmission(1000, 5000);
    expect(admission.admit()).toBeUndefined(); // the article that will probe
    breaker.acquirePermit().failure(); // open until 1,000 ms
    clock.set(1000);
    const probe = breaker.acquirePermit(); // half-open, the probe out
    const second = next();
    await clock.advance(5000);
    expect(second.at()).toBeUndefined();
    probe.success(); // closes the circuit
    await clock.advance(1);
    expect(second.at()).toBe(6000);
    admission.dispose();
  });

  it('holds even the first article while the circuit is open, and lets it in to probe as the circuit turns half-open', async () => {
    const { clock, breaker, admission, next } = circuitAdmission(2000, 500);
    breaker.acquirePermit().failure(); // open until 2,000 ms, longer than an article's budget
    const first = next();
    await clock.advance(1999);
    expect(first.at()).toBeUndefined();
    await clock.advance(1);
    expect(first.at()).toBe(2000);
    admission.dispose();
  });
});

describe('runPipeline() - work that cannot finish does not start', () => {
  it.each([200, 1000])('%d workers: every article succeeds, no call is wasted, and the run takes the rate floor', async (workers) => {
    const summary = await crowdedRun(workers);
    expect(summary).toMatchObject({ articles: 200, succeeded: 200, failed: 0, calls: 400, wastedCalls: 0, boundBy: 'rate' });
    // (400 calls − burst 1) / 20/s = 19.95 s, plus the last call.
    expect(summary.rateFloorMs).toBe(19_950);
    expect(summary.elapsedMs).toBeGreaterThanOrEqual(summary.leastElapsedMs);
    expect(summary.elapsedMs / summary.leastElapsedMs).toBeLessThanOrEqual(1.01);
  });

  it('more workers never mean less done: 5, 50 and 500 workers all finish everything', async () => {
    for (const workers of [5, 50, 500]) expect((await crowdedRun(workers)).succeeded).toBe(200);
  });

  it('still starts an article that cannot finish when nothing else is under way, so the run ends and says why', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs: 1 }] });
    // Two calls at 0.1/s, burst 1: the second cannot come within the 5 s timeout.
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(2), providers: [{ provider, limits: requestLimit(0.1, 1) }], timeoutMs: 5000, clock }),
      50,
    );
    expect(summary).toMatchObject({ articles: 2, failed: 2, failureReasons: { MaxWaitExceededError: 2 } });
    // The second article's summarise call got no token either: one call in all was made and wasted.
    expect(summary).toMatchObject({ calls: 1, wastedCalls: 1 });
  });
});

describe('runPipeline() - the lower bounds and which one held the run', () => {
  const run = async (articles: number, workers: number, rate: number, latencyMs: number) => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs }] });
    return drive(
      clock,
      runPipeline({ source: generateArticles(articles), providers: [{ provider, limits: requestLimit(rate, 1) }], workers, clock }),
    );
  };

  it('is bound by the rate: (8 calls − burst 1) / 2/s + the last call', async () => {
    const summary = await run(4, 5, 2, 2);
    expect(summary).toMatchObject({ boundBy: 'rate', lowerBoundsMs: { rate: 3502, latency: 4, workers: 16 / 5 }, leastElapsedMs: 3502 });
  });

  it("is bound by latency: no rate limit, and each article's two 100 ms calls in series", async () => {
    const summary = await run(2, 5, Infinity, 100);
    expect(summary).toMatchObject({
      boundBy: 'latency',
      lowerBoundsMs: { rate: 0, latency: 200, workers: 80 },
      leastElapsedMs: 200,
      elapsedMs: 200,
    });
    expect(summary.efficiency).toBe(1);
  });

  it('is bound by the workers: 20 calls of 10 ms through one worker', async () => {
    const summary = await run(10, 1, Infinity, 10);
    expect(summary).toMatchObject({
      boundBy: 'workers',
      lowerBoundsMs: { latency: 20, workers: 200 },
      leastElapsedMs: 200,
      elapsedMs: 200,
    });
  });
});

describe('runPipeline() - every requested article accounted for', () => {
  it('counts the articles never started when the run is stopped and the source size is known', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs: 100 }] });
    const controller = new AbortController();
    clock.setTimer(250, () => controller.abort(new CancelledError('interrupted')));
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(40),
        total: 40,
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        workers: 3,
        clock,
        signal: controller.signal,
      }),
    );
    // At 250 ms: three articles done (two calls of 100 ms each), three cancelled mid-call.
    expect(summary).toMatchObject({ articles: 6, succeeded: 3, cancelled: 3, notStarted: 34, interrupted: true });
    expect(summary.succeeded + summary.failed + summary.cancelled + summary.notStarted!).toBe(40);
  });

  it('says nothing of articles never started when the source size is unknown', async () => {
    const clock = new ManualClock();
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(3),
        providers: [{ provider: new ScriptedProvider({ name: 'p', clock }), limits: requestLimit(Infinity, 1) }],
        clock,
      }),
    );
    expect(summary.notStarted).toBeNull();
  });
});
