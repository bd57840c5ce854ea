import type { TopLevelSpec } from 'vega-lite';
import { settingColors } from './setting-colors.ts';
import type { SettingResult, SweepResult } from './sweep.ts';

export interface BenchChartOptions {
  /** Default `news-processor bench`. */
  readonly title?: string;
  /** A line under the title, e.g. the run flags. */
  readonly subtitle?: string;
  /** Points drawn per grant timeline at most; longer ones are thinned evenly. Default 1000. */
  readonly maxPointsPerSeries?: number;
}

const GRANTED = 'calls granted';
const ENVELOPE = 'ideal: burst + rate·t';
const FLOOR = 'rate floor (calls − burst) / rate';
const LEAST = 'rate floor + last call latency';
const PANEL_WIDTH = 640;

/**
 * The vega-lite spec of a sweep's chart. Top: for each setting, calls granted over time since the
 * run started (a step line, the first run) against the most any limiter may grant, `burst + rate·t`
 * (dashed, same colour; none at rate=inf). Bottom: median elapsed per setting (bar, with the
 * min–max over repeats) against the rate floor and the floor plus the last call's latency.
 * Every setting has a colour of its own (see {@link settingColors}), named in one legend.
 */
export function benchChartSpec(result: SweepResult, options: BenchChartOptions = {}): TopLevelSpec {
  const maxPoints = options.maxPointsPerSeries ?? 1000;
  const labels = result.settings.map((s) => s.label);
  const timeline: Record<string, unknown>[] = [];
  for (const s of result.settings) {
    const grants = s.grantsMs;
    const step = Math.max(1, Math.ceil(grants.length / maxPoints));
    timeline.push({ setting: s.label, kind: GRANTED, t: 0, calls: 0 });
    for (let i = 0; i < grants.length; i++) {
      if (i % step === 0 || i === grants.length - 1) timeline.push({ setting: s.label, kind: GRANTED, t: grants[i]! / 1000, calls: i + 1 });
    }
    // Hold the line until the run ended, so it shows where the last answer came in.
    const firstRun = s.runs[0];
    if (firstRun !== undefined) timeline.push({ setting: s.label, kind: GRANTED, t: firstRun.elapsedMs / 1000, calls: grants.length });
    const { rate, burst } = s.setting;
    if (rate !== Infinity && grants.length > burst) {
      timeline.push({ setting: s.label, kind: ENVELOPE, t: 0, calls: burst });
      timeline.push({ setting: s.label, kind: ENVELOPE, t: (grants.length - burst) / rate, calls: grants.length });
    }
  }
  // At rate=inf there is no floor to mark.
  const totals = result.settings.flatMap((s) =>
    s.setting.rate === Infinity
      ? []
      : [
          { setting: s.label, measure: FLOOR, seconds: s.rateFloorMs / 1000 },
          { setting: s.label, measure: LEAST, seconds: s.leastElapsedMs / 1000 },
        ],
  );
  const elapsed = result.settings.map((s) => ({
    setting: s.label,
    median: s.elapsedMs.median / 1000,
    min: s.elapsedMs.min / 1000,
    max: s.elapsedMs.max / 1000,
    note: `${formatSeconds(s.elapsedMs.median)}${s.efficiency === null ? '' : ` · ${(s.efficiency * 100).toFixed(1)}% efficient`}`,
  }));

  // Both panels span the same time range, so a bar ends under the end of its step line.
  const longestS = Math.max(0.001, ...result.settings.map((s) => s.elapsedMs.max / 1000));
  const time = { domain: [0, longestS], nice: true };
  const colors = settingColors(result.settings.map((s) => s.setting));
  const color = { field: 'setting', type: 'nominal', title: 'setting', sort: labels, scale: { domain: labels, range: colors } } as const;
  const settingAxis = { field: 'setting', type: 'nominal', title: null, sort: labels } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: options.title ?? 'news-processor bench',
      offset: 14,
      subtitle: options.subtitle,
    },
    config: { font: 'sans-serif', view: { stroke: '#ccc' }, legend: { labelLimit: 320, symbolSize: 300, symbolStrokeWidth: 2 } },
    // Each panel keeps its own scales (the colours still match: same domain, same range), so the
    // settings legend is drawn once, beside the panel that needs it.
    resolve: {
      scale: { color: 'independent', x: 'independent' },
      legend: { color: 'independent', strokeDash: 'independent', shape: 'independent' },
    },
    spacing: 36,
    vconcat: [
      {
        title: { text: 'Calls granted over time (first run of each setting)', anchor: 'start' },
        width: PANEL_WIDTH,
        height: 320,
        data: { values: timeline },
        encoding: {
          x: { field: 't', type: 'quantitative', title: 'time since run start (s)', scale: time },
          y: { field: 'calls', type: 'quantitative', title: 'calls granted (cumulative)' },
          color: { ...color, legend: settingsLegend(result.settings) },
          strokeDash: {
            field: 'kind',
            type: 'nominal',
            title: 'line',
            scale: {
              domain: [GRANTED, ENVELOPE],
              range: [
                [1, 0],
                [6, 4],
              ],
            },
          },
        },
        layer: [
          {
            name: 'grants',
            transform: [{ filter: { field: 'kind', equal: GRANTED } }],
            mark: { type: 'line', interpolate: 'step-after', strokeWidth: 2 },
          },
          {
            name: 'envelope',
            transform: [{ filter: { field: 'kind', equal: ENVELOPE } }],
            mark: { type: 'line', strokeWidth: 1.5, opacity: 0.8 },
          },
        ],
      },
      {
        title: { text: 'Elapsed vs rate floor per setting (bar: median of the repeats; whisker: min–max)', anchor: 'start' },
        width: PANEL_WIDTH,
        height: { step: 28 },
        layer: [
          {
            data: { values: elapsed },
            layer: [
              {
                name: 'elapsed',
                mark: { type: 'bar', opacity: 0.75 },
                encoding: {
                  y: settingAxis,
                  x: { field: 'median', type: 'quantitative', title: 'elapsed (s)', scale: time },
                  color: { ...color, legend: null },
                },
              },
              {
                mark: { type: 'rule', color: '#333' },
                encoding: { y: settingAxis, x: { field: 'min', type: 'quantitative' }, x2: { field: 'max' } },
              },
              {
                mark: { type: 'text', align: 'left', dx: 6, color: '#333' },
                encoding: { y: settingAxis, x: { field: 'max', type: 'quantitative' }, text: { field: 'note' } },
              },
            ],
          },
          {
            data: { values: totals },
            mark: { type: 'point', filled: true, size: 70, color: 'black' },
            encoding: {
              y: settingAxis,
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
      },
    ],
  };
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
  // Loaded here, not at the top: together they take the best part of a second to import, which
  // every run of the command (and every importer of the library) would otherwise pay for a chart.
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const compiled = vl.compile(benchChartSpec(result, options)).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(3)} s`;
}
