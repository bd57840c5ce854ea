import type { VegaLiteSpec } from '../bench/chart.ts';
import type { LimitKind } from '../quota/provider-limits.ts';
import { formatDuration } from '../validation/duration.ts';
import { seriesKey, type RecordedBatch, type RecordedBin, type RunRecord } from './run-recorder.ts';

/** One chart of a report: an id for the page, a title, and its vega-lite spec. */
export interface ReportChart {
  readonly id: string;
  readonly title: string;
  readonly spec: VegaLiteSpec;
}

const WIDTH_PX = 460;
const HEIGHT_PX = 200;
/** The limits' lines are dashed, in their series' colour. */
const LIMIT_DASH = [6, 4];

/**
 * The charts of a run's report, from its record: calls per second of each provider against its
 * limit, tokens per minute against the token limits, 429s, retries and errors, calls in flight,
 * articles done, cost against the budget, and how call latencies and limiter waits spread. Charts
 * with nothing to show (no tokens counted, no price) are left out.
 */
export function reportCharts(record: RunRecord): ReportChart[] {
  // A batch run makes no live call: its charts are its batches and what they brought back.
  if (record.batches !== undefined && record.totals.calls === 0) {
    return [batchesChart(record.batches, record), articlesChart(record), costChart(record)].filter(
      (chart): chart is ReportChart => chart !== undefined,
    );
  }
  const charts = [callsChart(record), tokensChart(record), troubleChart(record), inFlightChart(record), articlesChart(record)];
  charts.push(costChart(record));
  charts.push(
    distributionChart('latency', 'Call latency (provider answer time)', record.latencyMs, 'calls'),
    distributionChart('wait', 'Limiter wait before each attempt', record.waitMs, 'attempts'),
  );
  return charts.filter((chart): chart is ReportChart => chart !== undefined);
}

/**
 * A batch run's batches on the run's time axis: each a bar from its submission to its end (to now
 * while it runs), a row per status — `running` while at the provider, then how each ended — and in
 * its row a lane per batch, in the order submitted, so that batches that overlap in time both show.
 */
function batchesChart(batches: readonly RecordedBatch[], record: RunRecord): ReportChart {
  const values = batches.map((batch) => ({
    batch: batch.id,
    rows: batch.rows,
    status: batch.toMs === null ? 'running' : batch.status,
    from: batch.fromMs / 1000,
    to: (batch.toMs ?? record.elapsedMs) / 1000,
  }));
  return {
    id: 'batches',
    title: 'Batches at the provider, from submission to end',
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: WIDTH_PX,
      height: HEIGHT_PX,
      config: { font: 'sans-serif', view: { stroke: '#ccc' } },
      data: { values },
      mark: { type: 'bar', cornerRadius: 2 },
      encoding: {
        x: { ...timeAxis(record), field: 'from' },
        x2: { field: 'to' },
        y: { field: 'status', type: 'nominal', title: null },
        yOffset: { field: 'batch', type: 'nominal', sort: values.map((value) => value.batch) },
        color: { field: 'status', type: 'nominal', legend: null },
        tooltip: [
          { field: 'batch' },
          { field: 'status' },
          { field: 'rows' },
          { field: 'from', title: 'submitted (s)' },
          { field: 'to', title: 'ended (s)' },
        ],
      },
    },
  };
}

/** The time axis: seconds since the run started, the whole run wide. */
function timeAxis(record: RunRecord) {
  return {
    field: 't',
    type: 'quantitative',
    title: 'time since the run started (s)',
    scale: { domain: [0, Math.max(record.buckets * record.bucketMs, record.elapsedMs, 1) / 1000], nice: false },
  } as const;
}

/** The seconds a bucket covers: a whole bucket, or the part of the last one the run has reached. */
function bucketSeconds(record: RunRecord, index: number): number {
  const startMs = index * record.bucketMs;
  return Math.max(1, Math.min(record.bucketMs, record.elapsedMs - startMs)) / 1000;
}

/** Rows `{ t, series, value }` of a series scaled per bucket (by `perBucket(value, index)`), plus a closing point at the end. */
function rows(record: RunRecord, key: string, series: string, perBucket: (value: number, index: number) => number) {
  const values = record.series[key] ?? [];
  const out = values.map((value, index) => ({ t: (index * record.bucketMs) / 1000, series, value: perBucket(value, index) }));
  if (out.length > 0) out.push({ ...out.at(-1)!, t: Math.max(out.at(-1)!.t, record.elapsedMs / 1000) });
  return out;
}

/** A line chart over time, a step line per series, with each limit as a dashed rule in its series' colour. */
function timeChart(
  record: RunRecord,
  id: string,
  title: string,
  yTitle: string,
  data: readonly { t: number; series: string; value: number }[],
  limits: readonly { series: string; value: number; label: string }[],
  mark: 'line' | 'area' = 'line',
): ReportChart {
  const names = [...new Set([...data.map((d) => d.series), ...limits.map((l) => l.series)])];
  const color = {
    field: 'series',
    type: 'nominal',
    title: null,
    scale: { domain: names },
    legend: { orient: 'bottom', columns: 3, labelLimit: 300 },
  };
  const layers: Record<string, unknown>[] = [
    {
      data: { values: data },
      mark:
        mark === 'line'
          ? { type: 'line', interpolate: 'step-after', strokeWidth: 1.5 }
          : { type: 'area', interpolate: 'step-after', opacity: 0.6 },
      encoding: { x: timeAxis(record), y: { field: 'value', type: 'quantitative', title: yTitle }, color },
    },
  ];
  if (limits.length > 0) {
    layers.push(
      {
        data: { values: limits },
        mark: { type: 'rule', strokeDash: LIMIT_DASH, strokeWidth: 1.5 },
        encoding: { y: { field: 'value', type: 'quantitative' }, color },
      },
      {
        data: { values: limits },
        mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 4, dy: -2, fontSize: 10 },
        encoding: { x: { datum: 0, type: 'quantitative' }, y: { field: 'value', type: 'quantitative' }, text: { field: 'label' }, color },
      },
    );
  }
  return {
    id,
    title,
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: WIDTH_PX,
      height: HEIGHT_PX,
      config: { font: 'sans-serif', view: { stroke: '#ccc' } },
      layer: layers,
    },
  };
}

function perSecond(record: RunRecord) {
  return (value: number, index: number) => value / bucketSeconds(record, index);
}

/**
 * Calls per second of each provider — each pool member — against its own request limit, and of
 * each pool, its members' calls together against their limits together (what a pool may send).
 */
function callsChart(record: RunRecord): ReportChart {
  const data = record.providers.flatMap((p) => rows(record, seriesKey(p.name, 'calls'), p.name, perSecond(record)));
  const limits = record.providers.flatMap((p) => {
    const limit = limitOf(p.limits, 'requests');
    return limit === undefined ? [] : [{ series: p.name, value: limit.rate, label: `${p.name} limit ${round(limit.rate)}/s` }];
  });
  for (const pool of record.pools ?? []) {
    const series = `pool ${pool.name}`;
    const summed = Array.from({ length: record.buckets }, (_, index) =>
      pool.members.reduce((sum, member) => sum + (record.series[seriesKey(member, 'calls')]?.[index] ?? 0), 0),
    );
    data.push(...rows({ ...record, series: { [series]: summed } }, series, series, perSecond(record)));
    const memberLimits = pool.members
      .map((member) => record.providers.find((p) => p.name === member))
      .map((p) => p && limitOf(p.limits, 'requests'));
    // A member without a request limit leaves the pool without one.
    if (memberLimits.every((limit) => limit !== undefined)) {
      const rate = memberLimits.reduce((sum, limit) => sum + limit.rate, 0);
      limits.push({ series, value: rate, label: `${series} limit ${round(rate)}/s` });
    }
  }
  const title =
    record.pools === undefined
      ? 'Calls per second, each provider against its limit'
      : 'Calls per second, each provider and pool against its limit';
  return timeChart(record, 'calls', title, 'calls per second', data, limits);
}

const TOKEN_SERIES: readonly { kind: LimitKind; name: string; keys: readonly string[] }[] = [
  { kind: 'tokens', name: 'tokens', keys: ['input-tokens', 'output-tokens'] },
  { kind: 'input-tokens', name: 'input tokens', keys: ['input-tokens'] },
  { kind: 'output-tokens', name: 'output tokens', keys: ['output-tokens'] },
];

/** Tokens per minute as the providers reported them, against each token limit (a limit per second times 60). */
function tokensChart(record: RunRecord): ReportChart | undefined {
  const data: { t: number; series: string; value: number }[] = [];
  const limits: { series: string; value: number; label: string }[] = [];
  for (const p of record.providers) {
    for (const { kind, name, keys } of TOKEN_SERIES) {
      const limit = limitOf(p.limits, kind);
      // Total tokens always; input or output alone only against a limit of their own.
      if (kind !== 'tokens' && limit === undefined) continue;
      const series = `${p.name} ${name}`;
      const sums = sumSeries(
        record,
        keys.map((key) => seriesKey(p.name, key)),
      );
      data.push(...perMinute(record, sums).map((value, index) => ({ t: (index * record.bucketMs) / 1000, series, value })));
      if (limit !== undefined) limits.push({ series, value: limit.rate * 60, label: `${series} limit ${round(limit.rate * 60)}/min` });
    }
  }
  if (limits.length === 0 && data.every((d) => d.value === 0)) return undefined;
  return timeChart(
    record,
    'tokens',
    'Tokens in the minute up to each moment, against the per-minute token limits',
    'tokens per minute',
    data,
    limits,
  );
}

/**
 * Tokens in the minute up to each bucket's end (what a per-minute quota counts), not a bucket's
 * tokens scaled to a minute: a token bucket lets its whole burst go in one second, which scaled
 * would read as sixty times the limit. Buckets of a minute or more are scaled down to one.
 */
function perMinute(record: RunRecord, sums: readonly number[]): number[] {
  if (record.bucketMs >= 60_000) return sums.map((value) => (value * 60_000) / record.bucketMs);
  const window = Math.round(60_000 / record.bucketMs);
  let inWindow = 0;
  return sums.map((value, index) => {
    inWindow += value - (index >= window ? sums[index - window]! : 0);
    return inWindow;
  });
}

function sumSeries(record: RunRecord, keys: readonly string[]): number[] {
  const sums = new Array<number>(record.buckets).fill(0);
  for (const key of keys) {
    for (const [index, value] of (record.series[key] ?? []).entries()) sums[index]! += value;
  }
  return sums;
}

/** 429s, retries and errors per bucket, per provider when there are several, and the articles that failed. */
function troubleChart(record: RunRecord): ReportChart {
  const several = record.providers.length > 1;
  const data = record.providers.flatMap((p) =>
    (
      [
        ['rate-limited', '429s'],
        ['retries', 'retries'],
        ['errors', 'errors'],
      ] as const
    ).flatMap(([key, name]) => rows(record, seriesKey(p.name, key), several ? `${p.name} ${name}` : name, (value) => value)),
  );
  data.push(...rows(record, 'failed', 'failed articles', (value) => value));
  const per = formatDuration(record.bucketMs);
  return timeChart(record, 'trouble', `429s, retries, errors and failed articles (per ${per})`, `per ${per}`, data, []);
}

function inFlightChart(record: RunRecord): ReportChart {
  const data = rows(record, 'in-flight', 'calls in flight (peak)', (value) => value);
  return timeChart(record, 'in-flight', 'Calls in flight (the peak of each bucket)', 'calls in flight', data, [], 'area');
}

/** Articles ended, cumulative, by how they ended. */
function articlesChart(record: RunRecord): ReportChart {
  const data = (['succeeded', 'failed', 'cancelled'] as const).flatMap((status) => {
    let sum = 0;
    return rows(record, status, status, (value) => (sum += value));
  });
  return timeChart(record, 'articles', 'Articles ended (cumulative)', 'articles', data, []);
}

/** Money spent over time (from what was spent before the run) against the budget; none without a price. */
function costChart(record: RunRecord): ReportChart | undefined {
  if (record.totals.costUsd === undefined && record.budget === undefined) return undefined;
  let spent = record.budget?.spentBeforeUsd ?? 0;
  const data = rows(record, 'cost-nano-usd', 'spent', (nano) => (spent += nano / 1e9));
  const limits =
    record.budget === undefined ? [] : [{ series: 'budget', value: record.budget.maxUsd, label: `budget $${record.budget.maxUsd}` }];
  return timeChart(record, 'cost', 'Money spent against the budget (USD, cumulative)', 'USD', data, limits);
}

/** How durations spread: a bar per bin, in order. */
function distributionChart(id: string, title: string, bins: readonly RecordedBin[], unit: string): ReportChart {
  const values = bins.map((bin) => ({ bin: binLabel(bin), count: bin.count }));
  return {
    id,
    title,
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: WIDTH_PX,
      height: HEIGHT_PX,
      config: { font: 'sans-serif', view: { stroke: '#ccc' } },
      data: { values },
      mark: { type: 'bar', color: '#4c78a8' },
      encoding: {
        x: { field: 'bin', type: 'ordinal', title: 'duration', sort: values.map((v) => v.bin), axis: { labelAngle: -30 } },
        y: { field: 'count', type: 'quantitative', title: unit },
        tooltip: [{ field: 'bin' }, { field: 'count' }],
      },
    },
  };
}

function binLabel({ fromMs, toMs }: RecordedBin): string {
  if (toMs === null) return `≥ ${formatDuration(fromMs)}`;
  if (fromMs === 0) return `< ${formatDuration(toMs)}`;
  return `${formatDuration(fromMs)}–${formatDuration(toMs)}`;
}

function limitOf(limits: RunRecord['providers'][number]['limits'], kind: LimitKind) {
  return limits.find((limit) => limit.kind === kind && limit.rate !== Infinity);
}

function round(value: number): string {
  return String(Number(value.toPrecision(4)));
}
