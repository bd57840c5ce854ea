// The least a run could take, and its efficiency, are true lower bounds: no run of the calls it
// made could end sooner, whatever its task graph, limits, workers and latencies.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { rateFloorMs, RateHistory } from '../../src/quota/rate-history.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { RateLimitError } from '../../src/provider/provider.ts';
import { defineTasks, type TaskSpec } from '../../src/tasks/task-set.ts';
import { drive, ScriptedProvider, type Step } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

const schema = (property: string) =>
  ({ type: 'object', properties: { [property]: { type: 'string' } }, required: [property], additionalProperties: false }) as const;

/** Task `t<i>` depends on the earlier tasks `deps[i]` names (by index). */
function graph(deps: readonly (readonly number[])[]): TaskSpec[] {
  return deps.map((before, i) => ({
    name: `t${i}`,
    prompt: `Task ${i}: {{title}}`,
    schema: schema(`v${i}`),
    ...(before.length > 0 && { dependsOn: before.map((j) => `t${j}`) }),
  }));
}

const articles = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ id: String(i + 1), title: `Title ${i + 1}`, content: `Body ${i + 1}.` }));

/** A float sum of the same terms in another order may differ in its last bits: 1e-9 ms is far below any clock. */
const ROUNDING_MS = 1e-9;

describe('the least possible time', () => {
  it('two independent tasks side by side: each article takes one call, not two in series (no efficiency over 100 %)', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs: 100 }] });
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(5),
        tasks: defineTasks(graph([[], []])),
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        workers: 5,
        clock,
      }),
    );
    expect(summary.elapsedMs).toBe(100);
    expect(summary.lowerBoundsMs).toEqual({ rate: 0, latency: 100, workers: 100 });
    expect(summary.efficiency).toBe(1);
  });

  it('a diamond: its longest chain (a 30 ms and a 70 ms task side by side, then 50 ms) is 120 ms, over 2 workers for 4 articles', async () => {
    const clock = new ManualClock();
    // Calls arrive in order per article: the two first tasks (30 ms, 70 ms), then the last (50 ms).
    const provider = {
      name: 'p',
      async call(request: { task: string }, options: { signal?: AbortSignal } = {}) {
        const latencyMs = { t0: 30, t1: 70, t2: 50 }[request.task]!;
        await new Promise<void>((resolve, reject) => {
          const cancel = clock.setTimer(latencyMs, resolve);
          options.signal?.addEventListener('abort', () => {
            cancel();
            reject(options.signal!.reason);
          });
        });
        return { output: { [`v${request.task.slice(1)}`]: 'x' } };
      },
    };
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(4),
        tasks: defineTasks(graph([[], [], [0, 1]])),
        providers: [{ provider, limits: requestLimit(Infinity, 1) }],
        workers: 2,
        clock,
      }),
    );
    expect(summary.succeeded).toBe(4);
    expect(summary.lowerBoundsMs).toEqual({ rate: 0, latency: 120, workers: 240 });
    expect(summary.elapsedMs).toBe(240);
    expect(summary.efficiency).toBe(1);
  });

  it('the rate bound follows the adaptive rate down: at the rates allowed, never past the elapsed time', async () => {
    const clock = new ManualClock();
    // Every third call a 429: the adaptive rate cuts the rate from 40/s.
    const script: Step[] = Array.from({ length: 300 }, (_, i) =>
      i % 3 === 2 ? { latencyMs: 5, error: new RateLimitError(undefined, {}) } : { latencyMs: 5 },
    );
    const provider = new ScriptedProvider({ name: 'p', clock, script });
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(60),
        providers: [{ provider, limits: requestLimit(40, 1), adaptive: {} }],
        workers: 5,
        timeoutMs: 60_000,
        retry: { maxAttempts: 10 },
        clock,
      }),
      5,
    );
    const [p] = summary.providers;
    expect(p!.adaptive).toBe(true);
    expect(p!.finalRate).toBeLessThan(40);
    // Above what the configured rate alone would say, and still a lower bound.
    expect(p!.rateFloorMs).toBeGreaterThan(((p!.calls - 1) * 1000) / 40);
    expect(summary.boundBy).toBe('rate');
    expect(summary.leastElapsedMs).toBeLessThanOrEqual(summary.elapsedMs + ROUNDING_MS);
  });

  it('holds least ≤ elapsed for any task graph, rate, burst, workers, latencies and 429s', async () => {
    const settings = fc.record({
      deps: fc
        .integer({ min: 1, max: 5 })
        .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => fc.subarray(Array.from({ length: i }, (__, j) => j))))),
      articles: fc.integer({ min: 1, max: 8 }),
      workers: fc.integer({ min: 1, max: 6 }),
      rate: fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 200 })),
      burst: fc.integer({ min: 1, max: 5 }),
      adaptive: fc.boolean(),
      steps: fc.array(
        fc
          .record({ latencyMs: fc.integer({ min: 0, max: 60 }), limited: fc.boolean() })
          .map(({ latencyMs, limited }) => ({ latencyMs, limited })),
        { minLength: 1, maxLength: 40 },
      ),
      limitedShare: fc.integer({ min: 0, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(settings, async (s) => {
        const clock = new ManualClock();
        // Some calls answer 429 (with no hint): retried, and cutting an adaptive rate.
        const script: Step[] = s.steps.map(({ latencyMs, limited }, i) =>
          limited && i % 5 < s.limitedShare ? { latencyMs, error: new RateLimitError(undefined, {}) } : { latencyMs },
        );
        const provider = new ScriptedProvider({ name: 'p', clock, script });
        const summary = await drive(
          clock,
          runPipeline({
            source: articles(s.articles),
            tasks: defineTasks(graph(s.deps)),
            providers: [{ provider, limits: requestLimit(s.rate, s.burst), ...(s.adaptive && s.rate !== Infinity && { adaptive: {} }) }],
            workers: s.workers,
            timeoutMs: 20_000,
            retry: { maxAttempts: 3 },
            clock,
          }),
        );
        for (const bound of Object.values(summary.lowerBoundsMs)) expect(bound).toBeLessThanOrEqual(summary.elapsedMs + ROUNDING_MS);
        expect(summary.leastElapsedMs).toBeLessThanOrEqual(summary.elapsedMs + ROUNDING_MS);
        if (summary.efficiency !== null) expect(summary.efficiency).toBeLessThanOrEqual(1 + ROUNDING_MS);
      }),
      { numRuns: 150 },
    );
  });
});

describe('rateFloorMs()', () => {
  it('is (calls − burst) / rate at one rate, and 0 when the burst covers the calls', () => {
    expect(rateFloorMs([{ atMs: 0, rate: 10 }], 0, 11, 1)).toBe(1000);
    expect(rateFloorMs([{ atMs: -50, rate: 10 }], 0, 3, 3)).toBe(0);
    expect(rateFloorMs([{ atMs: 0, rate: Infinity }], 0, 100, 1)).toBe(0);
  });

  it('adds up the tokens each rate allowed in its time', () => {
    // 10/s for a second (10 tokens), then 2/s: 5 more take 2.5 s.
    const moves = [
      { atMs: 0, rate: 10 },
      { atMs: 1000, rate: 2 },
    ];
    expect(rateFloorMs(moves, 0, 16, 1)).toBe(3500);
    // A rate of 0 for a while allows nothing then.
    expect(
      rateFloorMs(
        [
          { atMs: 0, rate: 0 },
          { atMs: 400, rate: 10 },
        ],
        0,
        2,
        1,
      ),
    ).toBe(500);
    expect(rateFloorMs([{ atMs: 0, rate: 0 }], 0, 2, 1)).toBe(Infinity);
  });
});

describe('RateHistory', () => {
  it('keeps each move; moves at one instant keep the higher rate', () => {
    const history = new RateHistory(0, 10);
    history.record(5, 8);
    history.record(5, 9);
    history.record(7, 9);
    history.record(9, 12);
    expect(history.moves).toEqual([
      { atMs: 0, rate: 10 },
      { atMs: 5, rate: 9 },
      { atMs: 9, rate: 12 },
    ]);
  });

  it('past 1,024 moves merges neighbours at the higher rate: the floor it gives only falls, never past the true one', () => {
    const history = new RateHistory(0, 10);
    const exact = [{ atMs: 0, rate: 10 }];
    for (let i = 1; i <= 3000; i++) {
      const rate = 5 + (i % 7);
      history.record(i * 10, rate);
      if (rate !== exact.at(-1)!.rate) exact.push({ atMs: i * 10, rate });
    }
    expect(history.moves.length).toBeLessThanOrEqual(1024);
    for (const calls of [10, 100, 200, 250]) {
      const merged = rateFloorMs(history.moves, 0, calls, 1);
      const truth = rateFloorMs(exact, 0, calls, 1);
      expect(merged).toBeLessThanOrEqual(truth);
      expect(merged).toBeGreaterThan(truth * 0.5);
    }
  });
});
