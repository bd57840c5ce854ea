import type { Clock } from '../clock.ts';
import type { AttemptEvent, AttemptOutcome } from '../gate/attempt.ts';
import type { Budget } from '../quota/budget.ts';
import { NANO_USD } from '../quota/budget.ts';
import { Histogram } from './histogram.ts';
import type { CallCounts, Percentiles } from './call-counts.ts';
import type { ArticleResult } from './result.ts';

/**
 * Where a call ended, one column per way — answered, or why not — so that a count of calls is
 * always its columns added up.
 */
export type CallColumn = Exclude<keyof CallCounts, 'calls' | 'retries'>;

/** The columns, in the order the summary says them. */
export const CALL_COLUMNS: readonly CallColumn[] = Object.freeze([
  'answered',
  'rateLimited',
  'serverErrors',
  'timeouts',
  'networkErrors',
  'refused',
  'unfit',
  'cancelledCalls',
  'otherErrors',
]);

/** The column of a call (an attempt that reached its provider) by how it ended. */
const COLUMN_OF: Readonly<Record<AttemptOutcome, CallColumn>> = Object.freeze({
  ok: 'answered',
  'rate-limited': 'rateLimited',
  'server-error': 'serverErrors',
  timeout: 'timeouts',
  'network-error': 'networkErrors',
  unauthorized: 'refused',
  'quota-exhausted': 'refused',
  truncated: 'unfit',
  refused: 'unfit',
  malformed: 'unfit',
  'not-an-api': 'unfit',
  aborted: 'cancelledCalls',
  rejected: 'otherErrors',
  error: 'otherErrors',
  // Not a call's ends: an attempt ended so never reached its provider. Counted here only if one did.
  'limiter-timeout': 'otherErrors',
  'circuit-open': 'otherErrors',
  'too-large': 'otherErrors',
  'over-budget': 'otherErrors',
});

/** The column an attempt counts in: undefined when it made no call (no grant, an open circuit, over the budget). */
export function columnOf(event: AttemptEvent): CallColumn | undefined {
  return event.called ? COLUMN_OF[event.outcome] : undefined;
}

/** Whether a call failed and another attempt followed it. */
export function isRetried(event: AttemptEvent): boolean {
  return event.retryInMs !== undefined;
}

/** Whether a call asked again with an unfit answer and its problems. */
export function isRepair(event: AttemptEvent): boolean {
  return event.repair > 0;
}

/** Whether an attempt is a failure the report draws as an error: neither an answer, nor a 429 (drawn apart), nor the run's own stop. */
export function isErrorAttempt(event: AttemptEvent): boolean {
  return event.outcome !== 'ok' && event.outcome !== 'rate-limited' && event.outcome !== 'aborted';
}

type Counting<T> = { -readonly [K in keyof T]: T[K] };

/** A task's counts as the tally keeps them: with its latencies, which readers get as percentiles. */
type TaskCounting = Counting<TaskTally> & { readonly latency: Histogram };

/** Calls as counted: by column, with the retries, repairs, tokens and money. */
export interface CallTally extends CallCounts {
  /** Of the calls, the repairs: asked again with an unfit answer and its problems. */
  readonly repairs: number;
  /** Input tokens the providers reported. */
  readonly inputTokens: number;
  /** Output tokens the providers reported. */
  readonly outputTokens: number;
  /** What the calls cost, in nano-USD. */
  readonly costNanoUsd: number;
  /** The most the calls whose fate is unknown (perhaps billed) may have cost, in nano-USD: apart from `costNanoUsd`. */
  readonly unknownNanoUsd: number;
}

/** A provider's calls as counted. */
export interface ProviderTally extends CallTally {
  readonly name: string;
  /** Attempts refused at once by an open circuit (no token spent, provider not called). */
  readonly circuitRejections: number;
  /** When its last call was granted its token, since the run's start, ms. */
  readonly lastGrantMs: number;
  /** The latency of that call, ms. */
  readonly lastCallLatencyMs: number;
}

/** A task's calls as counted (their latencies: {@link RunCounts.latencyMs}). */
export interface TaskTally extends CallTally {
  readonly name: string;
}

/** A pool member as the run last heard of it. */
export interface PoolMemberTally {
  readonly name: string;
  /** `up`, `down` (its circuit open), or `dropped` (it refused what no retry mends) for the rest of the run. */
  readonly state: 'up' | 'down' | 'dropped';
  /** When it was dropped, since the run's start, ms; undefined while it is not. */
  readonly droppedAtMs: number | undefined;
}

/** A pool: its members as the run last heard of them (their calls are their providers'). */
export interface PoolTally {
  readonly name: string;
  readonly members: readonly PoolMemberTally[];
}

/** Articles as counted. */
export interface ArticleTally {
  /** Pulled from the source and started. */
  readonly started: number;
  /** Ended, by how. */
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
}

/**
 * What follows the counts as they are made, in time (the report's series): told of each counted
 * attempt, each move of the calls in flight and each article's end, after the tally has counted it.
 */
export interface TallyWatcher {
  /** An attempt was counted, in `column` (undefined: it made no call). */
  counted(event: AttemptEvent, column: CallColumn | undefined): void;
  /** The calls in flight moved to `calls` at `atMs`. */
  inFlight(atMs: number, calls: number): void;
  /** An article ended, at `atMs`. */
  ended(result: ArticleResult, atMs: number): void;
}

/**
 * A run's counts as they stand, made once from its events — what its summary, its report, its
 * live page, its OpenTelemetry counters and its progress line all read (`RunStart.counts`), so that
 * no two of them count the same attempts apart. Up to date before each event is told.
 */
export interface RunCounts {
  /** The run's start on its clock, ms. */
  readonly startMs: number;
  /** The most articles in flight at once. */
  readonly workers: number;
  /** Articles the source holds, when known. */
  readonly total: number | undefined;
  /** The run's money, when it has a budget. */
  readonly budget: Budget | undefined;
  /** Whether an answer cache is in front of the calls. */
  readonly cached: boolean;
  /** Each provider's calls, in the order given, then as first heard of. */
  readonly providers: ReadonlyMap<string, ProviderTally>;
  /** Each task's calls, in the order given, then as first heard of. */
  readonly tasks: ReadonlyMap<string, TaskTally>;
  /** The pools, their members as last heard of. */
  readonly pools: readonly PoolTally[];
  /** Articles started and ended. */
  readonly articles: ArticleTally;
  /** Calls sent and not yet ended. */
  readonly inFlight: number;
  /** Calls made for articles that then failed: tokens spent on work thrown away. */
  readonly wastedCalls: number;
  /** Failed articles by reason (`RateLimitError`, …). */
  readonly failureReasons: ReadonlyMap<string, number>;
  /** The articles' critical paths added up, ms: with the workers, a bound on the elapsed time. */
  readonly pathMs: number;
  /** The longest article's critical path, ms. */
  readonly longestPathMs: number;
  /** Tasks answered from the answer cache, no call made. */
  readonly cacheHits: number;
  /** What those answers cost when they were made, at the prices now, nano-USD. */
  readonly savedNanoUsd: number;
  /** Input tokens the providers' prompt caches served and stored. */
  readonly promptCache: { readonly readTokens: number; readonly writeTokens: number };
  /** Whether any provider has a price. */
  readonly anyPriced: boolean;
  /** The run's calls: its providers' added up. */
  calls(): CallTally;
  /** The calls' latencies, ms: a task's, or the whole run's. */
  latencyMs(task?: string): Percentiles;
  /** How long attempts waited for their grant, ms (an open circuit's refusals waited for none). */
  waitMs(): Percentiles;
  /** Whether `provider` has a price (its calls say what they cost, even when nothing). */
  priced(provider: string): boolean;
  /** Whether a task's calls have a price: its provider's or pool's. */
  taskPriced(task: string): boolean;
  /** Tells `watcher` each count from now on; returns a function that stops it. */
  watch(watcher: TallyWatcher): () => void;
}

/** What a tally is of: the run's providers, tasks and pools, and the facts its summary states. */
export interface RunTallyOptions {
  /** The run's clock: the instants of the events. */
  readonly clock: Clock;
  /** The run's start on that clock, ms. @default clock.now() */
  readonly startMs?: number | undefined;
  /** The providers, in order (others are counted as their first attempt comes). @default none */
  readonly providers?: readonly string[] | undefined;
  /** The tasks, in order, each with the provider or pool it names (others are counted as their first attempt comes). @default none */
  readonly tasks?: readonly { readonly name: string; readonly route: string }[] | undefined;
  /** The providers and pools with a price: their calls, and their tasks', say what they cost even when nothing. @default none */
  readonly priced?: readonly string[] | undefined;
  /** Pools of the providers. @default none */
  readonly pools?: readonly { readonly name: string; readonly members: readonly string[] }[] | undefined;
  /** The most articles in flight at once. @default 1 */
  readonly workers?: number | undefined;
  /** Articles the source holds, when known. @default unknown */
  readonly total?: number | undefined;
  /** The run's money. @default none */
  readonly budget?: Budget | undefined;
  /** Whether an answer cache is in front of the calls: its hits are then counted. @default false */
  readonly cached?: boolean | undefined;
}

/** No call yet: where every count starts. */
function noCalls(): Counting<CallTally> {
  return {
    calls: 0,
    answered: 0,
    rateLimited: 0,
    serverErrors: 0,
    timeouts: 0,
    networkErrors: 0,
    refused: 0,
    unfit: 0,
    cancelledCalls: 0,
    otherErrors: 0,
    retries: 0,
    repairs: 0,
    inputTokens: 0,
    outputTokens: 0,
    costNanoUsd: 0,
    unknownNanoUsd: 0,
  };
}

/**
 * Counts a run's events into its {@link RunCounts}: the run counts each event here before telling
 * it. Memory is constant in the number of calls: latencies go into fixed-size histograms.
 */
export class RunTally implements RunCounts {
  readonly clock: Clock;
  /** The run's start on its clock, ms. */
  readonly startMs: number;
  /** The most articles in flight at once. */
  readonly workers: number;
  /** Articles the source holds, when known. */
  readonly total: number | undefined;
  /** The run's money, when it has a budget. */
  readonly budget: Budget | undefined;
  /** Whether an answer cache is in front of the calls. */
  readonly cached: boolean;
  readonly #providers = new Map<string, Counting<ProviderTally>>();
  readonly #tasks = new Map<string, TaskCounting>();
  readonly #pools: { readonly name: string; readonly members: Counting<PoolMemberTally>[] }[];
  readonly #priced: ReadonlySet<string>;
  /** Each task's provider or pool, as the run assigned it. */
  readonly #routes = new Map<string, string>();
  readonly #articles: Counting<ArticleTally> = { started: 0, succeeded: 0, failed: 0, cancelled: 0 };
  readonly #failureReasons = new Map<string, number>();
  readonly #latencyMs = new Histogram();
  readonly #waitMs = new Histogram();
  #inFlight = 0;
  #wastedCalls = 0;
  #pathMs = 0;
  #longestPathMs = 0;
  #cacheHits = 0;
  #savedNanoUsd = 0;
  readonly #promptCache = { readTokens: 0, writeTokens: 0 };
  #watchers: readonly TallyWatcher[] = [];

  constructor(options: RunTallyOptions) {
    this.clock = options.clock;
    this.startMs = options.startMs ?? options.clock.now();
    this.workers = options.workers ?? 1;
    this.total = options.total;
    this.budget = options.budget;
    this.cached = options.cached === true;
    this.#priced = new Set(options.priced ?? []);
    for (const name of options.providers ?? []) this.#provider(name);
    for (const { name, route } of options.tasks ?? []) {
      this.#routes.set(name, route);
      this.#task(name);
    }
    this.#pools = (options.pools ?? []).map(({ name, members }) => ({
      name,
      members: members.map((member) => ({ name: member, state: 'up' as const, droppedAtMs: undefined })),
    }));
  }

  /** Each provider's calls, in the order given, then as first heard of. */
  get providers(): ReadonlyMap<string, ProviderTally> {
    return this.#providers;
  }

  /** Each task's calls, in the order given, then as first heard of. */
  get tasks(): ReadonlyMap<string, TaskTally> {
    return this.#tasks;
  }

  /** The pools, their members as last heard of. */
  get pools(): readonly PoolTally[] {
    return this.#pools;
  }

  /** Articles started and ended. */
  get articles(): ArticleTally {
    return this.#articles;
  }

  /** Calls sent and not yet ended. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Calls made for articles that then failed: tokens spent on work thrown away. */
  get wastedCalls(): number {
    return this.#wastedCalls;
  }

  /** Failed articles by reason (`RateLimitError`, …). */
  get failureReasons(): ReadonlyMap<string, number> {
    return this.#failureReasons;
  }

  /** The articles' critical paths added up, ms: with the workers, a bound on the elapsed time. */
  get pathMs(): number {
    return this.#pathMs;
  }

  /** The longest article's critical path, ms. */
  get longestPathMs(): number {
    return this.#longestPathMs;
  }

  /** Tasks answered from the answer cache, no call made. */
  get cacheHits(): number {
    return this.#cacheHits;
  }

  /** What those answers cost when they were made, at the prices now, nano-USD. */
  get savedNanoUsd(): number {
    return this.#savedNanoUsd;
  }

  /** Input tokens the providers' prompt caches served and stored. */
  get promptCache(): { readonly readTokens: number; readonly writeTokens: number } {
    return this.#promptCache;
  }

  /** Whether `provider` has a price (its calls say what they cost, even when nothing). */
  priced(provider: string): boolean {
    return this.#priced.has(provider);
  }

  /** Whether a task's calls have a price: its provider's or pool's. */
  taskPriced(task: string): boolean {
    const route = this.#routes.get(task);
    return route !== undefined && this.#priced.has(route);
  }

  /** Whether any provider has a price. */
  get anyPriced(): boolean {
    return this.#priced.size > 0;
  }

  /** The calls' latencies, ms: a task's, or the whole run's. */
  latencyMs(task?: string): Percentiles {
    return percentiles(task === undefined ? this.#latencyMs : this.#tasks.get(task)?.latency);
  }

  /** How long attempts waited for their grant, ms. */
  waitMs(): Percentiles {
    return percentiles(this.#waitMs);
  }

  /** The run's calls: its providers' added up. */
  calls(): CallTally {
    const total = noCalls();
    for (const counts of this.#providers.values()) addCalls(total, counts);
    return total;
  }

  /** Tells `watcher` each count from now on; returns a function that stops it. */
  watch(watcher: TallyWatcher): () => void {
    this.#watchers = [...this.#watchers, watcher];
    return () => {
      this.#watchers = this.#watchers.filter((each) => each !== watcher);
    };
  }

  /** An article started. */
  articleStarted(): void {
    this.#articles.started++;
  }

  /** A call went to its provider. */
  send(): void {
    this.#inFlight++;
    if (this.#watchers.length > 0) {
      const atMs = this.clock.now();
      for (const watcher of this.#watchers) watcher.inFlight(atMs, this.#inFlight);
    }
  }

  /** An attempt ended: counted in its provider's and its task's column. */
  attempt(event: AttemptEvent): void {
    const provider = this.#provider(event.provider);
    // A refusal of the circuit waited for nothing: its wait for the circuit is not the limiter's.
    if (event.outcome === 'circuit-open') provider.circuitRejections++;
    else this.#waitMs.record(event.waitMs);
    const column = columnOf(event);
    if (column !== undefined) {
      const task = this.#task(event.task);
      countCall(provider, event, column);
      countCall(task, event, column);
      task.latency.record(event.latencyMs);
      this.#latencyMs.record(event.latencyMs);
      this.#promptCache.readTokens += event.usage?.cacheReadTokens ?? 0;
      this.#promptCache.writeTokens += event.usage?.cacheWriteTokens ?? 0;
      const grantMs = event.atMs - event.latencyMs - this.startMs;
      if (grantMs >= provider.lastGrantMs) {
        provider.lastGrantMs = grantMs;
        provider.lastCallLatencyMs = event.latencyMs;
      }
      this.#inFlight--;
    }
    const watchers = this.#watchers;
    for (let i = 0; i < watchers.length; i++) {
      watchers[i]!.counted(event, column);
      if (column !== undefined) watchers[i]!.inFlight(event.atMs, this.#inFlight);
    }
  }

  /** An article ended, with its critical path and what its answers from the cache saved (`ArticleEnd`). */
  result(result: ArticleResult, end: { readonly pathMs: number; readonly savedNanoUsd: number }): void {
    this.#cacheHits += result.cached?.length ?? 0;
    this.#savedNanoUsd += end.savedNanoUsd;
    this.#pathMs += end.pathMs;
    if (end.pathMs > this.#longestPathMs) this.#longestPathMs = end.pathMs;
    this.#articles[result.status]++;
    if (result.status === 'failed') {
      this.#wastedCalls += result.attempts;
      const reason = result.error?.type ?? 'Error';
      this.#failureReasons.set(reason, (this.#failureReasons.get(reason) ?? 0) + 1);
    }
    if (this.#watchers.length > 0) {
      const atMs = this.clock.now();
      for (const watcher of this.#watchers) watcher.ended(result, atMs);
    }
  }

  /** A pool member went down, came back, or was dropped (`PoolChange`). */
  poolChange(change: {
    readonly pool: string;
    readonly member: string;
    readonly change: 'down' | 'back' | 'dropped';
    readonly atMs: number;
  }): void {
    const member = this.#pools.find((pool) => pool.name === change.pool)?.members.find((each) => each.name === change.member);
    // Dropped is for good: nothing said after brings it back.
    if (member === undefined || member.state === 'dropped') return;
    member.state = change.change === 'back' ? 'up' : change.change;
    if (change.change === 'dropped') member.droppedAtMs = change.atMs - this.startMs;
  }

  #provider(name: string): Counting<ProviderTally> {
    let found = this.#providers.get(name);
    if (found === undefined) {
      found = { name, ...noCalls(), circuitRejections: 0, lastGrantMs: 0, lastCallLatencyMs: 0 };
      this.#providers.set(name, found);
    }
    return found;
  }

  #task(name: string): TaskCounting {
    let found = this.#tasks.get(name);
    if (found === undefined) {
      found = { name, ...noCalls(), latency: new Histogram() };
      this.#tasks.set(name, found);
    }
    return found;
  }
}

/** Counts one call of `event` in `counts`. */
function countCall(counts: Counting<CallTally>, event: AttemptEvent, column: CallColumn): void {
  counts.calls++;
  counts[column]++;
  if (isRetried(event)) counts.retries++;
  if (isRepair(event)) counts.repairs++;
  if (event.usage !== undefined) {
    counts.inputTokens += event.usage.inputTokens;
    counts.outputTokens += event.usage.outputTokens;
  }
  if (event.costUsd !== undefined) counts.costNanoUsd += Math.round(event.costUsd * NANO_USD);
  if (event.unknownCostUsd !== undefined) counts.unknownNanoUsd += Math.round(event.unknownCostUsd * NANO_USD);
}

/** Adds `counts` into `total`. */
export function addCalls(total: Counting<CallTally>, counts: CallTally): void {
  total.calls += counts.calls;
  for (const column of CALL_COLUMNS) total[column] += counts[column];
  total.retries += counts.retries;
  total.repairs += counts.repairs;
  total.inputTokens += counts.inputTokens;
  total.outputTokens += counts.outputTokens;
  total.costNanoUsd += counts.costNanoUsd;
  total.unknownNanoUsd += counts.unknownNanoUsd;
}

/** A histogram's median, 95th and 99th percentiles and largest value; zeros when it holds none. */
function percentiles(histogram: Histogram | undefined): Percentiles {
  if (histogram === undefined || histogram.count === 0) return { p50: 0, p95: 0, p99: 0, max: 0 };
  return {
    p50: histogram.quantile(0.5),
    p95: histogram.quantile(0.95),
    p99: histogram.quantile(0.99),
    max: histogram.max,
  };
}
