import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import type { RunSummary } from '../../src/pipeline/metrics.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { RunRecorder, seriesKey } from '../../src/report/run-recorder.ts';
import { renderReportMain } from '../../src/report/report-page.ts';
import { TimeBuckets } from '../../src/report/time-buckets.ts';
import { toldRun } from './told-run.ts';
const PROVIDERS = [{ name: 'sim', limits: [{ kind: 'requests' as const, rate: 10, burst: 3 }] }];

/** A called attempt that was sent at `sentAtMs` and answered `latencyMs` later. */
function attempt(sentAtMs: number, latencyMs: number, fields: Partial<AttemptEvent> = {}): AttemptEvent {
  return {
    provider: 'sim',
    task: 'summarize',
    articleId: 'a',
    workerId: 0,
    attempt: 1,
    outcome: 'ok',
    waitMs: 2,
    called: true,
    sentAtMs,
    latencyMs,
    atMs: sentAtMs + latencyMs,
    retryInMs: undefined,
    error: undefined,
    usage: { inputTokens: 100, outputTokens: 20 },
    costUsd: undefined,
    response: undefined,
    repair: 0,
    ...fields,
  };
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe('TimeBuckets', () => {
  it('widens its buckets when a reading lands past the last, adding counts and keeping peaks', () => {
    const buckets = new TimeBuckets(0, 1000, 4);
    const count = buckets.column('count', 'sum');
    const peak = buckets.column('peak', 'max');
    for (let s = 0; s < 4; s++) {
      count.add(s * 1000, s + 1);
      peak.raise(s * 1000, 10 * (s + 1));
    }
    expect(buckets.values('count')).toEqual([1, 2, 3, 4]);
    count.add(4000);
    expect(buckets.bucketMs).toBe(2000);
    expect(buckets.values('count')).toEqual([3, 7, 1]);
    expect(buckets.values('peak')).toEqual([20, 40, 0]);
  });

  it('rejects a bucket count under 2', () => {
    expect(() => new TimeBuckets(0, 1000, 1)).toThrow(TypeError);
  });
});

describe('RunRecorder', () => {
  it("keeps a long run's series within its bucket count, losing no call", () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS, maxBuckets: 600 });
    const run = toldRun([recorder], { clock });
    // A call a second for a day.
    const calls = 86_400;
    for (let i = 0; i < calls; i++) {
      clock.set(i * 1000);
      run.send();
      run.attempt(attempt(i * 1000, 50));
    }
    const record = recorder.record();
    expect(record.buckets).toBeLessThanOrEqual(600);
    expect(record.bucketMs).toBe(256_000);
    expect(sum(record.series[seriesKey('sim', 'calls')]!)).toBe(calls);
    expect(sum(record.series[seriesKey('sim', 'input-tokens')]!)).toBe(calls * 100);
    for (const values of Object.values(record.series)) expect(values.length).toBe(record.buckets);
    expect(JSON.stringify(record).length).toBeLessThan(100_000);
  });

  it('draws calls in flight in every bucket they were in flight, not only where they began or ended', () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], { clock });
    for (let i = 0; i < 3; i++) run.send();
    clock.set(5500);
    for (let i = 0; i < 3; i++) run.attempt(attempt(0, 5500));
    clock.set(7200);
    const record = recorder.record();
    expect(record.series['in-flight']).toEqual([3, 3, 3, 3, 3, 3, 0, 0]);
    expect(record.totals.inFlight).toBe(0);
  });

  it('counts 429s, retries and errors where they happened, calls where they were sent', () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], { clock });
    run.attempt(attempt(100, 1200, { outcome: 'rate-limited', retryInMs: 500, usage: undefined }));
    run.attempt(attempt(1800, 300, { attempt: 2 }));
    run.attempt(attempt(2500, 0, { outcome: 'limiter-timeout', called: false, sentAtMs: undefined }));
    clock.set(3000);
    const { series, totals, tasks } = recorder.record();
    expect(series[seriesKey('sim', 'calls')]).toEqual([1, 1, 0, 0]);
    expect(series[seriesKey('sim', 'rate-limited')]).toEqual([0, 1, 0, 0]);
    expect(series[seriesKey('sim', 'retries')]).toEqual([0, 1, 0, 0]);
    expect(series[seriesKey('sim', 'errors')]).toEqual([0, 0, 1, 0]);
    expect(totals).toMatchObject({ calls: 2, retries: 1, rateLimited: 1, tokensUsed: 120 });
    expect(tasks).toEqual([expect.objectContaining({ name: 'summarize', calls: 2, retries: 1, rateLimited: 1, tokensUsed: 120 })]);
  });

  it('counts the repairs, as the summary does: the table, the totals and a series of their own', () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], { clock, tasks: [{ name: 'summarize', route: 'sim' }] });
    run.attempt(attempt(0, 100, { outcome: 'malformed', usage: undefined }));
    run.attempt(attempt(200, 100, { repair: 1 }));
    clock.set(1000);
    const { series, totals, tasks } = recorder.record();
    expect(totals).toMatchObject({ calls: 2, repairs: 1 });
    expect(tasks).toEqual([expect.objectContaining({ name: 'summarize', calls: 2, repairs: 1 })]);
    expect(series[seriesKey('sim', 'repairs')]).toEqual([1, 0]);
    // The summary reads the same tally: what the page shows and what the summary says are one count.
    expect(run.tally.tasks.get('summarize')).toMatchObject({ calls: 2, repairs: 1, unfit: 1, answered: 1 });
  });

  it('draws money from what the budget had spent before the run, and the articles as they ended', async () => {
    const clock = new ManualClock(0);
    const budget = new LocalBudget({ maxUsd: 1, spentUsd: 0.25 });
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], {
      clock,
      budget,
      priced: ['sim'],
      tasks: [
        { name: 'summarize', route: 'sim' },
        { name: 'sentiment', route: 'sim' },
      ],
    });
    run.attempt(attempt(0, 100, { costUsd: 0.001 }));
    clock.set(1500);
    run.result({ id: 'a', title: '', status: 'succeeded', outputs: {}, attempts: 1, elapsedMs: 100, callMs: 100 } as ArticleResult);
    const record = recorder.record();
    expect(record.budget).toEqual({ maxUsd: 1, spentBeforeUsd: 0.25 });
    expect(record.series['cost-nano-usd']).toEqual([1_000_000, 0]);
    expect(record.series.succeeded).toEqual([0, 1]);
    expect(record.totals.costUsd).toBeCloseTo(0.001, 12);
    expect(record.tasks.map((task) => task.name)).toEqual(['summarize', 'sentiment']);
  });

  it('keeps what calls of unknown fate may have cost apart from the cost, and the page says it so', async () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], { clock, priced: ['sim'], tasks: [{ name: 'summarize', route: 'sim' }] });
    run.attempt(attempt(0, 100, { costUsd: 0.001, unknownCostUsd: 0 }));
    // Reset mid-request: perhaps billed, up to its worst case.
    run.attempt(attempt(100, 5, { outcome: 'network-error', usage: undefined, costUsd: 0, unknownCostUsd: 0.002 }));
    const record = recorder.record();
    expect(record.totals.costUsd).toBeCloseTo(0.001, 12);
    expect(record.totals.unknownCostUsd).toBeCloseTo(0.002, 12);
    expect(record.tasks[0]!.unknownCostUsd).toBeCloseTo(0.002, 12);
    expect(record.series['cost-nano-usd']!.reduce((a, b) => a + b, 0)).toBe(1_000_000);
    const page = await renderReportMain(record, { title: 'a run', live: false });
    expect(page).toContain('$0.001, up to $0.002 unknown');
    expect(page).toContain('$0.001 + up to $0.002 unknown');
  });

  it('ends at the summary: its figures in the record, the series to its elapsed time', () => {
    const clock = new ManualClock(0);
    const recorder = new RunRecorder({ clock, providers: PROVIDERS });
    const run = toldRun([recorder], { clock });
    run.attempt(attempt(0, 100));
    const before = recorder.record().version;
    run.end({ elapsedMs: 4200, interrupted: true } as RunSummary, 'interrupted');
    clock.set(60_000);
    const record = recorder.record();
    expect(record.summary?.interrupted).toBe(true);
    expect(record.ended).toBe(true);
    expect(record.elapsedMs).toBe(4200);
    expect(record.buckets).toBe(5);
    expect(record.version).toBeGreaterThan(before);
  });

  it('rejects bad options', () => {
    const clock = new ManualClock(0);
    expect(() => new RunRecorder({ clock, providers: PROVIDERS, bucketMs: 0 })).toThrow('Expected bucketMs');
    expect(() => new RunRecorder({ clock, providers: PROVIDERS, maxBuckets: 1 })).toThrow('Expected maxBuckets');
    expect(() => new RunRecorder({ clock: {} as ManualClock, providers: PROVIDERS })).toThrow('Expected clock');
  });
});
