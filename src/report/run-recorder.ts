import type { Clock } from '../clock.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import { NANO_USD } from '../quota/budget.ts';
import type { LimitSpec } from '../quota/provider-limits.ts';
import type { RunSummary } from '../pipeline/metrics.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { BatchEvent, RunEnd, RunObserver, RunStart } from '../pipeline/run-events.ts';
import { isErrorAttempt, isRepair, isRetried, type CallColumn, type RunCounts } from '../pipeline/run-tally.ts';
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
  /** The clock of the run's events (`PipelineOptions.clock`): what "now" is while the run goes. @default none: required */
  readonly clock: Clock;
  /** The providers (pool members each one) whose calls are drawn against their limits. */
  readonly providers: readonly RecordedProvider[];
  /** The pools of the providers, each drawn beside its members. @default none */
  readonly pools?: readonly RecordedPool[] | undefined;
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
  /** Of the calls, the repairs: asked again with an unfit answer and its problems. */
  readonly repairs: number;
  readonly rateLimited: number;
  readonly latencyMs: { readonly p50: number; readonly p95: number };
  readonly tokensUsed: number;
  /** What its calls cost, USD; absent when none had a price. */
  readonly costUsd?: number;
  /** The most its calls whose fate is unknown (perhaps billed) may have cost, USD, apart from `costUsd`; absent when none. */
  readonly unknownCostUsd?: number;
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
 * `repairs`, `errors`, `input-tokens`, `output-tokens`) and `<what>` for the run (`in-flight`, the
 * peak of each bucket; `cost-nano-usd`; `succeeded`, `failed`, `cancelled`). The counts are the
 * run's own (`RunStart.counts`), placed in time.
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
    readonly repairs: number;
    readonly rateLimited: number;
    readonly inFlight: number;
    readonly tokensUsed: number;
    /** USD, when some provider has a price. */
    readonly costUsd?: number;
    /** The most the calls whose fate is unknown (perhaps billed) may have cost, USD, apart from `costUsd`; when some provider has a price. */
    readonly unknownCostUsd?: number;
  };
  /** The budget, and what of it was spent before the run began, USD. */
  readonly budget?: { readonly maxUsd: number; readonly spentBeforeUsd: number };
  /** Whether the run has ended: the last bucket is then whole as far as the run went, not a second still filling. */
  readonly ended: boolean;
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
type ProviderSeries = 'calls' | 'rate-limited' | 'retries' | 'repairs' | 'errors' | 'input-tokens' | 'output-tokens';

/**
 * What a report shows of a run, kept as it goes in memory that does not grow with the run: the
 * run's counts are its own (`RunStart.counts`), read as they stand; the recorder places them in
 * time — the series in a {@link TimeBuckets} (a second per bucket, widened as the run grows past
 * `maxBuckets`), the latencies and waits in fixed bins — and keeps a batch run's batches. Observe
 * the run's events with it (`events.observe(recorder)`) before the run starts, and read it with
 * `record()` at any time — while the run goes too.
 */
export class RunRecorder implements RunObserver {
  readonly #clock: Clock;
  readonly #bucketMs: number;
  readonly #maxBuckets: number;
  readonly #providers: readonly RecordedProvider[];
  readonly #pools: readonly RecordedPool[];
  #run:
    | { readonly tally: RunCounts; readonly startedAt: string; readonly buckets: TimeBuckets; readonly stopWatching: () => void }
    | undefined;
  #budget: { readonly maxUsd: number; readonly spentBeforeUsd: number } | undefined;
  readonly #providerColumns = new Map<string, (what: ProviderSeries) => BucketColumn>();
  readonly #latency = new Distribution();
  readonly #wait = new Distribution();
  #inFlight: BucketColumn | undefined;
  #cost: BucketColumn | undefined;
  #articles: Record<ArticleResult['status'], BucketColumn> | undefined;
  #inFlightNow = 0;
  /** When the gauge last moved. */
  #inFlightSinceMs = 0;
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
    this.#bucketMs = bucketMs;
    this.#maxBuckets = maxBuckets;
    this.#providers = options.providers.map(({ name, limits }) => ({
      name,
      limits: limits.map(({ kind, rate, burst }) => ({ kind, rate, burst })),
    }));
    this.#pools = (options.pools ?? []).map(({ name, members }) => ({ name, members: [...members] }));
  }

  /** The run began: its counts are read from its tally from now on, and placed in time as they are made. */
  runStarted(run: RunStart): void {
    // One run a recorder: a stream that goes on to another run is not drawn over this one.
    if (this.#run !== undefined) return;
    this.#version++;
    const buckets = new TimeBuckets(run.startMs, this.#bucketMs, this.#maxBuckets);
    this.#inFlight = buckets.column('in-flight', 'max');
    this.#cost = buckets.column('cost-nano-usd', 'sum');
    this.#articles = {
      succeeded: buckets.column('succeeded', 'sum'),
      failed: buckets.column('failed', 'sum'),
      cancelled: buckets.column('cancelled', 'sum'),
    };
    this.#inFlightSinceMs = run.startMs;
    this.#budget = run.budget === undefined ? undefined : { maxUsd: run.budget.maxUsd, spentBeforeUsd: run.budget.spentUsd };
    const startedAt = new Date(Date.now() - (run.clock.now() - run.startMs)).toISOString();
    const stopWatching = run.counts.watch({
      counted: (event, column) => this.#counted(event, column),
      inFlight: (atMs, calls) => this.#setInFlight(atMs, calls),
      ended: (result, atMs) => {
        this.#version++;
        this.#articles![result.status].add(atMs);
      },
    });
    this.#run = { tally: run.counts, startedAt, buckets, stopWatching };
  }

  /** A batch run's batch was submitted or ended. */
  batch(event: BatchEvent): void {
    this.#version++;
    const atMs = event.atMs - (this.#run?.tally.startMs ?? event.atMs);
    const known = this.#batches.get(event.batchId);
    if (event.type === 'submitted' || known === undefined) {
      // A batch first heard of as it ends was submitted before this run began: a resume's.
      const fromMs = event.type === 'submitted' ? atMs : 0;
      this.#batches.set(event.batchId, { rows: event.rows, fromMs, toMs: null, status: event.status });
    }
    if (event.type === 'ended') Object.assign(this.#batches.get(event.batchId)!, { toMs: atMs, status: event.status });
  }

  /** The run ended: the record stops there, and shows its summary (a live run's) or how it ended (a batch run's). */
  runEnded(end: RunEnd): void {
    const run = this.#run;
    if (run === undefined || this.#endMs !== undefined) return;
    this.#version++;
    run.stopWatching();
    this.#summary = end.summary;
    if (end.summary === undefined) this.#ending = end.stoppedBy === undefined ? end.ending : `${end.ending} by the ${end.stoppedBy}`;
    this.#endMs = end.summary === undefined ? end.atMs : run.tally.startMs + end.summary.elapsedMs;
    run.buckets.reach(this.#endMs);
  }

  /** What the report shows, as it stands. */
  record(): RunRecord {
    const run = this.#run;
    const nowMs = this.#endMs ?? this.#clock.now();
    const tally = run?.tally;
    const series: Record<string, number[]> = {};
    if (run !== undefined) {
      this.#inFlight!.raiseSpan(this.#inFlightSinceMs, nowMs, this.#inFlightNow);
      run.buckets.reach(nowMs);
      for (const key of run.buckets.keys()) series[key] = run.buckets.values(key);
    }
    const calls = tally?.calls();
    const articles = tally?.articles;
    const priced = tally !== undefined && (tally.anyPriced || calls!.costNanoUsd > 0);
    return {
      startedAt: run?.startedAt ?? new Date().toISOString(),
      elapsedMs: tally === undefined ? 0 : nowMs - tally.startMs,
      bucketMs: run?.buckets.bucketMs ?? this.#bucketMs,
      buckets: run?.buckets.length ?? 0,
      providers: this.#providers,
      ...(this.#pools.length > 0 && { pools: this.#pools }),
      series,
      latencyMs: binsOf(this.#latency),
      waitMs: binsOf(this.#wait),
      tasks: [...(tally?.tasks.values() ?? [])].map((t) => ({
        name: t.name,
        calls: t.calls,
        retries: t.retries,
        repairs: t.repairs,
        rateLimited: t.rateLimited,
        latencyMs: { p50: tally!.latencyMs(t.name).p50, p95: tally!.latencyMs(t.name).p95 },
        tokensUsed: t.inputTokens + t.outputTokens,
        ...((tally!.taskPriced(t.name) || t.costNanoUsd > 0) && { costUsd: t.costNanoUsd / NANO_USD }),
        ...(t.unknownNanoUsd > 0 && { unknownCostUsd: t.unknownNanoUsd / NANO_USD }),
      })),
      totals: {
        articles: (articles?.succeeded ?? 0) + (articles?.failed ?? 0) + (articles?.cancelled ?? 0),
        succeeded: articles?.succeeded ?? 0,
        failed: articles?.failed ?? 0,
        cancelled: articles?.cancelled ?? 0,
        calls: calls?.calls ?? 0,
        retries: calls?.retries ?? 0,
        repairs: calls?.repairs ?? 0,
        rateLimited: calls?.rateLimited ?? 0,
        inFlight: tally?.inFlight ?? 0,
        tokensUsed: (calls?.inputTokens ?? 0) + (calls?.outputTokens ?? 0),
        ...(priced && { costUsd: calls!.costNanoUsd / NANO_USD, unknownCostUsd: calls!.unknownNanoUsd / NANO_USD }),
      },
      ...(this.#budget !== undefined && { budget: this.#budget }),
      ended: this.#endMs !== undefined,
      ...(this.#summary !== undefined && { summary: this.#summary }),
      ...(this.#batches.size > 0 && { batches: [...this.#batches].map(([id, batch]) => ({ id, ...batch })) }),
      ...(this.#ending !== undefined && { ending: this.#ending }),
      version: this.#version,
    };
  }

  /** An attempt the tally counted, placed in time: calls where they were sent, the rest where they ended. */
  #counted(event: AttemptEvent, column: CallColumn | undefined): void {
    this.#version++;
    const columns = this.#columnsOf(event.provider);
    if (event.outcome !== 'circuit-open') this.#wait.record(event.waitMs);
    if (isErrorAttempt(event)) columns('errors').add(event.atMs);
    if (column === undefined) return;
    columns('calls').add(event.sentAtMs!);
    this.#latency.record(event.latencyMs);
    if (isRetried(event)) columns('retries').add(event.atMs);
    if (isRepair(event)) columns('repairs').add(event.atMs);
    if (column === 'rateLimited') columns('rate-limited').add(event.atMs);
    if (event.usage !== undefined) {
      columns('input-tokens').add(event.atMs, event.usage.inputTokens);
      columns('output-tokens').add(event.atMs, event.usage.outputTokens);
    }
    if (event.costUsd !== undefined) this.#cost!.add(event.atMs, Math.round(event.costUsd * NANO_USD));
  }

  #setInFlight(atMs: number, value: number): void {
    this.#version++;
    // Every bucket since the gauge last moved held its old value, those no call began or ended in too.
    this.#inFlight!.raiseSpan(this.#inFlightSinceMs, atMs, this.#inFlightNow);
    this.#inFlightNow = value;
    this.#inFlightSinceMs = atMs;
    this.#inFlight!.raise(atMs, value);
  }

  /** A provider's columns, made once: an attempt then costs no string or lookup per series. */
  #columnsOf(provider: string): (what: ProviderSeries) => BucketColumn {
    let columns = this.#providerColumns.get(provider);
    if (columns === undefined) {
      const made = new Map<ProviderSeries, BucketColumn>();
      columns = (what) => {
        let found = made.get(what);
        if (found === undefined) {
          found = this.#run!.buckets.column(seriesKey(provider, what), 'sum');
          made.set(what, found);
        }
        return found;
      };
      this.#providerColumns.set(provider, columns);
    }
    return columns;
  }
}

function binsOf(distribution: Distribution): RecordedBin[] {
  return distribution.bins().map(({ fromMs, toMs, count }) => ({ fromMs, toMs: toMs === Infinity ? null : toMs, count }));
}
