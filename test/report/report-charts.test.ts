// What the charts draw, read from their specs (and, for the axes, from the SVG vega draws of them).
import { describe, expect, it } from 'vitest';
import type { LimitSpec } from '../../src/quota/provider-limits.ts';
import { reportCharts, type ReportChart } from '../../src/report/report-charts.ts';
import { renderReportMain } from '../../src/report/report-page.ts';
import { seriesKey, type RunRecord } from '../../src/report/run-recorder.ts';

/** A record of one provider `sim` with `limits`, its series as given, a second a bucket. */
function recordOf(options: {
  readonly limits: readonly LimitSpec[];
  readonly series: Readonly<Record<string, readonly number[]>>;
  readonly elapsedMs: number;
  readonly ended: boolean;
}): RunRecord {
  const buckets = Math.max(0, ...Object.values(options.series).map((values) => values.length));
  return {
    startedAt: '2025-01-01T00:00:00.000Z',
    elapsedMs: options.elapsedMs,
    bucketMs: 1000,
    buckets,
    providers: [{ name: 'sim', limits: options.limits }],
    series: options.series,
    latencyMs: [],
    waitMs: [],
    tasks: [],
    totals: {
      articles: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
      calls: 0,
      retries: 0,
      repairs: 0,
      rateLimited: 0,
      inFlight: 0,
      tokensUsed: 0,
    },
    ended: options.ended,
    version: 1,
  };
}

type Layer = { data: { values: Record<string, unknown>[] }; mark: { type: string }; encoding: Record<string, unknown> };
const layersOf = (chart: ReportChart) => (chart.spec as unknown as { layer: Layer[] }).layer;
const chartOf = (record: RunRecord, id: string) => reportCharts(record).find((chart) => chart.id === id)!;

describe('reportCharts()', () => {
  it('draws what a token limit allowed — its burst on top of its rate — not its rate alone: a minute with its burst in it stays under it', () => {
    // 1,000 tokens/s, burst 20,000: the whole burst in the first second, then the rate, for 90 s.
    const limits: LimitSpec[] = [{ kind: 'tokens', rate: 1000, burst: 20_000 }];
    const input = Array.from({ length: 90 }, (_, second) => (second === 0 ? 20_000 : 1000));
    const record = recordOf({ limits, series: { [seriesKey('sim', 'input-tokens')]: input }, elapsedMs: 90_000, ended: true });
    const layers = layersOf(chartOf(record, 'tokens'));
    const tokens = layers[0]!.data.values.filter((row) => row.series === 'sim tokens');
    const limit = layers.slice(1).find((layer) => layer.mark.type !== 'text')!.data.values;
    // The limit at `t`: a level (a rule) or, where it moves, its step at `t`.
    const allowedAt = (t: number) =>
      limit.reduce((found, row) => (row.t === undefined || (row.t as number) <= t ? (row.value as number) : found), Number.NaN);
    // The busiest minute holds the burst and 59 s of the rate: 79,000, over the rate's 60,000 a minute.
    expect(Math.max(...tokens.map((row) => row.value as number))).toBe(79_000);
    for (const row of tokens) expect(row.value as number, `at ${String(row.t)} s`).toBeLessThanOrEqual(allowedAt(row.t as number));
    // From the burst at the start to burst + a minute of the rate once a minute has gone.
    expect(allowedAt(0)).toBe(21_000);
    expect(allowedAt(80)).toBe(80_000);
  });

  it('draws the 429s and the retries apart, each with a dash of its own, where every 429 is retried and the lines are one', () => {
    const once = [0, 2, 1, 0];
    const record = recordOf({
      limits: [],
      series: { [seriesKey('sim', 'rate-limited')]: once, [seriesKey('sim', 'retries')]: once },
      elapsedMs: 4000,
      ended: true,
    });
    const layers = layersOf(chartOf(record, 'trouble'));
    const line = layers.find((layer) => layer.encoding.strokeDash !== undefined)!;
    const dash = line.encoding.strokeDash as { field: string; scale: { domain: string[]; range: number[][] } } | undefined;
    expect(dash?.field).toBe('series');
    const dashOf = (series: string) => dash!.scale.range[dash!.scale.domain.indexOf(series)];
    expect(dashOf('429s')).toBeDefined();
    expect(dashOf('retries')).toBeDefined();
    expect(dashOf('429s')).not.toEqual(dashOf('retries'));
    // The 429s also drawn first, wider, as a band the dashed retries lie on: where they are one, both show.
    const band = layers[0]!;
    expect(layers.indexOf(band)).toBeLessThan(layers.indexOf(line));
    expect(new Set(band.data.values.map((row) => row.series))).toEqual(new Set(['429s']));
    expect((band.mark as { strokeWidth?: number }).strokeWidth).toBeGreaterThan(2);
  });

  it('while the run goes, draws the seconds that are whole: the one still filling is no drop', () => {
    // Ten calls a second; 50 ms into the third second, none of its calls made yet.
    const calls = [10, 10, 0];
    const record = recordOf({ limits: [], series: { [seriesKey('sim', 'calls')]: calls }, elapsedMs: 2050, ended: false });
    const drawn = layersOf(chartOf(record, 'calls'))[0]!.data.values.map((row) => row.value);
    expect(drawn.length).toBeGreaterThan(0);
    for (const value of drawn) expect(value).toBe(10);
    // Once the run has ended, its last part-second is drawn, at its rate over the part it lasted.
    const ended = recordOf({ limits: [], series: { [seriesKey('sim', 'calls')]: [10, 10, 1] }, elapsedMs: 2050, ended: true });
    expect(layersOf(chartOf(ended, 'calls'))[0]!.data.values.map((row) => row.value)).toEqual([10, 10, 20, 20]);
  });

  it('gives a chart of zeros an axis that reads as one: no tick of 0.000000', async () => {
    const record = recordOf({ limits: [], series: { 'in-flight': [0, 0, 0] }, elapsedMs: 3000, ended: true });
    const main = await renderReportMain(record, { title: 'zeros', live: false });
    expect(main).toContain('id="chart-in-flight"');
    expect(main).not.toMatch(/>0\.0{4,}</);
  });
});
