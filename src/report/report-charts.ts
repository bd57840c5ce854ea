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
/** A series' line, px. */
const LINE_WIDTH_PX = 1.5;
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

/**
 * The buckets a chart draws: every one once the run has ended — the last as far as the run went —
 * but while it goes, only those whole: the second still filling would read as a drop.
 */
function shownBuckets(record: RunRecord): number {
  return record.ended ? record.buckets : Math.min(record.buckets, Math.floor(record.elapsedMs / record.bucketMs));
}

/** Where the charts' lines end, s: the run's end, or while it goes the end of the last whole bucket. */
function shownUntilS(record: RunRecord): number {
  return record.ended ? record.elapsedMs / 1000 : (shownBuckets(record) * record.bucketMs) / 1000;
}

/** The seconds a bucket covers: a whole bucket, or the part of the last one an ended run reached. */
function bucketSeconds(record: RunRecord, index: number): number {
  const startMs = index * record.bucketMs;
  return Math.max(1, Math.min(record.bucketMs, record.elapsedMs - startMs)) / 1000;
}

/** Rows `{ t, series, value }` of a series scaled per bucket (by `perBucket(value, index)`), plus a closing point at the end. */
function rows(record: RunRecord, key: string, series: string, perBucket: (value: number, index: number) => number) {
  const values = (record.series[key] ?? []).slice(0, shownBuckets(record));
  const out = values.map((value, index) => ({ t: (index * record.bucketMs) / 1000, series, value: perBucket(value, index) }));
  if (out.length > 0) out.push({ ...out.at(-1)!, t: Math.max(out.at(-1)!.t, shownUntilS(record)) });
  return out;
}

/**
 * The y scale of values that may all be 0 (nothing yet, nothing of the kind): from 0 to 1 then,
 * rather than a span of nothing, whose ticks read `0.000000`.
 */
function yScale(values: readonly number[]): { scale?: { domain: [number, number] } } {
  return values.some((value) => value > 0) ? {} : { scale: { domain: [0, 1] } };
}

/** A limit drawn on a time chart: a level (`value`), or what it allowed at each moment (`values`, a point per bucket). */
interface DrawnLimit {
  readonly series: string;
  readonly label: string;
  readonly value?: number;
  readonly values?: readonly { readonly t: number; readonly value: number }[];
}

/**
 * A line chart over time, a step line per series, with each limit dashed in its series' colour: a
 * level as a rule, a limit that moves as a step line of its own. `strokes` gives series a dash
 * and a width of their own, where lines of several series may lie on one another.
 */
function timeChart(
  record: RunRecord,
  id: string,
  title: string,
  yTitle: string,
  data: readonly { t: number; series: string; value: number }[],
  limits: readonly DrawnLimit[],
  mark: 'line' | 'area' = 'line',
  strokes?: ReadonlyMap<string, { readonly dash: readonly number[]; readonly widthPx: number }>,
): ReportChart {
  const names = [...new Set([...data.map((d) => d.series), ...limits.map((l) => l.series)])];
  const color = {
    field: 'series',
    type: 'nominal',
    title: null,
    scale: { domain: names },
    legend: { orient: 'bottom', columns: 3, labelLimit: 300 },
  };
  const levels = limits.filter((limit) => limit.values === undefined).map(({ series, value, label }) => ({ series, value: value!, label }));
  const moving = limits.filter((limit) => limit.values !== undefined);
  const movingRows = moving.flatMap(({ series, values }) => values!.map(({ t, value }) => ({ t, series, value })));
  const y = {
    field: 'value',
    type: 'quantitative',
    title: yTitle,
    ...yScale([...data.map((d) => d.value), ...levels.map((l) => l.value), ...movingRows.map((row) => row.value)]),
  };
  // Series that may lie on one another, each drawn in a dash of its own (solid otherwise)…
  const stroke =
    strokes === undefined
      ? {}
      : {
          strokeDash: {
            field: 'series',
            type: 'nominal',
            title: null,
            scale: { domain: names, range: names.map((name) => [...(strokes.get(name)?.dash ?? [1, 0])]) },
          },
        };
  // …and those wider than a line drawn first, as a band the others lie on.
  const wide = [...(strokes ?? [])].filter(([, { widthPx }]) => widthPx > LINE_WIDTH_PX);
  const layers: Record<string, unknown>[] = wide.map(([series, { widthPx }]) => ({
    data: { values: data.filter((d) => d.series === series) },
    mark: { type: 'line', interpolate: 'step-after', strokeWidth: widthPx },
    encoding: { x: timeAxis(record), y, color },
  }));
  layers.push({
    data: { values: data },
    mark:
      mark === 'line'
        ? { type: 'line', interpolate: 'step-after', strokeWidth: LINE_WIDTH_PX }
        : { type: 'area', interpolate: 'step-after', opacity: 0.6 },
    encoding: { x: timeAxis(record), y, color, ...stroke },
  });
  if (levels.length > 0) {
    layers.push(
      {
        data: { values: levels },
        mark: { type: 'rule', strokeDash: LIMIT_DASH, strokeWidth: 1.5 },
        encoding: { y: { field: 'value', type: 'quantitative' }, color },
      },
      {
        data: { values: levels },
        mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 4, dy: -2, fontSize: 10 },
        encoding: { x: { datum: 0, type: 'quantitative' }, y: { field: 'value', type: 'quantitative' }, text: { field: 'label' }, color },
      },
    );
  }
  if (moving.length > 0) {
    const labels = moving.flatMap(({ series, values, label }) => (values!.length === 0 ? [] : [{ ...values!.at(-1)!, series, label }]));
    layers.push(
      {
        data: { values: movingRows },
        mark: { type: 'line', interpolate: 'step-after', strokeDash: LIMIT_DASH, strokeWidth: 1.5 },
        encoding: { x: timeAxis(record), y: { field: 'value', type: 'quantitative' }, color },
      },
      {
        data: { values: labels },
        mark: { type: 'text', align: 'right', baseline: 'bottom', dy: -2, fontSize: 10 },
        encoding: { x: { field: 't', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' }, text: { field: 'label' }, color },
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
  const limits: DrawnLimit[] = record.providers.flatMap((p) => {
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

/**
 * Tokens in the minute up to each moment as the providers reported them, against what each token
 * limit allowed in that minute: a token bucket lets its burst go at once on top of its rate, so in
 * a window of `w` it allows `burst + rate·w` — the first minute's line climbs from the burst, and a
 * minute with its burst in it may pass `rate·60` without the limit broken.
 */
function tokensChart(record: RunRecord): ReportChart | undefined {
  const data: { t: number; series: string; value: number }[] = [];
  const limits: DrawnLimit[] = [];
  const shown = shownBuckets(record);
  for (const p of record.providers) {
    for (const { kind, name, keys } of TOKEN_SERIES) {
      const limit = limitOf(p.limits, kind);
      // Total tokens always; input or output alone only against a limit of their own.
      if (kind !== 'tokens' && limit === undefined) continue;
      const series = `${p.name} ${name}`;
      const sums = sumSeries(
        record,
        keys.map((key) => seriesKey(p.name, key)),
      ).slice(0, shown);
      data.push(...perMinute(record, sums).map((value, index) => ({ t: (index * record.bucketMs) / 1000, series, value })));
      if (limit !== undefined) {
        const values = sums.map((_, index) => ({ t: (index * record.bucketMs) / 1000, value: allowedPerMinute(record, limit, index) }));
        if (values.length > 0) values.push({ ...values.at(-1)!, t: Math.max(values.at(-1)!.t, shownUntilS(record)) });
        const label = `${series} limit ${round(limit.rate * 60)}/min + burst ${round(limit.burst)}`;
        limits.push({ series, label, values });
      }
    }
  }
  if (limits.length === 0 && data.every((d) => d.value === 0)) return undefined;
  return timeChart(
    record,
    'tokens',
    'Tokens in the minute up to each moment, against what the token limits allowed in it',
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

/**
 * What a token bucket of `limit` allowed in the window {@link perMinute} counts at bucket `index`:
 * `burst + rate·w`, `w` the window's length — the minute, or the run so far while it is shorter —
 * scaled down to a minute as the tokens are where a bucket is longer.
 */
function allowedPerMinute(record: RunRecord, limit: { readonly rate: number; readonly burst: number }, index: number): number {
  if (record.bucketMs >= 60_000) return ((limit.burst + (limit.rate * record.bucketMs) / 1000) * 60_000) / record.bucketMs;
  const windowMs = Math.min(60_000, (index + 1) * record.bucketMs);
  return limit.burst + (limit.rate * windowMs) / 1000;
}

function sumSeries(record: RunRecord, keys: readonly string[]): number[] {
  const sums = new Array<number>(record.buckets).fill(0);
  for (const key of keys) {
    for (const [index, value] of (record.series[key] ?? []).entries()) sums[index]! += value;
  }
  return sums;
}

/**
 * The dash and width of each kind of trouble: where a 429 is retried at once, its line and the
 * retries' are one, and both must show — the 429s wide and solid, the retries dashed over them.
 */
const TROUBLE_STROKES: Readonly<Record<string, { readonly dash: readonly number[]; readonly widthPx: number }>> = {
  '429s': { dash: [1, 0], widthPx: 4 },
  retries: { dash: [6, 3], widthPx: 1.5 },
  repairs: { dash: [2, 2], widthPx: 1.5 },
  errors: { dash: [1, 0], widthPx: 1.5 },
};

/** 429s, retries, repairs and errors per bucket, per provider when there are several, and the articles that failed. */
function troubleChart(record: RunRecord): ReportChart {
  const several = record.providers.length > 1;
  const strokes = new Map<string, { readonly dash: readonly number[]; readonly widthPx: number }>();
  const data = record.providers.flatMap((p) =>
    (
      [
        ['rate-limited', '429s'],
        ['retries', 'retries'],
        ['repairs', 'repairs'],
        ['errors', 'errors'],
      ] as const
    ).flatMap(([key, name]) => {
      // Repairs only where an answer was unfit: a line of zeros says nothing.
      if (key === 'repairs' && !(record.series[seriesKey(p.name, key)] ?? []).some((value) => value > 0)) return [];
      const series = several ? `${p.name} ${name}` : name;
      strokes.set(series, TROUBLE_STROKES[name]!);
      return rows(record, seriesKey(p.name, key), series, (value) => value);
    }),
  );
  data.push(...rows(record, 'failed', 'failed articles', (value) => value));
  const per = formatDuration(record.bucketMs);
  return timeChart(record, 'trouble', `429s, retries, errors and failed articles (per ${per})`, `per ${per}`, data, [], 'line', strokes);
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
  const limits: DrawnLimit[] =
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
        y: { field: 'count', type: 'quantitative', title: unit, ...yScale(values.map((value) => value.count)) },
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
