import { systemClock } from '../clock.ts';
import type { Article } from '../sources/article.ts';
import type { RunSummary } from '../pipeline/metrics.ts';
import type { ProviderSetup } from '../gate/provider-options.ts';
import { runPipeline, type PipelineOptions } from '../pipeline/run.ts';
import { RunEvents } from '../pipeline/run-events.ts';

/** One limiter setting to measure. */
export interface BenchSetting {
  /** Calls per second (`Infinity` for no limit). */
  readonly rate: number;
  /** Calls that may go at once after a quiet spell. */
  readonly burst: number;
}

/** `rate=3 burst=1`, `rate=inf burst=1`: how a setting is named in tables, legends and JSON. */
export function settingLabel(setting: BenchSetting): string {
  return `rate=${setting.rate === Infinity ? 'inf' : String(setting.rate)} burst=${setting.burst}`;
}

/**
 * The settings a list of rates and a list of bursts describe, in order and without duplicates.
 * By position (`rates[i]` with `bursts[i]`; a list of one value goes with every value of the
 * other), or with `grid` every combination, rate by rate. Throws `TypeError` for lists of different
 * lengths (neither of one value) without `grid`, an empty list, or a value out of range.
 */
export function pairSettings(
  rates: readonly number[],
  bursts: readonly number[],
  options: { readonly grid?: boolean } = {},
): BenchSetting[] {
  if (rates.length === 0 || bursts.length === 0) {
    throw new TypeError(`Expected at least one rate and one burst, got ${rates.length} rates and ${bursts.length} bursts`);
  }
  for (const rate of rates) {
    if (!(rate > 0)) throw new TypeError(`Expected every rate to be > 0 or Infinity, got ${String(rate)}`);
  }
  for (const burst of bursts) {
    if (!Number.isInteger(burst) || burst < 1) throw new TypeError(`Expected every burst to be an integer >= 1, got ${String(burst)}`);
  }
  const pairs: BenchSetting[] = [];
  if (options.grid === true) {
    for (const rate of rates) for (const burst of bursts) pairs.push({ rate, burst });
  } else {
    if (rates.length !== bursts.length && rates.length !== 1 && bursts.length !== 1) {
      throw new TypeError(
        `Expected as many rates as bursts (or a single value of either), got ${rates.length} rates and ${bursts.length} bursts`,
      );
    }
    const count = Math.max(rates.length, bursts.length);
    for (let i = 0; i < count; i++) pairs.push({ rate: rates[rates.length === 1 ? 0 : i]!, burst: bursts[bursts.length === 1 ? 0 : i]! });
  }
  const seen = new Set<string>();
  return pairs.filter((setting) => {
    const label = settingLabel(setting);
    if (seen.has(label)) return false;
    seen.add(label);
    return true;
  });
}

/**
 * The figures of a run the sweep reports, as its {@link RunSummary} has them: the calls, retries
 * and 429s, the rate floor (of its one provider), the least the run could take and which bound that is, the efficiency,
 * and the articles that ended as dead letters (`failed`).
 */
export type BenchFigures = Pick<
  RunSummary,
  'calls' | 'retries' | 'rateLimited' | 'rateFloorMs' | 'leastElapsedMs' | 'boundBy' | 'efficiency' | 'failed'
>;

/** What one run of one setting did. Milliseconds throughout. */
export interface BenchRun extends BenchFigures {
  /** 1-based repeat number. */
  readonly repeat: number;
  /** How long the run took, from its first pull of the source to its last result. */
  readonly elapsedMs: number;
  /** The run's whole `RunSummary`, as `runPipeline` resolved with it. */
  readonly summary: RunSummary;
}

/**
 * A setting's runs and their medians. Durations and ratios are true medians (of an even number
 * of runs, the mean of the middle two); counts are the middle run's, the lower of the two middle
 * ones for an even number, so that they stay whole.
 */
export interface SettingResult extends BenchFigures {
  /** The rate and burst these runs were made at. */
  readonly setting: BenchSetting;
  /** The setting as the table and the chart name it (`rate=10 burst=5`). */
  readonly label: string;
  /** Every run of the setting, in the order they ran. */
  readonly runs: readonly BenchRun[];
  /** How long the setting's runs took: their median, the shortest and the longest, in ms. */
  readonly elapsedMs: { readonly median: number; readonly min: number; readonly max: number };
  /**
   * When each call of the first run got its token (the call's end minus its latency), in ms since
   * that run started, ascending: the grant timeline the chart draws (empty with `timeline: false`).
   */
  readonly grantsMs: readonly number[];
}

/** What `runSweep()` resolves with: each setting's runs and medians. */
export interface SweepResult {
  /** One entry per setting with at least one finished run, in the order given. */
  readonly settings: readonly SettingResult[];
  /** The signal aborted the sweep: the run it stopped is left out, as are settings not reached. */
  readonly interrupted: boolean;
}

/** Told as each run starts. */
export interface SweepRunStart {
  /** The rate and burst this run is made at. */
  readonly setting: BenchSetting;
  /** 0-based index of the setting. */
  readonly settingIndex: number;
  /** 1-based repeat number. */
  readonly repeat: number;
  /** 1-based number of this run in the whole sweep, and how many runs there are. */
  readonly run: number;
  /** How many runs the whole sweep makes. */
  readonly runs: number;
}

/** What `runSweep()` takes: the settings to compare, how often to run each, and the pipeline options every run shares. */
export interface SweepOptions
  extends Pick<PipelineOptions, 'tasks' | 'routes' | 'workers' | 'timeoutMs' | 'retry' | 'clock' | 'logger' | 'events'> {
  /** The rate and burst settings to run, in the order the table lists them. */
  readonly settings: readonly BenchSetting[];
  /** Runs per setting. @default 3 */
  readonly repeat?: number;
  /**
   * The providers of one run at `setting` (its rate and burst are the first provider's request
   * limit), new for every run: simulated providers built from the same seed replay the same calls.
   * For instance `({ rate, burst }) => [{ provider: new SimulatedProvider({ seed: 1 }), limits: requestLimit(rate, burst) }]`.
   */
  readonly createProviders: (setting: BenchSetting) => readonly ProviderSetup[];
  /** A fresh source of the same articles for every run. */
  readonly createSource: () => Iterable<Article> | AsyncIterable<Article>;
  /** Abort to stop the sweep: the run in progress is cancelled and left out of the result. @default none */
  readonly signal?: AbortSignal | undefined;
  /** Told as each run starts. @default none */
  readonly onRunStart?: (start: SweepRunStart) => void;
  /**
   * Keep each setting's grant timeline (for the chart). It holds one number per call of the first
   * run, so a sweep over a large batch that draws no chart can leave it off.
   * @default true
   */
  readonly timeline?: boolean;
}

/**
 * Runs every setting `repeat` times through {@link runPipeline}, one run at a time (runs side by
 * side would share the machine and skew each other's timing), and returns each run's figures, the
 * medians per setting and the first run's grant timeline.
 */
export async function runSweep(options: SweepOptions): Promise<SweepResult> {
  const { settings, signal } = options;
  const repeat = options.repeat ?? 3;
  const clock = options.clock ?? systemClock;
  if (settings.length === 0) throw new TypeError('Expected at least one setting, got none');
  if (!Number.isInteger(repeat) || repeat < 1) throw new TypeError(`Expected repeat to be an integer >= 1, got ${String(repeat)}`);

  const results: SettingResult[] = [];
  const runs = settings.length * repeat;
  const keepTimeline = options.timeline ?? true;
  const events = options.events ?? new RunEvents();
  for (const [settingIndex, setting] of settings.entries()) {
    const settingRuns: BenchRun[] = [];
    let grantsMs: number[] = [];
    for (let r = 1; r <= repeat && signal?.aborted !== true; r++) {
      options.onRunStart?.({ setting, settingIndex, repeat: r, run: settingIndex * repeat + r, runs });
      const grants: number[] = [];
      const startMs = clock.now();
      const stopListening =
        keepTimeline && r === 1
          ? events.on('attempt', (event) => {
              if (event.called) grants.push(event.atMs - event.latencyMs - startMs);
            })
          : undefined;
      const summary = await runPipeline({
        source: options.createSource(),
        providers: options.createProviders(setting),
        tasks: options.tasks,
        routes: options.routes,
        clock,
        workers: options.workers,
        timeoutMs: options.timeoutMs,
        retry: options.retry,
        logger: options.logger,
        signal,
        events,
      }).finally(stopListening);
      if (summary.interrupted) break;
      settingRuns.push(runFigures(r, summary));
      if (r === 1) grantsMs = grants.sort((a, b) => a - b);
    }
    if (settingRuns.length > 0) results.push(settingFigures(setting, settingRuns, grantsMs));
    if (signal?.aborted === true) break;
  }
  return { settings: results, interrupted: signal?.aborted === true };
}

function runFigures(repeat: number, summary: RunSummary): BenchRun {
  return {
    repeat,
    elapsedMs: summary.elapsedMs,
    calls: summary.calls,
    rateFloorMs: summary.providers[0]?.rateFloorMs ?? 0,
    leastElapsedMs: summary.leastElapsedMs,
    boundBy: summary.boundBy,
    efficiency: summary.efficiency,
    rateLimited: summary.rateLimited,
    retries: summary.retries,
    failed: summary.failed,
    summary,
  };
}

function settingFigures(setting: BenchSetting, runs: readonly BenchRun[], grantsMs: readonly number[]): SettingResult {
  const elapsed = runs.map((run) => run.elapsedMs);
  const efficiencies = runs.map((run) => run.efficiency);
  return {
    setting,
    label: settingLabel(setting),
    runs,
    calls: middleCount(runs.map((run) => run.calls)),
    elapsedMs: { median: median(elapsed), min: Math.min(...elapsed), max: Math.max(...elapsed) },
    rateFloorMs: median(runs.map((run) => run.rateFloorMs)),
    leastElapsedMs: median(runs.map((run) => run.leastElapsedMs)),
    boundBy: mostCommon(runs.map((run) => run.boundBy)),
    efficiency: efficiencies.includes(null) ? null : median(efficiencies as number[]),
    rateLimited: middleCount(runs.map((run) => run.rateLimited)),
    retries: middleCount(runs.map((run) => run.retries)),
    failed: middleCount(runs.map((run) => run.failed)),
    grantsMs,
  };
}

/** The middle of a non-empty list of counts, the lower of the two middle ones for an even count: always a count a run had. */
function middleCount(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function mostCommon<T>(values: readonly T[]): T {
  const counts = new Map<T, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
}

/** The middle value of a non-empty list (the mean of the middle two for an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
