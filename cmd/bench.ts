// `news-processor bench`: run rate/burst settings through the pipeline, print the figures, draw the chart.
import { access, constants, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CancelledError, RunEvents, type RunCounts } from '../src/index.ts';
// Not an entry's: its types are vega's, a package the library's declarations do not require.
import { loadChartRenderer } from '../src/bench/chart-renderer.ts';
import {
  pairSettings,
  renderBenchChart,
  runSweep,
  settingLabel,
  type BenchSetting,
  type SettingResult,
  type SweepResult,
} from '../src/bench/index.ts';
import { formatMs, formatRate, plural } from './format.ts';
import { accepting, integer, oneOf, rate, type ValueParser } from './parse-values.ts';
import { UsageError } from './usage-error.ts';
import { addRunOptions, type RunFlags } from './run-options.ts';
import { createLogger } from './logger.ts';
import { createProvider, providerQuota, providerSetup } from './provider-setup.ts';
import { groupRunOptions } from './run-help.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { validateRunFlags } from './run-validation.ts';
import { stdoutFailureText, stdoutState } from './stdout.ts';
import { handleSignals, STOP_SIGNALS, Terminal } from './terminal.ts';
import { expectedFields, openInput } from './input.ts';
import { checkedPlan, loadTasks } from './task-options.ts';

const FORMATS = ['table', 'csv', 'json'] as const;
type Format = (typeof FORMATS)[number];

interface BenchFlags extends RunFlags {
  rate: number[];
  burst: number[];
  grid: boolean;
  repeat: number;
  format: Format;
  chart?: string;
}

const EXAMPLES = `
Each setting runs --repeat times with the same seed, one run at a time. Elapsed is the median
over the repeats (with min–max), as are the rate floor (calls − burst) / rate and the
efficiency (the least the run could take / elapsed; the bound column says which lower bound
that was: the rate, the longest article's critical path through its tasks, or the articles'
critical paths over the workers). Counts —
calls (every attempt, retries included), 429s received, retries, failed articles — are the
middle run's, so they stay whole. A progress line shows on a terminal (not with --quiet).

Examples:
  $ news-processor bench --rate=1000,3,2 --burst=3,1,1 --articles=5 --workers=5
      the Go article's three runs, side by side with their floors
  $ news-processor bench --rate=2,4,5,6,8,10 --burst=1 --provider-rate=5 --articles=20
      429s appear once the client sends faster than the provider allows
  $ news-processor bench --rate=5,10 --burst=1,5 --grid --repeat=5 --chart bench.svg
      every combination; the chart shows calls granted over time against burst + rate·t
  $ news-processor bench --rate=inf,50 --burst=1 --format=csv > bench.csv

Exit codes: 0 the sweep ran (failed articles are counted, not fatal), 2 bad usage or input,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP): the finished runs are still printed.`;

/**
 * The `bench` subcommand. Register it on a program with `enablePositionalOptions()` (it reuses the
 * run flags); `onExit` receives its exit code.
 */
export function buildBenchCommand(onExit: (code: number) => void): Command {
  const command = new Command('bench')
    .description(
      'Sweep rate/burst settings: run each through the pipeline --repeat times and print calls, elapsed, ' +
        'the rate floor, efficiency, 429s and retries per setting; optionally chart the grants over time.',
    )
    .addOption(new Option('--grid', 'run every combination of --rate and --burst instead of pairing them by position').default(false))
    .addOption(new Option('--repeat <n>', 'runs per setting, all with the same seed').argParser(integer(1, 1000)).default(3))
    .addOption(
      new Option('--format <format>', `output: ${FORMATS.join(', ')} (--json is --format=json)`).argParser(oneOf(FORMATS)).default('table'),
    )
    .addOption(new Option('--chart <file.svg>', 'also draw as SVG: grants over time, elapsed vs floor, failures and 429s per setting'));
  addRunOptions(
    command,
    [
      new Option('--rate <list>', 'calls per second, comma-separated (e.g. 1000,3,2)').argParser(list(rate)).default([3], '3'),
      new Option('--burst <list>', 'bursts, comma-separated; one value goes with every rate')
        .argParser(list(integer(1, 1e9)))
        .default([3], '3'),
    ],
    { config: false },
  );
  return oneLineErrors(groupRunOptions(command).addHelpText('after', EXAMPLES)).action(async (flags: BenchFlags, self: Command) => {
    onExit(await bench(flags, self));
  });
}

/** A comma-separated list of values, each read by `parse`; an error names the item at fault. */
function list<T>(parse: ValueParser<T>): ValueParser<T[]> {
  return accepting(`each ${parse.accepts}`, (text) => {
    const items = text.split(',');
    return items.map((item) => {
      try {
        return parse(item);
      } catch (error) {
        if (!(error instanceof InvalidArgumentError)) throw error;
        const where = items.length > 1 ? `'${item.trim()}': ` : '';
        throw new InvalidArgumentError(`${where}${error.message}`);
      }
    });
  });
}

async function bench(flags: BenchFlags, command: Command): Promise<number> {
  validateRunFlags(flags);
  const format = outputFormat(flags, command);
  let settings: BenchSetting[];
  try {
    settings = pairSettings(flags.rate, flags.burst, { grid: flags.grid });
  } catch {
    throw new UsageError(
      `--rate has ${flags.rate.length} values and --burst ${flags.burst.length}: give one burst for every rate, ` +
        'as many bursts as rates, or --grid for every combination',
    );
  }
  // Every setting's providers are built once before any run, so a setting the flags rule out (say
  // --adaptive at rate=inf) fails here rather than after the runs before it.
  const setupsOf = (setting: BenchSetting) => [providerSetup(flags, createProvider(flags), setting.rate, setting.burst)];
  for (const setting of settings) setupsOf(setting);
  if (flags.maxCost !== undefined) throw new UsageError('--max-cost describes one run; a sweep makes many: leave it out of bench');
  // A sweep's runs share its tasks: read (and checked against a provider) once, before any run.
  const { tasks } = checkedPlan({ providers: setupsOf(settings[0]!), tasks: await loadTasks(flags) });
  if (flags.chart !== undefined) {
    await checkWritable(flags.chart);
    await loadChartRenderer();
  }

  // The table comes at the end; the only lines during the sweep are notices on stderr.
  const terminal = new Terminal({ printsLines: false });
  const logger = createLogger(flags);
  const input = await openInput(flags, (text) => terminal.notice(text), expectedFields(tasks));
  if (!input.repeatable) throw new UsageError(`--input ${flags.input}: a sweep reads its input once per run: give a file, not a stream`);
  const count = input.count!;

  const controller = new AbortController();
  const stopSignal = handleSignals(
    terminal,
    controller,
    'stopping the sweep; the finished runs are printed',
    (signal) => new CancelledError(`interrupted (${signal})`),
  );

  const showProgress = !flags.quiet;
  let progress = '';
  // The run's counts, as its tally keeps them: each run of the sweep brings its own.
  let tally: RunCounts | undefined;
  const events = new RunEvents();
  events.on('runStarted', (run) => {
    tally = run.counts;
  });
  let runStartedMs = performance.now();
  const drawProgress = () => {
    if (showProgress && progress !== '')
      terminal.status(`${progress} · ${plural(tally?.calls().calls ?? 0, 'call')} · ${formatMs(performance.now() - runStartedMs)}`);
  };
  const progressTimer = setInterval(drawProgress, 250);

  let result: SweepResult;
  try {
    result = await runSweep({
      settings,
      repeat: flags.repeat,
      createProviders: setupsOf,
      tasks,
      createSource: () => input.open(),
      timeline: flags.chart !== undefined,
      workers: flags.workers,
      timeoutMs: flags.timeout,
      retry: { maxAttempts: flags.maxAttempts },
      logger,
      signal: controller.signal,
      onRunStart: ({ setting, repeat, run, runs }) => {
        progress = `run ${run}/${runs}: ${settingLabel(setting)}, repeat ${repeat}/${flags.repeat}`;
        tally = undefined;
        runStartedMs = performance.now();
        drawProgress();
      },
      events,
    });
  } finally {
    clearInterval(progressTimer);
    await terminal.close();
  }

  if (format === 'json') process.stdout.write(`${formatJson(result, flags, count)}\n`);
  else if (format === 'csv') process.stdout.write(formatCsv(result));
  else process.stdout.write(`${[describeRun(flags, count), ...formatTable(result)].join('\n')}\n`);

  if (flags.chart !== undefined) {
    const svg = await renderBenchChart(result, {
      subtitle: describeRun(flags, count),
      providerQuota: providerQuota(flags),
    });
    try {
      await writeFile(flags.chart, svg);
    } catch (error) {
      throw new UsageError(`--chart ${flags.chart}: cannot write file (${(error as Error).message})`);
    }
    if (format === 'table') process.stdout.write(`Chart: ${flags.chart}\n`);
  }
  const signal = stopSignal();
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  if (stdoutState() === 'failed') {
    process.stderr.write(`error: ${stdoutFailureText()}; the sweep's ${format === 'table' ? 'table' : 'figures'} could not be printed\n`);
    return 1;
  }
  if (stdoutState() === 'closed') return 141;
  return result.interrupted && signal !== undefined ? STOP_SIGNALS[signal] : 0;
}

function outputFormat(flags: BenchFlags, command: Command): Format {
  if (!flags.json) return flags.format;
  if (command.getOptionValueSource('format') === 'cli' && flags.format !== 'json') {
    throw new UsageError(`--json and --format=${flags.format} disagree: give one of them`);
  }
  return 'json';
}

/** Fails before any run when the chart could not be written, so a long sweep is not lost at the end. */
async function checkWritable(path: string): Promise<void> {
  if (!path.toLowerCase().endsWith('.svg')) throw new UsageError(`--chart ${path}: the chart is SVG, give a file ending in .svg`);
  const target = resolve(path);
  try {
    const existing = await stat(target).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (existing?.isDirectory() === true) throw new Error('is a directory');
    await access(existing === undefined ? dirname(target) : target, constants.W_OK);
  } catch (error) {
    throw new UsageError(`--chart ${path}: cannot write file (${(error as Error).message})`);
  }
}

/** The line above the table and under the chart's title: what every run in the sweep had in common. */
function describeRun(flags: BenchFlags, articles: number): string {
  const parts = [
    `${plural(articles, 'article')}${flags.input === undefined ? '' : ` from ${flags.input}`}`,
    plural(flags.workers, 'worker'),
    `latency ${formatLatency(flags.minLatency)}–${formatLatency(flags.maxLatency)}`,
  ];
  if (flags.profile !== 'default') parts.push(`profile ${flags.profile}`);
  if (flags.outage !== undefined) parts.push(`outage ${formatMs(flags.outage.startMs)}–${formatMs(flags.outage.endMs)}`);
  if (flags.providerRate !== undefined) parts.push(`provider quota ${formatRate(flags.providerRate)}/s burst ${flags.providerBurst ?? 1}`);
  if (flags.tpm !== undefined) parts.push(`${flags.tpm} tokens/min`);
  if (flags.adaptive) parts.push('adaptive rate');
  parts.push(`${plural(flags.repeat, 'run')} per setting, seed ${flags.seed}`);
  return parts.join(' · ');
}

function formatLatency(ms: number): string {
  return ms === 0 ? '0ms' : formatMs(ms);
}

function formatTable(result: SweepResult): string[] {
  const header = ['rate', 'burst', 'calls', 'elapsed (median, min–max)', 'rate floor', 'bound', 'efficiency', '429s', 'retries', 'failed'];
  const rows = result.settings.map((s) => [
    formatRate(s.setting.rate),
    String(s.setting.burst),
    String(s.calls),
    s.runs.length === 1
      ? formatMs(s.elapsedMs.median)
      : `${formatMs(s.elapsedMs.median)} (${formatMs(s.elapsedMs.min)}–${formatMs(s.elapsedMs.max)})`,
    s.setting.rate === Infinity ? 'none' : formatMs(s.rateFloorMs),
    s.boundBy ?? 'n/a',
    s.efficiency === null ? 'n/a' : `${(s.efficiency * 100).toFixed(1)}%`,
    String(s.rateLimited),
    String(s.retries),
    String(s.failed),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  // Numbers line up on the right, the elapsed column (a range) on the left.
  const render = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 3 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ')
      .trimEnd();
  const lines = [render(header), ...rows.map(render)];
  if (result.interrupted) lines.push('Interrupted: the run in progress and the settings after it are left out.');
  return lines;
}

const CSV_COLUMNS = [
  'rate',
  'burst',
  'runs',
  'calls',
  'elapsed_median_ms',
  'elapsed_min_ms',
  'elapsed_max_ms',
  'rate_floor_ms',
  'least_elapsed_ms',
  'bound_by',
  'efficiency',
  'rate_limited',
  'retries',
  'failed',
] as const;

/** One row per setting; rates as `inf` when unlimited, efficiency empty there. Milliseconds to 0.001. */
function formatCsv(result: SweepResult): string {
  const ms = (value: number) => String(Math.round(value * 1000) / 1000);
  const rows = result.settings.map((s: SettingResult) => [
    formatRate(s.setting.rate),
    String(s.setting.burst),
    String(s.runs.length),
    String(s.calls),
    ms(s.elapsedMs.median),
    ms(s.elapsedMs.min),
    ms(s.elapsedMs.max),
    ms(s.rateFloorMs),
    ms(s.leastElapsedMs),
    s.boundBy ?? '',
    s.efficiency === null ? '' : s.efficiency.toFixed(4),
    String(s.rateLimited),
    String(s.retries),
    String(s.failed),
  ]);
  return [CSV_COLUMNS, ...rows].map((row) => `${row.join(',')}\n`).join('');
}

function formatJson(result: SweepResult, flags: BenchFlags, articles: number): string {
  const json = {
    articles,
    workers: flags.workers,
    repeat: flags.repeat,
    seed: flags.seed,
    interrupted: result.interrupted,
    settings: result.settings.map((s) => ({
      rate: s.setting.rate,
      burst: s.setting.burst,
      label: s.label,
      calls: s.calls,
      elapsedMs: s.elapsedMs,
      rateFloorMs: s.rateFloorMs,
      leastElapsedMs: s.leastElapsedMs,
      boundBy: s.boundBy,
      efficiency: s.efficiency,
      rateLimited: s.rateLimited,
      retries: s.retries,
      failed: s.failed,
      runs: s.runs.map(({ summary, ...figures }) => ({ ...figures, articles: summary.articles, succeeded: summary.succeeded })),
    })),
  };
  return JSON.stringify(json, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2);
}
