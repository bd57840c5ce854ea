import type { Clock } from '../clock.ts';
import type { BatchEvent } from '../batch/batch-api.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import { NANO_USD, type Budget } from '../quota/budget.ts';
import type { LimitSpec } from '../quota/provider-limits.ts';
import { Histogram } from '../pipeline/histogram.ts';
import type { RunSummary } from '../pipeline/metrics.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { LlmRequest } from '../provider/provider.ts';
import { checkClock, checkInteger, checkDurationMs } from '../validation/checks.ts';
import { Distribution } from './distribution.ts';
import { TimeBuckets, type BucketColumn } from './time-buckets.ts';

/** What a recorder keeps unless told otherwise. */
export const RUN_RECORDER_DEFAULTS = Object.freeze({
  /** The finest grain of the series, in ms: a second. */
  bucketMs: 1000,
  /**
   * Buckets per series at most: a run longer than this many seconds has its buckets widened (2 s,
   * 4 s, …), so a day's run keeps as few points as a ten-minute one.
   */
  maxBuckets: 600,
});

/** A provider as the report draws it: its name and its limits. */
export interface RecordedProvider {
  readonly name: string;
  readonly limits: readonly LimitSpec[];
}

/** A pool as the report draws it: its calls, its members' together, against their limits together. */
export interface RecordedPool {
  readonly name: string;
  /** Its members' names: providers of the record. */
  readonly members: readonly string[];
}

export interface RunRecorderOptions {
  /** The clock of the run's events (`PipelineOptions.clock`). @default none: required */
  readonly clock: Clock;
  /** The run's start on that clock, ms. @default clock.now() */
  readonly startMs?: number | undefined;
  /** The providers (pool members each one) whose calls are drawn against their limits. */
  readonly providers: readonly RecordedProvider[];
  /** The pools of the providers, each drawn beside its members. @default none */
  readonly pools?: readonly RecordedPool[] | undefined;
  /** The tasks, in order, for the table per task. @default none (a row per task as its first call ends) */
  readonly tasks?: readonly string[] | undefined;
  /** The run's money: what is spent is drawn against it, from what was spent before the run. @default none */
  readonly budget?: Budget | undefined;
  /** The finest grain of the series, ms. @default RUN_RECORDER_DEFAULTS.bucketMs */
  readonly bucketMs?: number | undefined;
  /** Buckets per series at most. @default RUN_RECORDER_DEFAULTS.maxBuckets */
  readonly maxBuckets?: number | undefined;
}

/** A task's row of the report's table. */
export interface RecordedTask {
  readonly name: string;
  /** Attempts that reached a provider, retries included. */
  readonly calls: number;
  readonly retries: number;
  readonly rateLimited: number;
  readonly latencyMs: { readonly p50: number; readonly p95: number };
  readonly tokensUsed: number;
  /** What its calls cost, USD; absent when none had a price. */
  readonly costUsd?: number;
}

/** A bin of a distribution: durations from `fromMs` up to `toMs`, and how many. */
export interface RecordedBin {
  readonly fromMs: number;
  /** `null` for the last bin, which has no end. */
  readonly toMs: number | null;
  readonly count: number;
}

/** A batch of a batch run: from its submission to its end, ms since the run's start. */
export interface RecordedBatch {
  readonly id: string;
  readonly rows: number;
  /** 0 for a batch a resumed run found at the provider. */
  readonly fromMs: number;
  /** `null` while it runs. */
  readonly toMs: number | null;
  /** `submitted` while it runs, then how it ended (`completed`, `expired`, …). */
  readonly status: string;
}

/**
 * Everything a report shows, as plain JSON: the series, one value per bucket of `bucketMs` from the
 * run's start, under keys `<provider>\u0000<what>` per provider (`calls`, `rate-limited`, `retries`,
 * `errors`, `input-tokens`, `output-tokens`) and `<what>` for the run (`in-flight`, the peak of
 * each bucket; `cost-nano-usd`; `succeeded`, `failed`, `cancelled`).
 */
export interface RunRecord {
  /** When the run started, wall time (ISO 8601). */
  readonly startedAt: string;
  /** Since the start, as far as the record goes, ms. */
  readonly elapsedMs: number;
  readonly bucketMs: number;
  readonly buckets: number;
  readonly providers: readonly RecordedProvider[];
  /** The providers' pools; absent when there are none. */
  readonly pools?: readonly RecordedPool[];
  readonly series: Readonly<Record<string, readonly number[]>>;
  readonly latencyMs: readonly RecordedBin[];
  readonly waitMs: readonly RecordedBin[];
  readonly tasks: readonly RecordedTask[];
  /** The figures so far. */
  readonly totals: {
    readonly articles: number;
    readonly succeeded: number;
    readonly failed: number;
    readonly cancelled: number;
    readonly calls: number;
    readonly retries: number;
    readonly rateLimited: number;
    readonly inFlight: number;
    readonly tokensUsed: number;
    /** USD, when some provider has a price. */
    readonly costUsd?: number;
  };
  /** The budget, and what of it was spent before the run began, USD. */
  readonly budget?: { readonly maxUsd: number; readonly spentBeforeUsd: number };
  /** The run's summary, once it has ended (a report); absent while it goes (the dashboard) and for a batch run. */
  readonly summary?: RunSummary;
  /** The batches of a batch run, in the order submitted; absent for a live run. */
  readonly batches?: readonly RecordedBatch[];
  /** How a run without a summary ended (a batch run's `finished`, `interrupted`); absent while it goes. */
  readonly ending?: string;
  /** A change counter: a dashboard redraws only when it moved. */
  readonly version: number;
}

/** The key of a provider's series. */
export const seriesKey = (provider: string, what: string): string => `${provider}\u0000${what}`;

/** What is counted per provider, each a series of its own. */
type ProviderSeries = 'calls' | 'rate-limited' | 'retries' | 'errors' | 'input-tokens' | 'output-tokens';

interface TaskCounters {
  calls: number;
  retries: number;
  rateLimited: number;
  tokensUsed: number;
  costNanoUsd: number;
  priced: boolean;
  readonly latency: Histogram;
}

/** Outcomes that are no fault of the call: a run stopping, a 429 (counted on its own). */
const NOT_ERRORS = new Set(['ok', 'rate-limited', 'aborted']);

/**
 * An observer of a run that keeps what its report draws, in memory that does not grow with the
 * run: the series in a {@link TimeBuckets} (a second per bucket, widened as the run grows past
 * `maxBuckets`), the latencies and waits in fixed bins, a row per task. Give its `onSend`,
 * `onAttempt` and `onResult` to the run (`runPipeline`'s options of those names), `finish` it with
 * the summary, and read it with `record()` at any time — while the run goes too.
 */
export class RunRecorder {
  readonly #clock: Clock;
  readonly #startMs: number;
  readonly #startedAt: string;
  readonly #buckets: TimeBuckets;
  readonly #providers: readonly RecordedProvider[];
  readonly #pools: readonly RecordedPool[];
  readonly #budget: { readonly maxUsd: number; readonly spentBeforeUsd: number } | undefined;
  readonly #tasks = new Map<string, TaskCounters>();
  readonly #providerColumns = new Map<string, (what: ProviderSeries) => BucketColumn>();
  readonly #latency = new Distribution();
  readonly #wait = new Distribution();
  readonly #inFlight;
  readonly #cost;
  readonly #articles;
  #inFlightNow = 0;
  /** When the gauge last moved. */
  #inFlightSinceMs: number;
  #totals = { articles: 0, succeeded: 0, failed: 0, cancelled: 0, calls: 0, retries: 0, rateLimited: 0, tokensUsed: 0, costNanoUsd: 0 };
  #priced = false;
  #summary: RunSummary | undefined;
  #ending: string | undefined;
  /** A batch run's batches by id: a few per run (tens of thousands of rows each). */
  readonly #batches = new Map<string, { rows: number; fromMs: number; toMs: number | null; status: string }>();
  #endMs: number | undefined;
  #version = 0;

  constructor(options: RunRecorderOptions) {
    checkClock('clock', options.clock);
    const { bucketMs = RUN_RECORDER_DEFAULTS.bucketMs, maxBuckets = RUN_RECORDER_DEFAULTS.maxBuckets } = options;
    checkDurationMs('bucketMs', bucketMs, { positive: true });
    checkInteger('maxBuckets', maxBuckets, 2);
    this.#clock = options.clock;
    this.#startMs = options.startMs ?? options.clock.now();
    this.#startedAt = new Date(Date.now() - (options.clock.now() - this.#startMs)).toISOString();
    this.#inFlightSinceMs = this.#startMs;
    this.#buckets = new TimeBuckets(this.#startMs, bucketMs, maxBuckets);
    this.#providers = options.providers.map(({ name, limits }) => ({
      name,
      limits: limits.map(({ kind, rate, burst }) => ({ kind, rate, burst })),
    }));
    this.#pools = (options.pools ?? []).map(({ name, members }) => ({ name, members: [...members] }));
    this.#budget = options.budget === undefined ? undefined : { maxUsd: options.budget.maxUsd, spentBeforeUsd: options.budget.spentUsd };
    for (const task of options.tasks ?? []) this.#task(task);
    this.#inFlight = this.#buckets.column('in-flight', 'max');
    this.#cost = this.#buckets.column('cost-nano-usd', 'sum');
    this.#articles = {
      succeeded: this.#buckets.column('succeeded', 'sum'),
      failed: this.#buckets.column('failed', 'sum'),
      cancelled: this.#buckets.column('cancelled', 'sum'),
    };
  }

  /** A call goes to its provider (`PipelineOptions.onSend`). */
  readonly onSend = (_request: LlmRequest): void => {
    this.#setInFlight(this.#clock.now(), this.#inFlightNow + 1);
  };

  /** An attempt ended (`PipelineOptions.onAttempt`). */
  readonly onAttempt = (event: AttemptEvent): void => {
    this.#version++;
    const column = this.#columnsOf(event.provider);
    if (event.outcome !== 'circuit-open') this.#wait.record(event.waitMs);
    if (!NOT_ERRORS.has(event.outcome)) column('errors').add(event.atMs);
    if (!event.called) return;
    if (event.retryInMs !== undefined) {
      column('retries').add(event.atMs);
      this.#totals.retries++;
    }
    this.#setInFlight(event.atMs, this.#inFlightNow - 1);
    column('calls').add(event.sentAtMs!);
    this.#totals.calls++;
    this.#latency.record(event.latencyMs);
    const task = this.#task(event.task);
    task.calls++;
    task.latency.record(event.latencyMs);
    if (event.retryInMs !== undefined) task.retries++;
    if (event.outcome === 'rate-limited') {
      column('rate-limited').add(event.atMs);
      task.rateLimited++;
      this.#totals.rateLimited++;
    }
    if (event.usage !== undefined) {
      column('input-tokens').add(event.atMs, event.usage.inputTokens);
      column('output-tokens').add(event.atMs, event.usage.outputTokens);
      const tokens = event.usage.inputTokens + event.usage.outputTokens;
      task.tokensUsed += tokens;
      this.#totals.tokensUsed += tokens;
    }
    if (event.costUsd !== undefined) {
      const nano = Math.round(event.costUsd * NANO_USD);
      this.#priced = task.priced = true;
      this.#cost.add(event.atMs, nano);
      task.costNanoUsd += nano;
      this.#totals.costNanoUsd += nano;
    }
  };

  /** An article ended (`PipelineOptions.onResult`). */
  readonly onResult = (result: ArticleResult): void => {
    this.#version++;
    this.#articles[result.status].add(this.#clock.now());
    this.#totals.articles++;
    this.#totals[result.status]++;
  };

  /** A batch run's batch was submitted or ended (`BatchRunOptions.onBatch`). */
  readonly onBatch = (event: BatchEvent): void => {
    this.#version++;
    const atMs = event.atMs - this.#startMs;
    const known = this.#batches.get(event.batchId);
    if (event.type === 'submitted' || known === undefined) {
      // A batch first heard of as it ends was submitted before this run began: a resume's.
      const fromMs = event.type === 'submitted' ? atMs : 0;
      this.#batches.set(event.batchId, { rows: event.rows, fromMs, toMs: null, status: event.status });
    }
    if (event.type === 'ended') Object.assign(this.#batches.get(event.batchId)!, { toMs: atMs, status: event.status });
  };

  /** A run without a pipeline summary (a batch run) ended, as `ending` says: the record stops here. */
  end(ending: string): void {
    this.#version++;
    this.#ending = ending;
    this.#endMs = this.#clock.now();
    this.#buckets.reach(this.#endMs);
  }

  /** The run ended with `summary`: the record stops at its end and shows its figures. */
  finish(summary: RunSummary): void {
    this.#version++;
    this.#summary = summary;
    this.#endMs = this.#startMs + summary.elapsedMs;
    this.#buckets.reach(this.#endMs);
  }

  /** What the report shows, as it stands. */
  record(): RunRecord {
    const nowMs = this.#endMs ?? this.#clock.now();
    this.#inFlight.raiseSpan(this.#inFlightSinceMs, nowMs, this.#inFlightNow);
    this.#buckets.reach(nowMs);
    const series: Record<string, number[]> = {};
    for (const key of this.#buckets.keys()) series[key] = this.#buckets.values(key);
    const { costNanoUsd, ...totals } = this.#totals;
    return {
      startedAt: this.#startedAt,
      elapsedMs: nowMs - this.#startMs,
      bucketMs: this.#buckets.bucketMs,
      buckets: this.#buckets.length,
      providers: this.#providers,
      ...(this.#pools.length > 0 && { pools: this.#pools }),
      series,
      latencyMs: binsOf(this.#latency),
      waitMs: binsOf(this.#wait),
      tasks: [...this.#tasks].map(([name, t]) => ({
        name,
        calls: t.calls,
        retries: t.retries,
        rateLimited: t.rateLimited,
        latencyMs: t.latency.count === 0 ? { p50: 0, p95: 0 } : { p50: t.latency.quantile(0.5), p95: t.latency.quantile(0.95) },
        tokensUsed: t.tokensUsed,
        ...(t.priced && { costUsd: t.costNanoUsd / NANO_USD }),
      })),
      totals: { ...totals, inFlight: this.#inFlightNow, ...(this.#priced && { costUsd: costNanoUsd / NANO_USD }) },
      ...(this.#budget !== undefined && { budget: this.#budget }),
      ...(this.#summary !== undefined && { summary: this.#summary }),
      ...(this.#batches.size > 0 && { batches: [...this.#batches].map(([id, batch]) => ({ id, ...batch })) }),
      ...(this.#ending !== undefined && { ending: this.#ending }),
      version: this.#version,
    };
  }

  #setInFlight(atMs: number, value: number): void {
    // Every bucket since the gauge last moved held its old value, those no call began or ended in too.
    this.#inFlight.raiseSpan(this.#inFlightSinceMs, atMs, this.#inFlightNow);
    this.#inFlightNow = value;
    this.#inFlightSinceMs = atMs;
    this.#inFlight.raise(atMs, value);
  }

  /** A provider's columns, made once: an attempt then costs no string or lookup per series. */
  #columnsOf(provider: string): (what: ProviderSeries) => BucketColumn {
    let columns = this.#providerColumns.get(provider);
    if (columns === undefined) {
      const made = new Map<ProviderSeries, BucketColumn>();
      columns = (what) => {
        let found = made.get(what);
        if (found === undefined) {
          found = this.#buckets.column(seriesKey(provider, what), 'sum');
          made.set(what, found);
        }
        return found;
      };
      this.#providerColumns.set(provider, columns);
    }
    return columns;
  }

  #task(name: string): TaskCounters {
    let task = this.#tasks.get(name);
    if (task === undefined) {
      task = { calls: 0, retries: 0, rateLimited: 0, tokensUsed: 0, costNanoUsd: 0, priced: false, latency: new Histogram() };
      this.#tasks.set(name, task);
    }
    return task;
  }
}

function binsOf(distribution: Distribution): RecordedBin[] {
  return distribution.bins().map(({ fromMs, toMs, count }) => ({ fromMs, toMs: toMs === Infinity ? null : toMs, count }));
}
