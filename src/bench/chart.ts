import type { ProviderQuota } from '../simulator/simulated.ts';
import { settingColors } from './setting-colors.ts';
import type { SettingResult, SweepResult } from './sweep.ts';
import { textWidthPx } from './text-width.ts';
import { loadChartRenderer } from './chart-renderer.ts';

/**
 * A Vega-Lite specification (vega-lite's `TopLevelSpec`), as JSON: typed loosely here so that the
 * declarations need no vega-lite installed.
 */
export type VegaLiteSpec = Readonly<Record<string, unknown>>;

/** How `benchChartSpec()` and `renderBenchChart()` draw a sweep: titles and how many points a timeline keeps. */
export interface BenchChartOptions {
  /** The chart's title. @default "news-processor bench" */
  readonly title?: string;
  /** A line under the title, e.g. the run flags. @default none */
  readonly subtitle?: string;
  /** Points drawn per grant timeline at most; longer ones are thinned evenly. @default 1000 */
  readonly maxPointsPerSeries?: number;
  /**
   * The quota the provider kept for itself in every run (the simulated provider's `quota`), drawn
   * over the grants as the most it accepts, `burst + rate·t`: a setting whose grants climb above
   * it got 429s.
   * @default none (nothing drawn, as for a quota rate of `Infinity`)
   */
  readonly providerQuota?: ProviderQuota | undefined;
}

const GRANTED = 'calls granted';
const ENVELOPE = 'ideal: burst + rate·t';
const FLOOR = 'rate floor (calls − burst) / rate';
const LEAST = 'rate floor + last call latency';
const PANEL_WIDTH = 640;
const COUNT_WIDTH = 120;
/** Font sizes, px: the text beside the bars (vega's default), axis titles and panel titles (vega-lite's). */
const NOTE_FONT_PX = 11;
const AXIS_TITLE_FONT_PX = 11;
const TITLE_FONT_PX = 13;
const ELAPSED_TITLE = 'Elapsed per setting (bar: median of the repeats; whisker: min–max)';
/** Offset of that text from its bar's end, px; beside the elapsed bars, clear of a marker's half width too. */
const NOTE_DX_PX = 4;
const ELAPSED_NOTE_DX_PX = 8;
/**
 * Height of a setting's row in the bottom panels, px: one line of text with air above and below.
 * Every bottom panel uses it and {@link ROW_PADDING}, so that their rows line up.
 */
const ROW_STEP_PX = 24;
const ROW_PADDING = { paddingInner: 0.2, paddingOuter: 0.1 } as const;
/** Space between panels side by side, beyond what text sticking out of the left one needs, px. */
const PANEL_GAP_PX = 20;
/** What a setting may have cost, each beside the elapsed bars on a scale of its own. */
const COUNTS = [
  { field: 'failed', title: 'failed articles', unit: 'articles', color: '#c62828' },
  { field: 'rateLimited', title: '429s received', unit: 'calls', color: '#ef6c00' },
  { field: 'retries', title: 'retries', unit: 'calls', color: '#757575' },
] as const satisfies readonly { field: keyof SettingResult; title: string; unit: string; color: string }[];
/** The provider quota's line and name: black, apart from every setting's colour. */
const QUOTA_INK = '#111';
/** Calls granted: solid; a setting's ideal envelope: dashed; the provider quota: dotted. */
const LINE_DASHES = [
  [1, 0],
  [6, 4],
  [2, 3],
];

/**
 * The vega-lite spec of a sweep's chart. Top: for each setting, calls granted over time since the
 * run started (a step line, the first run) against the most any limiter may grant, `burst + rate·t`
 * (dashed, same colour; none at rate=inf), and the provider's quota when one is given (dotted,
 * black, named at its end). Bottom, a row per setting: median elapsed (bar, with the min–max over
 * repeats) against the rate floor and the floor plus the last call's latency; beside it the failed
 * articles (dead letters), 429s received and retries of the middle run, each on its own scale so
 * that one lost article shows as plainly as a hundred 429s.
 *
 * Every setting has a colour of its own (see {@link settingColors}), named in one legend. Text goes
 * where nothing else can be: one line per row, spaced by the row height, the panels beside the
 * elapsed bars moved right by the widest text that sticks out of them (see {@link textWidthPx}).
 */
export function benchChartSpec(result: SweepResult, options: BenchChartOptions = {}): VegaLiteSpec {
  const { settings } = result;
  const elapsed = elapsedRows(settings);
  // Both panels span the same time range, so a bar ends under the end of its step line. Rounded
  // here rather than by vega (`nice`), so that where text lands is known exactly.
  const timeEndS = roundUp(Math.max(0.001, ...elapsed.map((e) => e.noteAt)));
  const mostCalls = Math.max(1, ...settings.map((s) => s.grantsMs.length));
  const scales = sharedScales(settings, timeEndS);
  const counts = countColumns(settings);
  const gaps = panelGaps(elapsed, counts, timeEndS);
  const quota = quotaLine(options.providerQuota, timeEndS, mostCalls);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: options.title ?? 'news-processor bench', offset: 14, subtitle: options.subtitle },
    config: { font: 'sans-serif', view: { stroke: '#ccc' }, legend: { labelLimit: 320, symbolSize: 300, symbolStrokeWidth: 2 } },
    // Each panel keeps its own scales (the colours still match: same domain, same range), so the
    // settings legend is drawn once, beside the panel that needs it.
    resolve: {
      scale: { color: 'independent', x: 'independent' },
      legend: { color: 'independent', strokeDash: 'independent', shape: 'independent' },
    },
    spacing: 36,
    vconcat: [
      grantsPanel(settings, options.maxPointsPerSeries ?? 1000, scales, mostCalls, quota),
      {
        resolve: { scale: { color: 'independent', x: 'independent', y: 'independent' } },
        bounds: 'flush',
        spacing: Math.ceil(gaps.elapsedPx),
        hconcat: [
          elapsedPanel(elapsed, floorMarkers(settings), scales),
          { bounds: 'flush', spacing: Math.ceil(gaps.countsPx), hconcat: counts.map((column) => countPanel(column, scales)) },
        ],
      },
    ],
  };
}

/** The encodings every panel shares: one colour per setting, one row per setting, one time axis. */
interface SharedScales {
  readonly time: { readonly domain: readonly [number, number]; readonly nice: false };
  readonly color: Readonly<Record<string, unknown>>;
  readonly row: Readonly<Record<string, unknown>>;
  readonly legend: Readonly<Record<string, unknown>>;
}

function sharedScales(settings: readonly SettingResult[], timeEndS: number): SharedScales {
  const labels = settings.map((s) => s.label);
  const range = settingColors(settings.map((s) => s.setting));
  return {
    time: { domain: [0, timeEndS], nice: false },
    color: { field: 'setting', type: 'nominal', title: 'setting', sort: labels, scale: { domain: labels, range } },
    row: { field: 'setting', type: 'nominal', title: null, sort: labels, scale: ROW_PADDING },
    legend: settingsLegend(settings),
  };
}

/**
 * The top panel's points: for each setting, the cumulative calls granted of its first run (thinned
 * to `maxPoints`, held until the run ended so the line shows where the last answer came in), and
 * its ideal envelope `burst + rate·t` from 0 to the last call (none at rate=inf).
 */
function grantTimeline(settings: readonly SettingResult[], maxPoints: number): Record<string, unknown>[] {
  const timeline: Record<string, unknown>[] = [];
  for (const s of settings) {
    const grants = s.grantsMs;
    const step = Math.max(1, Math.ceil(grants.length / maxPoints));
    timeline.push({ setting: s.label, kind: GRANTED, t: 0, calls: 0 });
    for (let i = 0; i < grants.length; i++) {
      if (i % step === 0 || i === grants.length - 1) timeline.push({ setting: s.label, kind: GRANTED, t: grants[i]! / 1000, calls: i + 1 });
    }
    const firstRun = s.runs[0];
    if (firstRun !== undefined) timeline.push({ setting: s.label, kind: GRANTED, t: firstRun.elapsedMs / 1000, calls: grants.length });
    const { rate, burst } = s.setting;
    if (rate !== Infinity && grants.length > burst) {
      timeline.push({ setting: s.label, kind: ENVELOPE, t: 0, calls: burst });
      timeline.push({ setting: s.label, kind: ENVELOPE, t: (grants.length - burst) / rate, calls: grants.length });
    }
  }
  return timeline;
}

/** Calls granted over time, the envelopes, and the provider quota's line with its name. */
function grantsPanel(
  settings: readonly SettingResult[],
  maxPoints: number,
  scales: SharedScales,
  mostCalls: number,
  quota: ReturnType<typeof quotaLine>,
): Record<string, unknown> {
  const lineKinds = quota === undefined ? [GRANTED, ENVELOPE] : [GRANTED, ENVELOPE, quota.kind];
  const dash = {
    field: 'kind',
    type: 'nominal',
    title: 'line',
    scale: { domain: lineKinds, range: LINE_DASHES.slice(0, lineKinds.length) },
    legend: { symbolStrokeColor: '#333' },
  } as const;
  const layers: Record<string, unknown>[] = [
    {
      name: 'grants',
      transform: [{ filter: { field: 'kind', equal: GRANTED } }],
      mark: { type: 'line', interpolate: 'step-after', strokeWidth: 2 },
      encoding: { strokeDash: dash },
    },
    {
      name: 'envelope',
      transform: [{ filter: { field: 'kind', equal: ENVELOPE } }],
      mark: { type: 'line', strokeWidth: 1.5, opacity: 0.8 },
      encoding: { strokeDash: dash },
    },
  ];
  if (quota !== undefined) {
    const ink = { color: { value: QUOTA_INK } };
    const label = { data: { values: [quota.points[1]] }, encoding: { ...ink, text: { value: quota.text } } };
    const font = { type: 'text', ...quota.labelPlacement, fontSize: NOTE_FONT_PX, fontWeight: 'bold' };
    layers.push(
      { name: 'quota', data: { values: quota.points }, mark: { type: 'line', strokeWidth: 2.5 }, encoding: { ...ink, strokeDash: dash } },
      // Its name at its end, over a white halo so that the lines under it do not hide it.
      { ...label, mark: { ...font, stroke: 'white', strokeWidth: 4, strokeJoin: 'round' } },
      { ...label, name: 'quota_label', mark: font },
    );
  }
  return {
    title: { text: 'Calls granted over time (first run of each setting)', anchor: 'start' },
    width: PANEL_WIDTH,
    height: 320,
    data: { values: grantTimeline(settings, maxPoints) },
    encoding: {
      x: { field: 't', type: 'quantitative', title: 'time since run start (s)', scale: scales.time },
      y: {
        field: 'calls',
        type: 'quantitative',
        title: 'calls granted (cumulative)',
        scale: { domain: [0, Math.max(mostCalls, quota?.topCalls ?? 0)], nice: true },
      },
      color: { ...scales.color, legend: scales.legend },
    },
    layer: layers,
  };
}

/** Each setting's elapsed time over its repeats, and the text beside its bar. */
function elapsedRows(settings: readonly SettingResult[]) {
  return settings.map((s) => ({
    setting: s.label,
    median: s.elapsedMs.median / 1000,
    min: s.elapsedMs.min / 1000,
    max: s.elapsedMs.max / 1000,
    // Right of the whisker and of the markers, which may end past it (least ≈ elapsed).
    noteAt: Math.max(s.elapsedMs.max, s.rateFloorMs, s.leastElapsedMs) / 1000,
    note: `${formatSeconds(s.elapsedMs.median)}${s.efficiency === null ? '' : ` · ${(s.efficiency * 100).toFixed(1)}% efficient`}`,
  }));
}

/** The rate floor and the least possible elapsed time of each setting, as markers on its bar; none at rate=inf. */
function floorMarkers(settings: readonly SettingResult[]) {
  return settings.flatMap((s) =>
    s.setting.rate === Infinity
      ? []
      : [
          { setting: s.label, measure: FLOOR, seconds: s.rateFloorMs / 1000 },
          { setting: s.label, measure: LEAST, seconds: s.leastElapsedMs / 1000 },
        ],
  );
}

/** Elapsed per setting: the median bar, the min–max whisker, the text, and the floor markers. */
function elapsedPanel(
  elapsed: ReturnType<typeof elapsedRows>,
  markers: ReturnType<typeof floorMarkers>,
  { row, time, color }: SharedScales,
): Record<string, unknown> {
  return {
    title: { text: ELAPSED_TITLE, anchor: 'start' },
    width: PANEL_WIDTH,
    height: { step: ROW_STEP_PX },
    layer: [
      {
        data: { values: elapsed },
        layer: [
          {
            name: 'elapsed',
            mark: { type: 'bar', opacity: 0.75 },
            encoding: {
              y: row,
              x: { field: 'median', type: 'quantitative', title: 'elapsed (s)', scale: time },
              color: { ...color, legend: null },
            },
          },
          { mark: { type: 'rule', color: '#333' }, encoding: { y: row, x: { field: 'min', type: 'quantitative' }, x2: { field: 'max' } } },
          {
            name: 'elapsed_note',
            mark: { type: 'text', align: 'left', dx: ELAPSED_NOTE_DX_PX, fontSize: NOTE_FONT_PX, color: '#333' },
            encoding: { y: row, x: { field: 'noteAt', type: 'quantitative' }, text: { field: 'note' } },
          },
        ],
      },
      {
        data: { values: markers },
        mark: { type: 'point', filled: true, size: 70, color: 'black' },
        encoding: {
          y: row,
          x: { field: 'seconds', type: 'quantitative' },
          shape: {
            field: 'measure',
            type: 'nominal',
            title: 'marker',
            scale: { domain: [FLOOR, LEAST], range: ['triangle-right', 'diamond'] },
            legend: { orient: 'bottom', direction: 'vertical', symbolSize: 80 },
          },
        },
      },
    ],
  };
}

/** What each setting cost — failed articles, 429s, retries — one column each. */
function countColumns(settings: readonly SettingResult[]) {
  return COUNTS.map(({ field, title, unit, color }) => ({
    field,
    title,
    axisTitle: `${unit} (middle run)`,
    ink: color,
    values: settings.map((s) => ({ setting: s.label, count: s[field] })),
  }));
}

/** One count's panel: a bar per setting, its value beside it. */
function countPanel({ field, title, axisTitle, ink, values }: ReturnType<typeof countColumns>[number], { row }: SharedScales) {
  // At least 0–1, so that a sweep that lost nothing still has an axis to put its zeros on.
  const x = {
    field: 'count',
    type: 'quantitative',
    title: axisTitle,
    scale: { domain: [0, Math.max(1, ...values.map((v) => v.count))], nice: true },
  };
  return {
    title: { text: title, anchor: 'start', frame: 'group' },
    width: COUNT_WIDTH,
    height: { step: ROW_STEP_PX },
    data: { values },
    encoding: { y: { ...row, axis: null } },
    layer: [
      { name: field, mark: { type: 'bar', color: ink }, encoding: { x: { ...x, axis: { format: 'd', tickMinStep: 1 } } } },
      {
        name: `${field}_value`,
        mark: { type: 'text', align: 'left', dx: NOTE_DX_PX, fontSize: NOTE_FONT_PX, color: '#333' },
        encoding: { x, text: { field: 'count' } },
      },
    ],
  };
}

/**
 * The space between the panels side by side. They are placed by their plots, not by the bounds
 * vega estimates for their text (0.8 em a character, a third too wide): each gap is the widest text
 * that sticks out of the plots on either side (by textWidthPx, which never understates), plus
 * PANEL_GAP_PX.
 */
function panelGaps(elapsed: ReturnType<typeof elapsedRows>, counts: ReturnType<typeof countColumns>, timeEndS: number) {
  const axisTitleOverflowPx = Math.max(0, ...counts.map((c) => (textWidthPx(c.axisTitle, AXIS_TITLE_FONT_PX) - COUNT_WIDTH) / 2));
  const elapsedPx =
    Math.max(
      0,
      textWidthPx(ELAPSED_TITLE, TITLE_FONT_PX) - PANEL_WIDTH,
      ...elapsed.map((e) => (e.noteAt / timeEndS) * PANEL_WIDTH + ELAPSED_NOTE_DX_PX + textWidthPx(e.note, NOTE_FONT_PX) - PANEL_WIDTH),
    ) +
    axisTitleOverflowPx +
    PANEL_GAP_PX;
  const countsPx =
    Math.max(
      0,
      ...counts.map((c) => textWidthPx(c.title, TITLE_FONT_PX) - COUNT_WIDTH),
      // A count's text ends at most this far right: its bar ends inside the plot.
      ...counts.flatMap((c) => c.values.map((v) => NOTE_DX_PX + textWidthPx(String(v.count), NOTE_FONT_PX))),
      2 * axisTitleOverflowPx,
    ) + PANEL_GAP_PX;
  return { elapsedPx, countsPx };
}

/**
 * The provider quota's line, `burst + rate·t`, from t = 0 until it reaches the most calls any
 * setting made or the time axis ends, with its name placed inside the panel: right of the end
 * unless it would stick out there, and below the end unless the end is low in the panel.
 */
function quotaLine(quota: ProviderQuota | undefined, timeEndS: number, mostCalls: number) {
  if (quota === undefined || quota.rate === Infinity) return undefined;
  const rate = formatNumber(quota.rate);
  const kind = `provider quota: ${quota.burst} + ${rate}·t`;
  const text = `provider quota ${rate}/s, burst ${quota.burst}`;
  const reachesS = Math.max(0, (mostCalls - quota.burst) / quota.rate);
  const end =
    reachesS <= timeEndS
      ? { t: reachesS, calls: Math.max(mostCalls, quota.burst) }
      : { t: timeEndS, calls: quota.burst + quota.rate * timeEndS };
  // The calls axis reaches at least the line's end, so the end's height in it is at least this.
  const high = end.calls >= mostCalls / 2;
  const dxPx = 8;
  const fitsRight = (end.t / timeEndS) * PANEL_WIDTH + dxPx + textWidthPx(text, NOTE_FONT_PX) <= PANEL_WIDTH;
  return {
    kind,
    text,
    topCalls: end.calls,
    points: [
      { kind, t: 0, calls: quota.burst },
      { kind, ...end },
    ],
    labelPlacement: {
      align: fitsRight ? 'left' : 'right',
      baseline: high ? 'top' : 'bottom',
      dx: fitsRight ? dxPx : -dxPx,
      dy: high ? 4 : -4,
    },
  } as const;
}

/**
 * The settings legend: one column up to 12 settings; beyond that a full grid's bursts side by
 * side, a row per rate, or as many columns as keep each under 12 entries.
 */
function settingsLegend(settings: readonly SettingResult[]): Record<string, unknown> {
  if (settings.length <= 12) return {};
  const rates = new Set(settings.map((s) => s.setting.rate)).size;
  const bursts = new Set(settings.map((s) => s.setting.burst)).size;
  const columns = rates * bursts === settings.length && bursts <= 4 ? bursts : Math.ceil(settings.length / 12);
  // Horizontal fills the columns row by row, so a row is one rate.
  return { columns, direction: 'horizontal' };
}

/** The sweep's chart as an SVG document (see {@link benchChartSpec}). */
export async function renderBenchChart(result: SweepResult, options: BenchChartOptions = {}): Promise<string> {
  const [vega, vl] = await loadChartRenderer();
  // vega-lite checks the spec as it compiles it.
  const compiled = vl.compile(benchChartSpec(result, options) as unknown as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** `value` rounded up to a multiple of 1, 2 or 5 × 10ⁿ, the smallest that leaves at most 12 of them: 5.095 → 5.5, 39.35 → 40. */
function roundUp(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value / 12));
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => value / candidate <= 12)!;
  // Against 0.1 × 3 = 0.30000000000000004.
  return Number((Math.ceil(value / step - 1e-9) * step).toPrecision(12));
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(3)} s`;
}

function formatNumber(value: number): string {
  return String(Number(value.toPrecision(4)));
}
