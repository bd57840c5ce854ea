import type { GateFigures } from '../gate/call-gate.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import { NANO_USD, type Budget } from '../quota/budget.ts';
import { rateFloorMs } from '../quota/rate-history.ts';
import { Histogram } from './histogram.ts';
import type { ArticleResult } from './result.ts';

/** A distribution in ms: its median, 95th and 99th percentiles, and its largest value. */
export interface Percentiles {
  /** The median. */
  readonly p50: number;
  /** The 95th percentile. */
  readonly p95: number;
  /** The 99th percentile. */
  readonly p99: number;
  /** The largest value. */
  readonly max: number;
}

/** What calls came to, one count per outcome: a provider's, and the whole run's (the sum over its providers). */
export interface CallCounts {
  /** Attempts that reached a provider, retries included: each took one token. */
  readonly calls: number;
  /** Attempts that failed and were followed by another. */
  readonly retries: number;
  /** Attempts the provider refused with a 429. */
  readonly rateLimited: number;
  /** Attempts the provider answered with a 5xx. */
  readonly serverErrors: number;
  /** Attempts the provider did not answer in time. */
  readonly timeouts: number;
  /** Calls that could not reach the provider or lost the connection (refused, reset, DNS, TLS). */
  readonly networkErrors: number;
}

/** No call yet: where every count starts. */
const NO_CALLS: CallCounts = Object.freeze({ calls: 0, retries: 0, rateLimited: 0, serverErrors: 0, timeouts: 0, networkErrors: 0 });
const COUNTS = Object.keys(NO_CALLS) as (keyof CallCounts)[];

/** Per-provider call figures. */
export interface ProviderFigures extends CallCounts {
  /** The provider these figures are for. */
  readonly name: string;
  /** The request limit as configured: calls per second (`Infinity` without one)… */
  readonly rate: number;
  /** …and the calls that may go at once after a quiet spell. */
  readonly burst: number;
  /**
   * No schedule can grant the last token sooner, in ms: `(calls − burst) / rate`, at the rates the
   * run's limits allowed over time where they moved (the adaptive rate) and this process saw every
   * move; at the configured rate otherwise.
   */
  readonly rateFloorMs: number;
  /** When the last call was granted its token, relative to the run's start, in ms. */
  readonly lastGrantMs: number;
  /**
   * The latency of that call. The last grant cannot come before the rate floor, so no run can end
   * before floor + this: it is what efficiency is measured against.
   */
  readonly lastCallLatencyMs: number;
  /** Calls per second over the run. */
  readonly achievedRate: number;
  /** LLM tokens the provider reported using (input + output). */
  readonly tokensUsed: number;
  /** Whether a token limit applies to this provider. */
  readonly countsTokens: boolean;
  /** Times the circuit breaker opened. */
  readonly breakerOpens: number;
  /** Attempts refused at once by an open circuit (no token spent, provider not called). */
  readonly circuitRejections: number;
  /** The request rate at the end of the run (the adaptive rate moves it), calls per second. */
  readonly finalRate: number;
  /** Whether the adaptive rate moved the request rate (then `finalRate` is where it settled). */
  readonly adaptive: boolean;
  /** Times the adaptive rate cut the rate after 429s. */
  readonly rateCuts: number;
  /** What its calls cost at its price, in USD; absent when it has none. */
  readonly costUsd?: number;
}

/** A pool's figures: its members' calls against their limits added up. */
export interface PoolFigures {
  /** The pool's name. */
  readonly name: string;
  /** Its members, in the order listed. */
  readonly members: readonly string[];
  /** Attempts its members made, retries included. */
  readonly calls: number;
  /** The members' request rates added up, calls per second (`Infinity` when one has none). */
  readonly rate: number;
  /** The members' bursts added up. */
  readonly burst: number;
  /** `(calls − burst) / rate`: however the calls were spread, no schedule grants the last sooner, in ms. */
  readonly rateFloorMs: number;
  /** The latency of the call its members granted last, in ms. */
  readonly lastCallLatencyMs: number;
}

/** Per-task call figures. */
export interface TaskFigures extends Pick<CallCounts, 'calls' | 'retries' | 'rateLimited'> {
  /** The task these figures are for. */
  readonly name: string;
  /** Of the calls, the repairs: asked again with an unfit answer and its problems (apart from the retries). */
  readonly repairs: number;
  /** The provider's answer time of those calls, in ms. */
  readonly latencyMs: { readonly p50: number; readonly p95: number };
  /** LLM tokens the providers reported (input + output). */
  readonly tokensUsed: number;
  /** What its calls cost, in USD; absent when its providers have no price. */
  readonly costUsd?: number;
}

/** What stopped the whole run before its source was done: a provider no retry can mend, or the source itself. */
export interface RunStop {
  /**
   * `"provider"`: it refused every call (a refused key, no credit); `"provider-down"`: it stayed
   * down (its circuit open, every probe failing) past the breaker's `giveUpAfterMs`; `"source"`: it
   * failed (a bad line in a stream); `"limits"`: they could not be reached (a shared quota's Redis
   * went away); `"budget"`: the next call's worst case did not fit what was left of the budget.
   */
  readonly by: 'provider' | 'provider-down' | 'source' | 'limits' | 'budget';
  /** The provider's name, when a provider stopped the run. */
  readonly provider?: string | undefined;
  /** The error's class name: `AuthenticationError`, `QuotaExhaustedError`, `InputError`. */
  readonly type: string;
  /** What happened, in a line. */
  readonly message: string;
}

/** Which lower bound on the elapsed time is the largest (see {@link RunSummary.lowerBoundsMs}). */
export type BoundBy = 'rate' | 'latency' | 'workers';

/** What a run did, in figures. Milliseconds throughout. */
export interface RunSummary extends CallCounts {
  /** Articles pulled from the source. */
  readonly articles: number;
  /** Articles whose every task answered. */
  readonly succeeded: number;
  /** Articles that failed: the dead letters, each with its reason in the results. */
  readonly failed: number;
  /** Articles cut short: in flight when the run was interrupted or stopped. */
  readonly cancelled: number;
  /** Failed articles: the dead letters, each with its reason in the results. */
  readonly deadLetters: number;
  /** Calls that repaired an unfit answer (asked again with it and its problems), apart from the retries. */
  readonly repairs: number;
  /** How long the run took, from its start to its last result. */
  readonly elapsedMs: number;
  /**
   * `(calls − burst) / rate` of the provider that bounds the run: no schedule can grant its last
   * token sooner.
   */
  readonly rateFloorMs: number;
  /**
   * What no run of these calls could beat, each a true lower bound on the elapsed time: `rate`, the
   * rate floor plus the latency of the call granted last (of the provider that bounds the run);
   * `latency`, the longest article's critical path — the longest chain of its calls through its
   * task graph, a task's calls after those of the tasks it depends on, independent ones side by
   * side; `workers`, the articles' critical paths added up over the workers (each article holds a
   * worker for at least its critical path). 0 where a bound says nothing (no limit, no calls).
   */
  readonly lowerBoundsMs: { readonly rate: number; readonly latency: number; readonly workers: number };
  /** The largest of the lower bounds: no run could end sooner. */
  readonly leastElapsedMs: number;
  /** Which lower bound held the run back; `null` without calls. */
  readonly boundBy: BoundBy | null;
  /** `leastElapsedMs / elapsedMs`; `null` when there is nothing to measure against (no call made). */
  readonly efficiency: number | null;
  /** Calls made for articles that then failed: tokens spent on work thrown away. */
  readonly wastedCalls: number;
  /** Articles the source held that never started (the run stopped early); `null` when the source's size is unknown. */
  readonly notStarted: number | null;
  /** The run's worker count: the most articles in flight at once. */
  readonly workers: number;
  /** The caller's signal stopped the run (Ctrl-C). */
  readonly interrupted: boolean;
  /** What stopped the run early: a provider that refuses every call, or a source that failed (a bad line in a stream). */
  readonly stoppedBy: RunStop | undefined;
  /** The calls' latencies, in ms. */
  readonly callLatencyMs: Percentiles;
  /** How long calls waited for their grant, in ms. */
  readonly limiterWaitMs: Percentiles;
  /** Failed attempts by reason (`RateLimitError`, `ServerError`, …). */
  readonly failureReasons: Readonly<Record<string, number>>;
  /** Each provider's figures, in the order given. */
  readonly providers: readonly ProviderFigures[];
  /** Each task's figures, in the tasks' order. */
  readonly tasks: readonly TaskFigures[];
  /** Each pool's figures, when the run had pools (its members are in `providers` too). */
  readonly pools?: readonly PoolFigures[];
  /** What the run's calls cost at the providers' prices, in USD; absent when no provider has one. */
  readonly costUsd?: number;
  /**
   * The budget, and what of it is spent at the end — by this run, earlier runs of the job it was
   * given (a resumed run's), and other processes sharing it — a call whose cost no usage told
   * counting whole, as in `costUsd`.
   */
  readonly budget?: { readonly maxUsd: number; readonly spentUsd: number };
  /** With an answer cache: the tasks answered from it, no call made (`ArticleResult.cached`). */
  readonly cacheHits?: number;
  /** With an answer cache and a price: what those answers cost when they were made, at the prices now, in USD — what the hits saved. */
  readonly cacheSavedUsd?: number;
  /**
   * The input tokens the providers' prompt caches served (`readTokens`, billed at the cached-input
   * price) and stored (`writeTokens`, at the cache-write price), summed over the calls; absent when
   * no call reported either.
   */
  readonly promptCache?: { readonly readTokens: number; readonly writeTokens: number };
}

type Counting<T> = { -readonly [K in keyof T]: T[K] };

interface TaskCounters extends Counting<Pick<CallCounts, 'calls' | 'retries' | 'rateLimited'>> {
  repairs: number;
  readonly latency: Histogram;
  tokensUsed: number;
  costNanoUsd: number;
  priced: boolean;
}

interface ProviderCounters extends Counting<CallCounts> {
  readonly priced: boolean;
  costNanoUsd: number;
  tokensUsed: number;
  circuitRejections: number;
  lastGrantMs: number;
  lastCallLatencyMs: number;
}

/**
 * Collects attempt events and article results into a {@link RunSummary}. Memory is constant in
 * the number of calls: latencies go into fixed-size histograms.
 */
export class Metrics {
  readonly #startMs: number;
  readonly #workers: number;
  readonly #providers = new Map<string, ProviderCounters>();
  readonly #latency = new Histogram();
  readonly #wait = new Histogram();
  readonly #failureReasons = new Map<string, number>();
  readonly #total: number | undefined;
  readonly #tasks = new Map<string, TaskCounters>();
  readonly #budget: Budget | undefined;
  readonly #priced: boolean;
  /** Each pool's members: their calls are bounded by the pool's combined limits, not each member's. */
  readonly #pools: readonly { readonly name: string; readonly members: readonly string[] }[];
  #articles = 0;
  #succeeded = 0;
  #failed = 0;
  #cancelled = 0;
  #wastedCalls = 0;
  #repairs = 0;
  /** The articles' critical paths added up, for the workers bound. */
  #pathMs = 0;
  /** The longest article's critical path, for the latency bound. */
  #longestPathMs = 0;
  /** Whether an answer cache is in front of the calls: the summary then counts its hits. */
  readonly #cached: boolean;
  #cacheHits = 0;
  #savedNanoUsd = 0;
  readonly #promptCache = { readTokens: 0, writeTokens: 0 };

  constructor(options: {
    readonly startMs: number;
    readonly workers: number;
    readonly providers: readonly string[];
    /** Articles the source holds, when known. */
    readonly total?: number | undefined;
    /** The run's tasks, in order, each with its provider's name. */
    readonly tasks?: readonly { readonly name: string; readonly provider: string }[] | undefined;
    /** The providers with a price: their calls, and their tasks', say what they cost. */
    readonly priced?: readonly string[] | undefined;
    /** Pools of providers: the rate bound counts each pool's members' limits together. */
    readonly pools?: readonly { readonly name: string; readonly members: readonly string[] }[] | undefined;
    readonly budget?: Budget | undefined;
    /** Whether an answer cache is in front of the calls. @default false */
    readonly cached?: boolean | undefined;
  }) {
    this.#cached = options.cached === true;
    this.#pools = options.pools ?? [];
    const priced = new Set(options.priced ?? []);
    this.#priced = priced.size > 0;
    this.#startMs = options.startMs;
    this.#workers = options.workers;
    this.#total = options.total;
    this.#budget = options.budget;
    for (const { name, provider } of options.tasks ?? []) {
      this.#tasks.set(name, {
        calls: 0,
        retries: 0,
        repairs: 0,
        rateLimited: 0,
        latency: new Histogram(),
        tokensUsed: 0,
        costNanoUsd: 0,
        priced: priced.has(provider),
      });
    }
    for (const name of options.providers) {
      this.#providers.set(name, {
        priced: priced.has(name),
        costNanoUsd: 0,
        tokensUsed: 0,
        circuitRejections: 0,
        ...NO_CALLS,
        lastGrantMs: 0,
        lastCallLatencyMs: 0,
      });
    }
  }

  recordAttempt(event: AttemptEvent): void {
    const counters = this.#providers.get(event.provider);
    if (counters === undefined) return;
    // A refusal of the circuit waited for nothing: its wait for the circuit is not the limiter's.
    if (event.outcome === 'circuit-open') counters.circuitRejections++;
    else this.#wait.record(event.waitMs);
    // An attempt that never got its token made no call.
    if (!event.called) return;
    const tokens = event.usage === undefined ? 0 : event.usage.inputTokens + event.usage.outputTokens;
    counters.tokensUsed += tokens;
    this.#promptCache.readTokens += event.usage?.cacheReadTokens ?? 0;
    this.#promptCache.writeTokens += event.usage?.cacheWriteTokens ?? 0;
    counters.calls++;
    if (event.retryInMs !== undefined) counters.retries++;
    if (event.repair > 0) this.#repairs++;
    const task = this.#tasks.get(event.task);
    if (task !== undefined) {
      task.calls++;
      task.tokensUsed += tokens;
      task.latency.record(event.latencyMs);
      if (event.retryInMs !== undefined) task.retries++;
      if (event.repair > 0) task.repairs++;
      if (event.outcome === 'rate-limited') task.rateLimited++;
    }
    if (event.costUsd !== undefined) {
      const nano = Math.round(event.costUsd * NANO_USD);
      counters.costNanoUsd += nano;
      if (task !== undefined) task.costNanoUsd += nano;
    }
    if (event.outcome === 'rate-limited') counters.rateLimited++;
    else if (event.outcome === 'server-error') counters.serverErrors++;
    else if (event.outcome === 'timeout') counters.timeouts++;
    else if (event.outcome === 'network-error') counters.networkErrors++;
    this.#latency.record(event.latencyMs);
    const grantMs = event.atMs - event.latencyMs - this.#startMs;
    if (grantMs >= counters.lastGrantMs) {
      counters.lastGrantMs = grantMs;
      counters.lastCallLatencyMs = event.latencyMs;
    }
  }

  recordStarted(): void {
    this.#articles++;
  }

  /** An article's end, with its critical path (`ProcessedArticle.pathMs`) and what its answers from the cache saved. */
  recordResult(result: ArticleResult, pathMs: number, savedNanoUsd = 0): void {
    this.#cacheHits += result.cached?.length ?? 0;
    this.#savedNanoUsd += savedNanoUsd;
    this.#pathMs += pathMs;
    if (pathMs > this.#longestPathMs) this.#longestPathMs = pathMs;
    if (result.status === 'succeeded') this.#succeeded++;
    else if (result.status === 'cancelled') this.#cancelled++;
    else {
      this.#failed++;
      this.#wastedCalls += result.attempts;
      const reason = result.error?.type ?? 'Error';
      this.#failureReasons.set(reason, (this.#failureReasons.get(reason) ?? 0) + 1);
    }
  }

  /** The run's figures at `endMs`, with each provider's gate figures as they stand then. */
  summary(
    endMs: number,
    ending: { readonly interrupted: boolean; readonly stoppedBy?: RunStop | undefined },
    gates: readonly GateFigures[],
  ): RunSummary {
    const providers: ProviderFigures[] = [];
    const total: Counting<CallCounts> = { ...NO_CALLS };
    let floorMs = 0;
    let rateBoundMs = 0;
    const elapsedMs = endMs - this.#startMs;
    const pooled = new Set(this.#pools.flatMap((pool) => pool.members));
    for (const gate of gates) {
      const c = this.#providers.get(gate.provider);
      if (c === undefined) continue;
      const requests = gate.limits.find((limit) => limit.kind === 'requests');
      const rate = requests?.rate ?? Infinity;
      const burst = requests?.burst ?? 0;
      // At the rates the limits allowed over time where this process saw every move, else the configured one.
      const providerFloorMs = rateFloorMs(gate.rates ?? [{ atMs: this.#startMs, rate }], this.#startMs, c.calls, burst);
      const { costNanoUsd, priced, ...counts } = c;
      providers.push({
        name: gate.provider,
        rate,
        burst,
        ...counts,
        ...(priced === true && { costUsd: costNanoUsd / NANO_USD }),
        rateFloorMs: providerFloorMs,
        achievedRate: elapsedMs > 0 ? (c.calls * 1000) / elapsedMs : 0,
        breakerOpens: gate.breakerOpens,
        finalRate: gate.rate,
        adaptive: gate.adaptive,
        countsTokens: gate.countsTokens,
        rateCuts: gate.rateCuts,
      });
      for (const count of COUNTS) total[count] += c[count];
      // The provider that could finish last bounds the run; a pool's member, with the pool's (below).
      if (pooled.has(gate.provider)) continue;
      if (providerFloorMs > 0 && Number.isFinite(providerFloorMs) && providerFloorMs + c.lastCallLatencyMs > rateBoundMs) {
        rateBoundMs = providerFloorMs + c.lastCallLatencyMs;
        floorMs = providerFloorMs;
      }
    }
    // A pool's calls could have gone to any member: no schedule grants the last of them before the
    // members' calls less their bursts, at their rates added up — however they were spread.
    const poolFigures: PoolFigures[] = [];
    for (const pool of this.#pools) {
      let poolCalls = 0;
      let poolBurst = 0;
      let poolRate = 0;
      let last = { lastGrantMs: -Infinity, lastCallLatencyMs: 0 };
      for (const member of pool.members) {
        const c = this.#providers.get(member);
        const figures = providers.find((p) => p.name === member);
        if (c === undefined || figures === undefined) continue;
        poolCalls += c.calls;
        poolBurst += figures.burst;
        poolRate += figures.rate;
        if (c.calls > 0 && c.lastGrantMs > last.lastGrantMs) last = c;
      }
      const poolFloorMs = rateFloorMs([{ atMs: this.#startMs, rate: poolRate }], this.#startMs, poolCalls, poolBurst);
      poolFigures.push({
        name: pool.name,
        members: pool.members,
        calls: poolCalls,
        rate: poolRate,
        burst: poolBurst,
        rateFloorMs: poolFloorMs,
        lastCallLatencyMs: last.lastCallLatencyMs,
      });
      if (poolFloorMs > 0 && Number.isFinite(poolFloorMs) && poolFloorMs + last.lastCallLatencyMs > rateBoundMs) {
        rateBoundMs = poolFloorMs + last.lastCallLatencyMs;
        floorMs = poolFloorMs;
      }
    }
    const lowerBoundsMs = { rate: rateBoundMs, latency: this.#longestPathMs, workers: this.#pathMs / this.#workers };
    const [boundBy, leastMs] = (Object.entries(lowerBoundsMs) as [BoundBy, number][]).reduce((a, b) => (b[1] > a[1] ? b : a));
    return {
      articles: this.#articles,
      succeeded: this.#succeeded,
      failed: this.#failed,
      cancelled: this.#cancelled,
      deadLetters: this.#failed,
      ...total,
      repairs: this.#repairs,
      elapsedMs,
      rateFloorMs: floorMs,
      lowerBoundsMs,
      leastElapsedMs: leastMs,
      boundBy: leastMs > 0 ? boundBy : null,
      efficiency: elapsedMs > 0 && leastMs > 0 ? leastMs / elapsedMs : null,
      wastedCalls: this.#wastedCalls,
      notStarted: this.#total === undefined ? null : Math.max(0, this.#total - this.#articles),
      workers: this.#workers,
      interrupted: ending.interrupted,
      stoppedBy: ending.stoppedBy,
      callLatencyMs: percentiles(this.#latency),
      limiterWaitMs: percentiles(this.#wait),
      failureReasons: Object.fromEntries(this.#failureReasons),
      providers,
      tasks: [...this.#tasks].map(([name, t]) => ({
        name,
        calls: t.calls,
        retries: t.retries,
        repairs: t.repairs,
        rateLimited: t.rateLimited,
        latencyMs: t.latency.count === 0 ? { p50: 0, p95: 0 } : { p50: t.latency.quantile(0.5), p95: t.latency.quantile(0.95) },
        tokensUsed: t.tokensUsed,
        ...(t.priced && { costUsd: t.costNanoUsd / NANO_USD }),
      })),
      ...(poolFigures.length > 0 && { pools: poolFigures }),
      ...(this.#priced && { costUsd: [...this.#providers.values()].reduce((sum, p) => sum + p.costNanoUsd, 0) / NANO_USD }),
      ...(this.#budget !== undefined && { budget: { maxUsd: this.#budget.maxUsd, spentUsd: this.#budget.spentUsd } }),
      ...(this.#cached && { cacheHits: this.#cacheHits }),
      ...(this.#cached && this.#priced && { cacheSavedUsd: this.#savedNanoUsd / NANO_USD }),
      ...(this.#promptCache.readTokens + this.#promptCache.writeTokens > 0 && { promptCache: { ...this.#promptCache } }),
    };
  }
}

function percentiles(histogram: Histogram): Percentiles {
  if (histogram.count === 0) return { p50: 0, p95: 0, p99: 0, max: 0 };
  return {
    p50: histogram.quantile(0.5),
    p95: histogram.quantile(0.95),
    p99: histogram.quantile(0.99),
    max: histogram.max,
  };
}
