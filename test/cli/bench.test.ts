import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linesOf, makeTempDir, runCli, startCli, type CliResult } from './run-cli.ts';

/** Settings that finish in well under a second: 3 articles (6 calls), a provider answering in ≤ 1 ms. */
const QUICK = ['bench', '--articles=3', '--repeat=1', '--min-latency=0ms', '--max-latency=1ms'] as const;
const TWO_SETTINGS = [...QUICK, '--rate=inf,50', '--burst=1'] as const;

const ROW =
  /^ *(inf|\d+) +(\d+) +(\d+) +(\S+)(?: \((\S+)–(\S+)\))? +(none|\S+) +(rate|latency|workers|n\/a) +(n\/a|\d+\.\d%) +(\d+) +(\d+) +(\d+)$/;

/** Milliseconds from the table's `412ms` / `3.216s` / `0.42ms`. */
function ms(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(text);
  if (match === null) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1);
}

/** A usage error: exit 2, nothing on stdout, one `error: …` line on stderr and no stack trace. */
function expectUsageError(result: CliResult, mentions: readonly RegExp[]): void {
  expect(result.timedOut, 'the run hung').toBe(false);
  expect(result.stdout).toBe('');
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr.split('\n'), `stderr: ${result.stderr}`).toHaveLength(2);
  expect(result.stderr).toMatch(/^error: \S.*\n$/);
  for (const mention of mentions) expect(result.stderr).toMatch(mention);
  expect(result.code).toBe(2);
}

describe.concurrent('news-processor bench - output', () => {
  it('prints a line naming the run, then one table row per setting with consistent figures', async () => {
    const result = await runCli(TWO_SETTINGS);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = linesOf(result.stdout);
    expect(lines[0]).toBe('3 articles · 5 workers · latency 0ms–1ms · 1 run per setting, seed 1');
    expect(lines[1]).toMatch(/^rate +burst +calls +elapsed \(median, min–max\) +rate floor +bound +efficiency +429s +retries +failed$/);
    expect(lines).toHaveLength(4);

    const unlimited = ROW.exec(lines[2]!);
    expect(unlimited, lines[2]).not.toBeNull();
    expect(unlimited!.slice(1, 4)).toEqual(['inf', '1', '6']);
    expect(unlimited![7]).toBe('none');
    // No rate limit: the calls themselves bound the run.
    expect(['latency', 'workers']).toContain(unlimited![8]);
    expect(unlimited![9]).toMatch(/^\d+\.\d%$/);

    const limited = ROW.exec(lines[3]!);
    expect(limited, lines[3]).not.toBeNull();
    const [, rate, burst, calls, elapsed, , , floor, bound, efficiency, rateLimited, retries, failed] = limited!;
    expect(bound).toBe('rate');
    expect([rate, burst, calls]).toEqual(['50', '1', '6']);
    // (6 calls − burst 1) / 50/s
    expect(ms(floor!)).toBe(100);
    expect(ms(elapsed!)).toBeGreaterThanOrEqual(100);
    expect(Number(efficiency!.replace('%', ''))).toBeGreaterThan(0);
    expect(Number(efficiency!.replace('%', ''))).toBeLessThanOrEqual(105);
    expect([rateLimited, retries, failed]).toEqual(['0', '0', '0']);
  });

  it('--repeat=3 shows the median with the min–max range', async () => {
    const result = await runCli([...QUICK, '--rate=100', '--burst=2', '--repeat=3']);
    expect(result.code).toBe(0);
    expect(linesOf(result.stdout)[0]).toMatch(/· 3 runs per setting, seed 1$/);
    const row = ROW.exec(linesOf(result.stdout)[2]!);
    expect(row).not.toBeNull();
    const [median, min, max] = [row![4]!, row![5]!, row![6]!].map(ms);
    expect(min).toBeLessThanOrEqual(median!);
    expect(median).toBeLessThanOrEqual(max!);
    expect(ms(row![7]!)).toBe(40);
  });

  it('--format=csv prints a header and one row per setting; the floor is (calls − burst) / rate', async () => {
    const result = await runCli([...TWO_SETTINGS, '--format=csv']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const [header, ...rows] = linesOf(result.stdout);
    expect(header).toBe(
      'rate,burst,runs,calls,elapsed_median_ms,elapsed_min_ms,elapsed_max_ms,rate_floor_ms,least_elapsed_ms,bound_by,efficiency,rate_limited,retries,failed',
    );
    expect(rows).toHaveLength(2);
    const records = rows.map((row) => Object.fromEntries(row.split(',').map((value, i) => [header!.split(',')[i]!, value])));
    expect(records[0]).toMatchObject({ rate: 'inf', burst: '1', runs: '1', calls: '6', rate_floor_ms: '0' });
    expect(Number(records[0]!.efficiency)).toBeGreaterThan(0);
    const limited = records[1]!;
    expect(limited).toMatchObject({ rate: '50', burst: '1', calls: '6', rate_limited: '0', retries: '0', failed: '0' });
    expect(Number(limited.rate_floor_ms)).toBe(((Number(limited.calls) - 1) / 50) * 1000);
    expect(Number(limited.least_elapsed_ms)).toBeGreaterThanOrEqual(Number(limited.rate_floor_ms));
    expect(Number(limited.efficiency)).toBeGreaterThan(0);
    expect(Number(limited.efficiency)).toBeLessThanOrEqual(1.05);
    expect(Number(limited.efficiency)).toBeCloseTo(Number(limited.least_elapsed_ms) / Number(limited.elapsed_median_ms), 3);
  });

  it('--format=json (and --json) print one JSON object with the settings and every run', async () => {
    for (const flag of ['--format=json', '--json']) {
      const result = await runCli([...TWO_SETTINGS, flag]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const json = JSON.parse(result.stdout) as {
        articles: number;
        interrupted: boolean;
        settings: {
          rate: number | 'inf';
          burst: number;
          label: string;
          calls: number;
          rateFloorMs: number;
          efficiency: number | null;
          runs: { calls: number }[];
        }[];
      };
      expect(json).toMatchObject({ articles: 3, workers: 5, repeat: 1, seed: 1, interrupted: false });
      expect(json.settings.map((s) => s.label)).toEqual(['rate=inf burst=1', 'rate=50 burst=1']);
      expect(json.settings[0]).toMatchObject({ rate: 'inf', burst: 1, calls: 6, rateFloorMs: 0 });
      expect(json.settings[0]!.efficiency).toBeGreaterThan(0);
      expect(json.settings[1]).toMatchObject({ rate: 50, burst: 1, calls: 6, rateFloorMs: 100 });
      expect(json.settings[1]!.efficiency).toBeGreaterThan(0);
      expect(json.settings[1]!.efficiency).toBeLessThanOrEqual(1.05);
      expect(json.settings[1]!.runs).toHaveLength(1);
      expect(json.settings[1]!.runs[0]).toMatchObject({ repeat: 1, calls: 6, succeeded: 3 });
    }
  });

  it('--grid runs every combination of rates and bursts', async () => {
    const result = await runCli([...QUICK, '--rate=inf,50', '--burst=1,2', '--grid', '--format=csv']);
    expect(result.code).toBe(0);
    expect(
      linesOf(result.stdout)
        .slice(1)
        .map((row) => row.split(',').slice(0, 2).join(' ')),
    ).toEqual(['inf 1', 'inf 2', '50 1', '50 2']);
  });

  it('takes every run flag: --provider-rate makes a client that sends too fast get 429s and retry', async () => {
    const result = await runCli([...QUICK, '--rate=inf,5', '--burst=1', '--provider-rate=5', '--provider-burst=3', '--format=json']);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout) as { settings: { rateLimited: number; retries: number }[] };
    expect(json.settings[0]!.rateLimited).toBeGreaterThan(0);
    expect(json.settings[0]!.retries).toBeGreaterThan(0);
  });

  it("accepts Go's single-dash spelling", async () => {
    const result = await runCli(['bench', '-articles=2', '-repeat=1', '-rate=inf', '-burst=1', '-min-latency=0ms', '-max-latency=1ms']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(linesOf(result.stdout)[2]).toMatch(/^ *inf +1 +4 /);
  });

  it('--help shows the flags with their defaults and examples; the main help lists bench', async () => {
    const help = await runCli(['bench', '--help']);
    expect(help.code).toBe(0);
    // Commander wraps the descriptions at 80 columns off a terminal.
    const text = help.stdout.replace(/\s+/g, ' ');
    for (const pattern of [
      /--rate <list>.*\(default: 3\)/,
      /--burst <list>.*\(default: 3\)/,
      /--repeat <n>.*\(default: 3\)/,
      /--grid/,
      /--format <format>.*\(default: "table"\)/,
      /--chart <file\.svg>/,
      /--provider-rate/,
      /Examples:/,
      /bench --rate=1000,3,2 --burst=3,1,1/,
    ]) {
      expect(text).toMatch(pattern);
    }
    const main = await runCli(['--help']);
    expect(main.code).toBe(0);
    expect(main.stdout).toMatch(/^ +bench \[options\] +Sweep rate\/burst settings/m);
  });
});

describe('news-processor bench - Ctrl-C', () => {
  it('stops the sweep, prints the finished runs and exits 130', async () => {
    // The second setting would take 6 s: (4 calls − burst 1) / 0.5/s. The pipeline's info log says when it started.
    const run = startCli([...QUICK, '--articles=2', '--rate=inf,0.5', '--burst=1', '--log-level=info']);
    await run.waitForStderr(/run started[\s\S]*run started/, 15_000);
    run.interrupt();
    const result = await run.result;
    expect(result.timedOut, 'the sweep did not stop').toBe(false);
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/^interrupted: stopping the sweep/m);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    const lines = linesOf(result.stdout);
    expect(lines.slice(2)).toEqual([
      expect.stringMatching(/^ *inf +1 +4 /),
      'Interrupted: the run in progress and the settings after it are left out.',
    ]);
  });
});

describe.concurrent('news-processor bench --chart', () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir();
  });
  afterAll(async () => {
    await temp.remove();
  });

  it('writes the SVG chart, one series per setting, and says where', async () => {
    const path = join(temp.dir, 'bench.svg');
    const result = await runCli([...QUICK, '--rate=inf,50,3', '--burst=1', '--articles=2', '--chart', path]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(linesOf(result.stdout).at(-1)).toBe(`Chart: ${path}`);
    const svg = await readFile(path, 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect([...svg.matchAll(/class="mark-line role-mark grants_marks"/g)]).toHaveLength(3);
    for (const label of ['rate=inf burst=1', 'rate=50 burst=1', 'rate=3 burst=1']) expect(svg).toContain(`>${label}</text>`);
    for (const panel of ['failed articles', '429s received', 'retries']) expect(svg).toContain(`>${panel}</text>`);
    expect(svg).not.toContain('provider quota');
  });

  it('with --provider-rate, draws the quota over the grants and the 429s it caused', async () => {
    const path = join(temp.dir, 'quota.svg');
    const result = await runCli([...QUICK, '--rate=inf,5', '--burst=1', '--provider-rate=5', '--provider-burst=3', '--chart', path]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const svg = await readFile(path, 'utf8');
    expect([...svg.matchAll(/class="mark-line role-mark quota_marks"/g)]).toHaveLength(1);
    expect(svg).toContain('>provider quota 5/s, burst 3</text>');
    expect(svg).toContain('>provider quota: 3 + 5·t</text>');
    // The unlimited client sent 6 calls at once into a quota of 3 at once.
    expect(svg).toMatch(/aria-label="calls \(middle run\): [1-9]\d*; setting: rate=inf burst=1"/);
  });

  it('replaces an existing file', async () => {
    const path = join(temp.dir, 'old.svg');
    await writeFile(path, 'old');
    const result = await runCli([...QUICK, '--rate=inf', '--burst=1', '--format=csv', '--chart', path]);
    expect(result.code).toBe(0);
    expect(linesOf(result.stdout)).toHaveLength(2);
    expect((await readFile(path, 'utf8')).startsWith('<svg')).toBe(true);
  });

  it('a path that cannot be written: exit 2 before any run', async () => {
    expectUsageError(await runCli([...TWO_SETTINGS, '--chart', join(temp.dir, 'no-such-dir', 'chart.svg')]), [
      /--chart/,
      /no-such-dir/,
      /cannot write/,
    ]);
    expectUsageError(await runCli([...TWO_SETTINGS, '--chart', `${temp.dir}/`]), [/--chart/]);
    expectUsageError(await runCli([...TWO_SETTINGS, '--chart', join(temp.dir, 'chart.png')]), [/--chart/, /\.svg/]);
  });
});

describe.concurrent('news-processor bench - bad flags: exit 2, one line naming the flag', () => {
  it.each([
    ['lists of different lengths without --grid', ['--rate=1000,3,2', '--burst=3,1'], [/--rate has 3 values and --burst 2/, /--grid/]],
    ['a bad rate in the list', ['--rate=3,abc'], [/--rate/, /'abc'/]],
    ['rate 0 in the list', ['--rate=0,3'], [/--rate/, /'0'/, /\binf\b/]],
    ['a fractional burst', ['--burst=1,1.5', '--rate=3,4'], [/--burst/, /'1\.5'/]],
    ['an empty list item', ['--rate=3,'], [/--rate/]],
    ['--repeat=0', ['--repeat=0'], [/--repeat/, /'0'/]],
    ['an unknown format', ['--format=xml'], [/--format/, /xml/, /table, csv, json/]],
    ['--json with another --format', ['--json', '--format=csv'], [/--json/, /--format=csv/]],
    ['a bad run flag', ['--min-latency=5ms', '--max-latency=1ms'], [/--min-latency/, /--max-latency/]],
    ['an unknown flag, with a suggestion', ['--repaet=2'], [/--repaet/, /--repeat/]],
    ['an excess argument', ['extra'], [/too many arguments|extra/]],
    ['--config (it sets the limits bench sweeps)', ['--config', 'fixtures/does-not-matter.json'], [/unknown option '--config'/]],
    ['--adaptive with rate=inf among the settings', ['--adaptive'], [/--adaptive/, /inf/]],
  ] as const)('%s', async (_label, args, mentions) => {
    expectUsageError(await runCli([...TWO_SETTINGS, ...args]), mentions);
  });
});
