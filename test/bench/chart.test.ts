import { describe, expect, it } from 'vitest';
import { benchChartSpec, renderBenchChart } from '../../src/bench/chart.ts';
import { pairSettings, settingLabel, type BenchSetting, type SettingResult, type SweepResult } from '../../src/bench/sweep.ts';
import { Metrics } from '../../src/pipeline/metrics.ts';

/** A setting's result as a sweep would report it, with grants on the ideal schedule of `calls` calls. */
function settingResult(setting: BenchSetting, calls: number, lastLatencyMs = 100): SettingResult {
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
  };
  const summary = new Metrics({ startMs: 0, workers: 5, providers: ['sim'] }).summary(elapsedMs, { interrupted: false }, [figures]);
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
    rateLimited: 0,
    retries: 0,
    failed: 0,
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
    rateLimited: 0,
    retries: 0,
    failed: 0,
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

  it('thins a long timeline evenly, keeping the last grant', () => {
    const sweep: SweepResult = { interrupted: false, settings: [settingResult({ rate: 1e5, burst: 1 }, 100_000)] };
    const rows = timeline(benchChartSpec(sweep, { maxPointsPerSeries: 500 })).filter((row) => row.kind === 'calls granted');
    expect(rows.length).toBeLessThanOrEqual(503);
    expect(rows.at(-2)).toMatchObject({ calls: 100_000 });
    expect(rows.map((row) => row.calls)).toEqual([...rows.map((row) => row.calls)].sort((a, b) => a - b));
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
