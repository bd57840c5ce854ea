import type { GateFigures } from '../gate/call-gate.ts';
import { NANO_USD } from '../quota/budget.ts';
import { rateFloorMs, type RateSince } from '../quota/rate-history.ts';
import type { CallCounts, Percentiles } from './call-counts.ts';
import { CALL_COLUMNS, type CallTally, type RunCounts } from './run-tally.ts';

export type { CallCounts, Percentiles } from './call-counts.ts';

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
  /** The most its calls whose fate is unknown may have cost (perhaps billed: a timeout, a connection broken mid-request), in USD, apart from `costUsd`; absent when none. */
  readonly unknownCostUsd?: number;
}

/** A pool's figures: its members' calls against their limits added up. */
export interface PoolFigures {
  /** The pool's name. */
  readonly name: string;
  /** Its members, in the order listed. */
  readonly members: readonly string[];
  /** Attempts its members made, retries included. */
  readonly calls: number;
  /** Of those, the calls its members answered: what each member served. */
  readonly answered: number;
  /** The members' request rates added up at the start, calls per second (`Infinity` when one has none). */
  readonly rate: number;
  /** The members' bursts added up. */
  readonly burst: number;
  /**
   * The members dropped (they refused the key, the account), each with when, in ms since the run's
   * start: from then on its rate no longer counts in the pool's.
   */
  readonly dropped: readonly { readonly member: string; readonly atMs: number }[];
  /**
   * However the calls were spread, no schedule grants the last sooner, in ms: `(calls − burst)` at the
   * members' rates added up — each member's from the start until it was dropped.
   */
  readonly rateFloorMs: number;
  /** The latency of the call its members granted last, in ms. */
  readonly lastCallLatencyMs: number;
}

/** Per-task call figures. */
export interface TaskFigures extends CallCounts {
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
  /** The most its calls whose fate is unknown may have cost (perhaps billed: a timeout, a connection broken mid-request), in USD, apart from `costUsd`; absent when none. */
  readonly unknownCostUsd?: number;
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
  /**
   * What the run's calls cost at the providers' prices, in USD; absent when no provider has one.
   * A call that never reached its provider (a connection refused, a name that did not resolve)
   * costs nothing; one whose fate is unknown is not here but in `unknownCostUsd`.
   */
  readonly costUsd?: number;
  /**
   * The most the run's calls whose fate is unknown may have cost, in USD: sent, then no answer and
   * nothing telling whether the provider took them (a timeout, a connection broken mid-request).
   * Perhaps billed, perhaps not: the budget holds them at this worst case, apart from what was
   * spent. 0 when there were none; absent when no provider has a price.
   */
  readonly unknownCostUsd?: number;
  /**
   * The budget, and what of it is spent at the end — by this run, earlier runs of the job it was
   * given (a resumed run's), and other processes sharing it — and, apart, what it keeps at their
   * worst case for calls whose fate is unknown (`unknownUsd`, counted against it as spent is).
   */
  readonly budget?: { readonly maxUsd: number; readonly spentUsd: number; readonly unknownUsd: number };
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

/** How a run ended, as its summary states it. */
export interface RunEnding {
  /** The caller's signal stopped the run (Ctrl-C). */
  readonly interrupted: boolean;
  /** What stopped the run early, if something did. */
  readonly stoppedBy?: RunStop | undefined;
}

/**
 * The run's figures from its tally at `endMs`, with each provider's gate figures as they stand
 * then: the counts as the tally made them, the bounds on the elapsed time worked out from them.
 */
export function summarizeRun(tally: RunCounts, endMs: number, ending: RunEnding, gates: readonly GateFigures[]): RunSummary {
  const startMs = tally.startMs;
  const elapsedMs = endMs - startMs;
  const providers: ProviderFigures[] = [];
  const total = tally.calls();
  const pooled = new Set(tally.pools.flatMap((pool) => pool.members.map((member) => member.name)));
  let floorMs = 0;
  let rateBoundMs = 0;
  const gateOf = new Map(gates.map((gate) => [gate.provider, gate]));
  for (const gate of gates) {
    const c = tally.providers.get(gate.provider);
    if (c === undefined) continue;
    const { rate, burst } = requestLimitOf(gate);
    // At the rates the limits allowed over time where this process saw every move, else the configured one.
    const providerFloorMs = rateFloorMs(gate.rates ?? [{ atMs: startMs, rate }], startMs, c.calls, burst);
    providers.push({
      name: gate.provider,
      rate,
      burst,
      ...callCounts(c),
      tokensUsed: c.inputTokens + c.outputTokens,
      ...(tally.priced(gate.provider) && { costUsd: c.costNanoUsd / NANO_USD }),
      ...(c.unknownNanoUsd > 0 && { unknownCostUsd: c.unknownNanoUsd / NANO_USD }),
      circuitRejections: c.circuitRejections,
      lastGrantMs: c.lastGrantMs,
      lastCallLatencyMs: c.lastCallLatencyMs,
      rateFloorMs: providerFloorMs,
      achievedRate: elapsedMs > 0 ? (c.calls * 1000) / elapsedMs : 0,
      breakerOpens: gate.breakerOpens,
      finalRate: gate.rate,
      adaptive: gate.adaptive,
      countsTokens: gate.countsTokens,
      rateCuts: gate.rateCuts,
    });
    // The provider that could finish last bounds the run; a pool's member, with the pool's (below).
    if (pooled.has(gate.provider)) continue;
    if (providerFloorMs > 0 && Number.isFinite(providerFloorMs) && providerFloorMs + c.lastCallLatencyMs > rateBoundMs) {
      rateBoundMs = providerFloorMs + c.lastCallLatencyMs;
      floorMs = providerFloorMs;
    }
  }
  // A pool's calls could have gone to any member: no schedule grants the last of them before the
  // members' calls less their bursts, at their rates added up — however they were spread. A member
  // dropped adds its rate only until then (or its last grant, were that later).
  const poolFigures: PoolFigures[] = [];
  for (const pool of tally.pools) {
    let calls = 0;
    let answered = 0;
    let burst = 0;
    let last = { lastGrantMs: -Infinity, lastCallLatencyMs: 0 };
    const histories: RateSince[][] = [];
    const dropped: { member: string; atMs: number }[] = [];
    for (const member of pool.members) {
      const c = tally.providers.get(member.name);
      const gate = gateOf.get(member.name);
      if (c === undefined || gate === undefined) continue;
      const limit = requestLimitOf(gate);
      calls += c.calls;
      answered += c.answered;
      burst += limit.burst;
      if (c.calls > 0 && c.lastGrantMs > last.lastGrantMs) last = c;
      const moves = [...(gate.rates ?? [{ atMs: startMs, rate: limit.rate }])];
      if (member.droppedAtMs !== undefined) {
        dropped.push({ member: member.name, atMs: member.droppedAtMs });
        moves.push({ atMs: startMs + Math.max(member.droppedAtMs, c.calls > 0 ? c.lastGrantMs : 0), rate: 0 });
      }
      histories.push(moves);
    }
    const rates = addedRates(histories, startMs);
    const poolFloorMs = rateFloorMs(rates, startMs, calls, burst);
    poolFigures.push({
      name: pool.name,
      members: pool.members.map((member) => member.name),
      calls,
      answered,
      rate: rates[0]?.rate ?? 0,
      burst,
      dropped,
      rateFloorMs: poolFloorMs,
      lastCallLatencyMs: last.lastCallLatencyMs,
    });
    if (poolFloorMs > 0 && Number.isFinite(poolFloorMs) && poolFloorMs + last.lastCallLatencyMs > rateBoundMs) {
      rateBoundMs = poolFloorMs + last.lastCallLatencyMs;
      floorMs = poolFloorMs;
    }
  }
  const lowerBoundsMs = { rate: rateBoundMs, latency: tally.longestPathMs, workers: tally.pathMs / tally.workers };
  const [boundBy, leastMs] = (Object.entries(lowerBoundsMs) as [BoundBy, number][]).reduce((a, b) => (b[1] > a[1] ? b : a));
  const articles = tally.articles;
  const { readTokens, writeTokens } = tally.promptCache;
  return {
    articles: articles.started,
    succeeded: articles.succeeded,
    failed: articles.failed,
    cancelled: articles.cancelled,
    deadLetters: articles.failed,
    ...callCounts(total),
    repairs: total.repairs,
    elapsedMs,
    rateFloorMs: floorMs,
    lowerBoundsMs,
    leastElapsedMs: leastMs,
    boundBy: leastMs > 0 ? boundBy : null,
    efficiency: elapsedMs > 0 && leastMs > 0 ? leastMs / elapsedMs : null,
    wastedCalls: tally.wastedCalls,
    notStarted: tally.total === undefined ? null : Math.max(0, tally.total - articles.started),
    workers: tally.workers,
    interrupted: ending.interrupted,
    stoppedBy: ending.stoppedBy,
    callLatencyMs: tally.latencyMs(),
    limiterWaitMs: tally.waitMs(),
    failureReasons: Object.fromEntries(tally.failureReasons),
    providers,
    tasks: [...tally.tasks.values()].map((t) => ({
      name: t.name,
      ...callCounts(t),
      repairs: t.repairs,
      latencyMs: pick(tally.latencyMs(t.name)),
      tokensUsed: t.inputTokens + t.outputTokens,
      ...(tally.taskPriced(t.name) && { costUsd: t.costNanoUsd / NANO_USD }),
      ...(t.unknownNanoUsd > 0 && { unknownCostUsd: t.unknownNanoUsd / NANO_USD }),
    })),
    ...(poolFigures.length > 0 && { pools: poolFigures }),
    ...(tally.anyPriced && { costUsd: total.costNanoUsd / NANO_USD, unknownCostUsd: total.unknownNanoUsd / NANO_USD }),
    ...(tally.budget !== undefined && {
      budget: { maxUsd: tally.budget.maxUsd, spentUsd: tally.budget.spentUsd, unknownUsd: tally.budget.unknownUsd ?? 0 },
    }),
    ...(tally.cached && { cacheHits: tally.cacheHits }),
    ...(tally.cached && tally.anyPriced && { cacheSavedUsd: tally.savedNanoUsd / NANO_USD }),
    ...(readTokens + writeTokens > 0 && { promptCache: { readTokens, writeTokens } }),
  };
}

/** The counts of `tally` alone, in the summary's order. */
function callCounts(tally: CallTally): CallCounts {
  const counts: Record<string, number> = { calls: tally.calls };
  for (const column of CALL_COLUMNS) counts[column] = tally[column];
  counts.retries = tally.retries;
  return counts as unknown as CallCounts;
}

/** A gate's request limit: calls per second (`Infinity` without one) and its burst (0 without one). */
function requestLimitOf(gate: GateFigures): { rate: number; burst: number } {
  const requests = gate.limits.find((limit) => limit.kind === 'requests');
  return { rate: requests?.rate ?? Infinity, burst: requests?.burst ?? 0 };
}

/** Several rates over time added up, as one history of moves from `startMs`. */
export function addedRates(histories: readonly (readonly RateSince[])[], startMs: number): RateSince[] {
  const instants = [...new Set([startMs, ...histories.flatMap((moves) => moves.map((move) => Math.max(startMs, move.atMs)))])].sort(
    (a, b) => a - b,
  );
  return instants.map((atMs) => ({ atMs, rate: histories.reduce((sum, moves) => sum + rateAt(moves, atMs), 0) }));
}

/** The rate of `moves` in force at `atMs` (the first's before it). */
function rateAt(moves: readonly RateSince[], atMs: number): number {
  let rate = moves[0]?.rate ?? 0;
  for (const move of moves) if (move.atMs <= atMs) rate = move.rate;
  return rate;
}

/** The median and the 95th percentile alone. */
function pick({ p50, p95 }: Percentiles): { p50: number; p95: number } {
  return { p50, p95 };
}
