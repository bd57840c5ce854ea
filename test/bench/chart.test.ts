import { describe, expect, it } from 'vitest';
import { benchChartSpec, renderBenchChart } from '../../src/bench/chart.ts';
import { pairSettings, settingLabel, type BenchSetting, type SettingResult, type SweepResult } from '../../src/bench/sweep.ts';
import { textWidthPx } from '../../src/bench/text-width.ts';
import { ManualClock } from '../../src/clock.ts';
import { summarizeRun } from '../../src/pipeline/metrics.ts';
import { RunTally } from '../../src/pipeline/run-tally.ts';

interface Counts {
  readonly failed: number;
  readonly rateLimited: number;
  readonly retries: number;
}
const NONE: Counts = { failed: 0, rateLimited: 0, retries: 0 };

/** A setting's result as a sweep would report it, with grants on the ideal schedule of `calls` calls. */
function settingResult(setting: BenchSetting, calls: number, lastLatencyMs = 100, counts: Counts = NONE): SettingResult {
  const { rate, burst } = setting;
  const grantsMs = Array.from({ length: calls }, (_, i) => (rate === Infinity ? 0 : (Math.max(0, i + 1 - burst) / rate) * 1000));
  const elapsedMs = grantsMs.at(-1)! + lastLatencyMs;
  const figures = {
    provider: 'sim',
    limits: [{ kind: 'requests' as const, rate, burst }],
    rate,
    countsTokens: false,
    breakerOpens: 0,
    rateCuts: 0,
    adaptive: false,
    rates: undefined,
  };
  const tally = new RunTally({ clock: new ManualClock(), startMs: 0, workers: 5, providers: ['sim'] });
  const summary = summarizeRun(tally, elapsedMs, { interrupted: false }, [figures]);
  const rateFloorMs = rate === Infinity ? 0 : (Math.max(0, calls - burst) / rate) * 1000;
  const efficiency = rate === Infinity ? null : (rateFloorMs + lastLatencyMs) / elapsedMs;
  const run = {
    repeat: 1,
    elapsedMs,
    calls,
    rateFloorMs,
    leastElapsedMs: rateFloorMs + lastLatencyMs,
    boundBy: 'rate' as const,
    efficiency,
    ...counts,
    summary,
  };
  return {
    setting,
    label: settingLabel(setting),
    runs: [run],
    calls,
    elapsedMs: { median: elapsedMs, min: elapsedMs, max: elapsedMs },
    rateFloorMs,
    leastElapsedMs: rateFloorMs + lastLatencyMs,
    boundBy: 'rate' as const,
    efficiency,
    ...counts,
    grantsMs,
  };
}

/** The Go article's three settings on 5 articles (10 calls), and one without a limit. */
const GO_SWEEP: SweepResult = {
  interrupted: false,
  settings: [
    settingResult({ rate: 1000, burst: 3 }, 10, 600),
    settingResult({ rate: 3, burst: 1 }, 10),
    settingResult({ rate: 2, burst: 1 }, 10),
    settingResult({ rate: Infinity, burst: 1 }, 10),
  ],
};

/** A provider quota of 5/s, burst 2. */
const QUOTA = { rate: 5, burst: 2 };

/**
 * `--rate=1,2,3,4,5,6,8,10 --burst=1,2,3 --grid` on 20 articles against {@link QUOTA}: the settings
 * above the quota meet 429s, retry, and lose articles, more the faster they go.
 */
const LARGE_GRID: SweepResult = {
  interrupted: false,
  settings: pairSettings([1, 2, 3, 4, 5, 6, 8, 10], [1, 2, 3], { grid: true }).map((setting) => {
    const over = Math.max(0, setting.rate - QUOTA.rate);
    return settingResult(setting, 40, 500, { failed: 3 * over, rateLimited: 11 * over + setting.burst, retries: 8 * over });
  }),
};

/** Throws unless every tag in `xml` is closed in order (enough to tell well-formed SVG from a broken one). */
function checkWellFormed(xml: string): void {
  const open: string[] = [];
  for (const [, slash, name, rest] of xml.matchAll(/<(\/?)([A-Za-z][\w:.-]*)([^>]*)>/g)) {
    if (slash === '/') {
      const expected = open.pop();
      if (expected !== name) throw new Error(`</${name}> closes <${expected}>`);
    } else if (!rest!.endsWith('/')) open.push(name!);
  }
  if (open.length > 0) throw new Error(`unclosed: <${open.join('>, <')}>`);
}

const count = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].length;

describe('renderBenchChart()', () => {
  it('returns one well-formed SVG document', async () => {
    const svg = await renderBenchChart(GO_SWEEP, { subtitle: '5 articles · 5 workers' });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toMatch(/^<svg[^>]* xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(() => checkWellFormed(svg)).not.toThrow();
    expect(count(svg, /<svg\b/g)).toBe(1);
  });

  it('draws one grant line per setting, and one envelope per limited setting (none at rate=inf)', async () => {
    const svg = await renderBenchChart(GO_SWEEP);
    expect(count(svg, /class="mark-line role-mark grants_marks"/g)).toBe(4);
    expect(count(svg, /class="mark-line role-mark envelope_marks"/g)).toBe(3);
    for (const label of ['rate=1000 burst=3', 'rate=3 burst=1', 'rate=2 burst=1', 'rate=inf burst=1']) {
      // In the legend, and on the grant line and the bar named after it.
      expect(svg).toContain(`>${label}</text>`);
      expect(svg).toMatch(new RegExp(`aria-label="[^"]*setting: ${label}; line: calls granted"`));
    }
    expect(svg).not.toMatch(/setting: rate=inf burst=1; line: ideal/);
  });

  it('labels the axes with their units, titles both panels and explains the lines and markers', async () => {
    const svg = await renderBenchChart(GO_SWEEP, { title: 'bench title', subtitle: 'the flags' });
    for (const text of [
      'bench title',
      'the flags',
      'time since run start (s)',
      'calls granted (cumulative)',
      'elapsed (s)',
      'Calls granted over time (first run of each setting)',
      'calls granted',
      'ideal: burst + rate·t',
      'rate floor (calls − burst) / rate',
      'rate floor + last call latency',
    ]) {
      expect(svg).toContain(`>${text}</text>`);
    }
  });
});

describe('renderBenchChart() - failures and the provider quota', () => {
  it('draws failed articles, 429s received and retries for every setting, each in a panel of its own', async () => {
    const svg = await renderBenchChart(LARGE_GRID, { providerQuota: QUOTA });
    for (const [mark, unit, field] of [
      ['failed', 'articles', 'failed'],
      ['rateLimited', 'calls', 'rateLimited'],
      ['retries', 'calls', 'retries'],
    ] as const) {
      expect(count(svg, new RegExp(`class="mark-rect role-mark ${mark}_marks"`, 'g'))).toBe(1);
      for (const s of LARGE_GRID.settings) {
        // The bar, and its value written beside it.
        expect(svg).toContain(`aria-label="${unit} (middle run): ${s[field]}; setting: ${s.label}"`);
        expect(svg).toMatch(
          new RegExp(`aria-label="${unit} \\(middle run\\): ${s[field]}; setting: ${s.label}; count: ${s[field]}"[^>]*>${s[field]}</text>`),
        );
      }
    }
    for (const text of ['failed articles', '429s received', 'retries', 'articles (middle run)', 'calls (middle run)']) {
      expect(svg).toContain(`>${text}</text>`);
    }
  });

  it('draws the provider quota, named, when one is given', async () => {
    const svg = await renderBenchChart(GO_SWEEP, { providerQuota: QUOTA });
    expect(count(svg, /class="mark-line role-mark quota_marks"/g)).toBe(1);
    // Beside the line, and in the legend of lines.
    expect(svg).toContain('>provider quota 5/s, burst 2</text>');
    expect(svg).toContain('>provider quota: 2 + 5·t</text>');
  });

  it('draws no quota without one, or for a quota of rate=inf', async () => {
    for (const options of [{}, { providerQuota: undefined }, { providerQuota: { rate: Infinity, burst: 1 } }]) {
      const svg = await renderBenchChart(GO_SWEEP, options);
      expect(svg).not.toContain('quota_marks');
      expect(svg).not.toContain('provider quota');
    }
  });
});

describe('benchChartSpec()', () => {
  type Row = { setting: string; kind: string; t: number; calls: number };
  const timeline = (spec: ReturnType<typeof benchChartSpec>) => {
    const top = (spec as { vconcat: { data: { values: Row[] } }[] }).vconcat[0]!;
    return top.data.values;
  };

  it('draws the envelope from the burst at t = 0 to all calls at the rate floor, in seconds', () => {
    const rows = timeline(benchChartSpec(GO_SWEEP)).filter((row) => row.kind !== 'calls granted');
    expect(rows.filter((row) => row.setting === 'rate=3 burst=1')).toEqual([
      { setting: 'rate=3 burst=1', kind: 'ideal: burst + rate·t', t: 0, calls: 1 },
      { setting: 'rate=3 burst=1', kind: 'ideal: burst + rate·t', t: 3, calls: 10 },
    ]);
    expect(rows.some((row) => row.setting === 'rate=inf burst=1')).toBe(false);
  });

  it('steps from 0 through every grant and holds until the run ended', () => {
    const rows = timeline(benchChartSpec(GO_SWEEP)).filter((row) => row.kind === 'calls granted' && row.setting === 'rate=2 burst=1');
    expect(rows.map((row) => [row.t, row.calls])).toEqual([[0, 0], ...Array.from({ length: 10 }, (_, i) => [i / 2, i + 1]), [4.6, 10]]);
  });

  type Panel = { title: { text: string }; data: { values: { setting: string; count: number }[] } };
  const countPanels = (spec: ReturnType<typeof benchChartSpec>) =>
    (spec as unknown as { vconcat: [unknown, { hconcat: [unknown, { hconcat: Panel[] }] }] }).vconcat[1].hconcat[1].hconcat;

  it('puts the failed articles, 429s and retries of every setting beside its elapsed bar, in the order of the rows', () => {
    const panels = countPanels(benchChartSpec(LARGE_GRID));
    expect(panels.map((panel) => panel.title.text)).toEqual(['failed articles', '429s received', 'retries']);
    const [failed, rateLimited, retries] = panels.map((panel) => panel.data.values);
    expect(failed).toEqual(LARGE_GRID.settings.map((s) => ({ setting: s.label, count: s.failed })));
    expect(rateLimited).toEqual(LARGE_GRID.settings.map((s) => ({ setting: s.label, count: s.rateLimited })));
    expect(retries).toEqual(LARGE_GRID.settings.map((s) => ({ setting: s.label, count: s.retries })));
    expect(failed!.find((row) => row.setting === 'rate=10 burst=3')).toEqual({ setting: 'rate=10 burst=3', count: 15 });
  });

  type Layer = { name?: string; data?: { values: { t: number; calls: number }[] } };
  const quotaPoints = (spec: ReturnType<typeof benchChartSpec>) => {
    const top = (spec as unknown as { vconcat: { layer: Layer[] }[] }).vconcat[0]!;
    return top.layer.find((layer) => layer.name === 'quota')?.data?.values.map(({ t, calls }) => ({ t, calls }));
  };

  it('draws the quota as burst + rate·t up to the most calls of any setting', () => {
    // 10 calls at most: 2 + 5·t reaches them at 1.6 s.
    expect(quotaPoints(benchChartSpec(GO_SWEEP, { providerQuota: QUOTA }))).toEqual([
      { t: 0, calls: 2 },
      { t: 1.6, calls: 10 },
    ]);
    // 1 + 0.5·t would reach them at 18 s: it stops where the time axis does, at 5 s (the longest run, 4.6 s, rounded up).
    expect(quotaPoints(benchChartSpec(GO_SWEEP, { providerQuota: { rate: 0.5, burst: 1 } }))).toEqual([
      { t: 0, calls: 1 },
      { t: 5, calls: 3.5 },
    ]);
    expect(quotaPoints(benchChartSpec(GO_SWEEP))).toBeUndefined();
  });

  it('thins a long timeline evenly, keeping the last grant', () => {
    const sweep: SweepResult = { interrupted: false, settings: [settingResult({ rate: 1e5, burst: 1 }, 100_000)] };
    const rows = timeline(benchChartSpec(sweep, { maxPointsPerSeries: 500 })).filter((row) => row.kind === 'calls granted');
    expect(rows.length).toBeLessThanOrEqual(503);
    expect(rows.at(-2)).toMatchObject({ calls: 100_000 });
    expect(rows.map((row) => row.calls)).toEqual([...rows.map((row) => row.calls)].sort((a, b) => a - b));
  });
});

interface Box {
  readonly text: string;
  readonly x1: number;
  readonly y1: number;
  readonly x2: number;
  readonly y2: number;
}

/** Vega's scene graph, as far as text placement needs it. */
interface SceneMark {
  readonly marktype: string;
  readonly items: readonly SceneItem[];
}
interface SceneItem {
  readonly x?: number;
  readonly y?: number;
  readonly items?: readonly SceneMark[];
  readonly text?: string | readonly string[] | null;
  readonly fontSize?: number;
  readonly align?: 'left' | 'center' | 'right';
  readonly baseline?: string;
  readonly angle?: number;
  readonly dx?: number;
  readonly dy?: number;
  readonly limit?: number;
  readonly opacity?: number;
}

/**
 * Every text the chart draws, laid out by vega, as its box in SVG pixels: widths by textWidthPx
 * (an upper bound for sans-serif faces, bold included), heights the font size, rotated as drawn;
 * and the SVG's size.
 */
async function textBoxes(result: SweepResult, options: Parameters<typeof benchChartSpec>[1] = {}) {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vl.compile(benchChartSpec(result, options) as never).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    const [, width, height] = /^<svg[^>]* width="([\d.]+)" height="([\d.]+)"/.exec(svg)!.map(Number);
    const boxes: Box[] = [];
    const [originX, originY] = view.origin();
    walk((view.scenegraph() as unknown as { root: SceneMark }).root, originX!, originY!, boxes);
    return { boxes, width: width!, height: height! };
  } finally {
    view.finalize();
  }
}

function walk(mark: SceneMark, offsetX: number, offsetY: number, boxes: Box[]): void {
  for (const item of mark.items) {
    const x = offsetX + (item.x ?? 0);
    const y = offsetY + (item.y ?? 0);
    if (mark.marktype === 'group') for (const child of item.items ?? []) walk(child, x, y, boxes);
    if (mark.marktype !== 'text' || item.text == null || item.opacity === 0) continue;
    const lines = (Array.isArray(item.text) ? item.text : [item.text]).map(String).filter((line) => line !== '');
    if (lines.length === 0) continue;
    const size = item.fontSize ?? 11;
    const fullWidth = Math.max(...lines.map((line) => textWidthPx(line, size)));
    const w = item.limit ? Math.min(fullWidth, item.limit) : fullWidth;
    const h = size * lines.length;
    const left = (item.align === 'right' ? -w : item.align === 'center' ? -w / 2 : 0) + (item.dx ?? 0);
    const baseline = item.baseline ?? 'alphabetic';
    const top =
      (baseline.endsWith('top') ? 0 : baseline === 'middle' ? -h / 2 : baseline.endsWith('bottom') ? -h : -0.8 * size) + (item.dy ?? 0);
    // Rotated about the anchor, as vega draws it; the box is the rotated rectangle's extent.
    const radians = ((item.angle ?? 0) * Math.PI) / 180;
    const corners = [
      [left, top],
      [left + w, top],
      [left, top + h],
      [left + w, top + h],
    ].map(([cx, cy]) => [x + cx! * Math.cos(radians) - cy! * Math.sin(radians), y + cx! * Math.sin(radians) + cy! * Math.cos(radians)]);
    const xs = corners.map((c) => c[0]!);
    const ys = corners.map((c) => c[1]!);
    boxes.push({ text: lines.join(' / '), x1: Math.min(...xs), y1: Math.min(...ys), x2: Math.max(...xs), y2: Math.max(...ys) });
  }
}

/** Pairs of texts whose boxes overlap by more than half a pixel both ways (a text drawn twice in one place, as a halo is, counts once). */
function overlaps(boxes: readonly Box[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i]!, boxes[j]!];
      const same = a.text === b.text && Math.abs(a.x1 - b.x1) < 0.01 && Math.abs(a.y1 - b.y1) < 0.01;
      const across = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
      const down = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
      if (!same && across > 0.5 && down > 0.5) found.push(`'${a.text}' and '${b.text}' by ${across.toFixed(1)} × ${down.toFixed(1)} px`);
    }
  }
  return found;
}

describe('benchChartSpec() - text placement', () => {
  it.each([
    ['the Go sweep', GO_SWEEP, {}],
    ['8 rates × 3 bursts with a provider quota, failures and 429s', LARGE_GRID, { providerQuota: QUOTA }],
    ['8 rates × 3 bursts, nothing lost', { interrupted: false, settings: LARGE_GRID.settings.map((s) => ({ ...s, ...NONE })) }, {}],
    ['a quota slower than every setting (its line runs out low at the right)', GO_SWEEP, { providerQuota: { rate: 0.5, burst: 1 } }],
    ['a quota whose line runs out high at the right', GO_SWEEP, { providerQuota: { rate: 1.5, burst: 2 } }],
    ['a sweep interrupted before any setting finished', { interrupted: true, settings: [] }, { providerQuota: QUOTA }],
  ] as const)('%s: no text overlaps another or leaves the picture', async (_name, sweep, options) => {
    const { boxes, width, height } = await textBoxes(sweep, options);
    // Every setting's note, counts and name are among them: the check sees the labels it is about.
    expect(boxes.length).toBeGreaterThan(10 + sweep.settings.length * 5);
    expect(overlaps(boxes)).toEqual([]);
    const outside = boxes.filter((b) => b.x1 < 0 || b.y1 < 0 || b.x2 > width || b.y2 > height).map((b) => b.text);
    expect(outside).toEqual([]);
  });
});

describe('benchChartSpec() - colours', () => {
  it('gives each of 24 settings a colour of its own', () => {
    const grid: SweepResult = {
      interrupted: false,
      settings: pairSettings([1, 2, 3, 4, 5, 6, 8, 10], [1, 2, 3], { grid: true }).map((setting) => settingResult(setting, 40)),
    };
    const spec = benchChartSpec(grid) as unknown as {
      vconcat: { encoding: { color: { scale: { domain: string[]; range: string[] } } } }[];
    };
    const { domain, range } = spec.vconcat[0]!.encoding.color.scale;
    expect(domain).toEqual(grid.settings.map((s) => s.label));
    expect(new Set(range).size).toBe(24);
  });
});
