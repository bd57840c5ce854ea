import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { CircuitBreaker } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider } from '../provider/provider.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkNumber, checkObject, expected } from '../validation/checks.ts';
import { BudgetExhaustedError, NANO_USD, type Budget } from '../quota/budget.ts';
import { RateHistory, type RateSince } from '../quota/rate-history.ts';
import { checkProviderSetup, isProviderLimits, type ProviderPrice, type ProviderSetup } from './provider-options.ts';
import { AdaptiveRate } from '../quota/adaptive-rate.ts';
import { LocalLimits } from '../quota/local-limits.ts';
import type { CallCost, LimitGrant, LimitSpec, ProviderLimits } from '../quota/provider-limits.ts';
import { Attempt, type GateAttempt } from './attempt.ts';
import { adaptRate, logFailure, settleBudget, settleGrant, syncHeaders, tellBreaker, type AttemptObserver } from './attempt-observers.ts';
import type { CallDeadline } from './call-deadline.ts';
import type { CallScope } from './call-scope.ts';
import { callWithin } from './call-within.ts';
import type { CachedAnswer } from '../cache/answer-cache.ts';
import { answerKey } from '../cache/answer-key.ts';
import { usageNanoUsd, withCachePrices } from './call-cost.ts';

/** What a gate, and a call through the gates, do unless told otherwise. */
export const GATE_DEFAULTS = Object.freeze({
  /** Output tokens reserved per call until its usage is known (with token limits). */
  maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  /** Lower the limits to what the provider's rate-limit headers say remains. */
  syncHeaders: false,
  /**
   * Repairs per call of an answer that does not parse or fit its schema (asked again with the
   * answer and its problems), the call loop's (`CallLoop`). One: a model shown the validator's
   * message mostly mends the answer at once, and each repair sends the prompt again with the bad
   * answer — more than one rarely pays.
   */
  maxRepairs: 1,
});

/** What a gate's figures are at a moment: for the run summary, so metrics need not look inside. */
export interface GateFigures {
  /** The provider these figures are for. */
  readonly provider: string;
  /** The limits as configured. */
  readonly limits: readonly LimitSpec[];
  /** The request rate in force now (the adaptive rate moves it), calls per second. */
  readonly rate: number;
  /** Whether any of its limits counts LLM tokens. */
  readonly countsTokens: boolean;
  /** Times the circuit breaker opened. */
  readonly breakerOpens: number;
  /** Times the adaptive rate cut the rate. */
  readonly rateCuts: number;
  /** Whether the adaptive rate moves the request rate. */
  readonly adaptive: boolean;
  /**
   * The request rate from each instant on (clock readings, calls per second), oldest first: the
   * first is the rate when the gate was made. Undefined where the limits are shared with other
   * processes, whose moves of the rate this process does not see.
   */
  readonly rates: readonly RateSince[] | undefined;
}

/** A gate: its provider's setup (the one shape, see {@link ProviderSetup}), and what the run around it shares. */
export interface CallGateOptions extends ProviderSetup {
  /**
   * The run's money, shared by every gate: each attempt holds its worst case (at `price`) before it
   * is sent, and settles at what it cost. Needs a `price`. @default none
   */
  readonly budget?: Budget | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

/** What one attempt through a gate takes besides its request and its call's scope. */
export interface GateAttemptOptions {
  /** The most tokens this call's answer may take (a task's own). @default the gate's `maxOutputTokens` */
  readonly maxOutputTokens?: number | undefined;
  /**
   * Among attempts waiting for the limits, lower ranks go first.
   * @default with a `CallDeadline` (the scope is `ranked`), its instant less `keepBeforeDeadlineMs`
   *   (a deadline not yet started ranks last); else none (unranked: served by arrival, behind ranked calls)
   */
  readonly rank?: number | undefined;
  /**
   * With a `CallDeadline` and no `rank`: the time the calls after this one are expected to need
   * before the deadline, in ms. The attempt is ranked by the latest instant it can be granted and
   * leave them that: earliest deadline first.
   * @default 0
   */
  readonly keepBeforeDeadlineMs?: number | undefined;
  /**
   * Told as the attempt goes to the provider (granted, before any answer): what a call is paid
   * for, even when the process dies before it answers. @default none
   */
  readonly onSend?: ((request: LlmRequest) => void) | undefined;
  /** Passed through to the attempt's event: the pool slot making the call. @default none (the event's `workerId` is undefined) */
  readonly workerId?: number | undefined;
}

/**
 * One provider's way in, one attempt at a time: circuit breaker → budget hold → limits → call, then
 * the attempt's observers. What comes after an attempt — judging the answer, a repair, a retry, another
 * gate — is the call loop's (`CallLoop`, over a route that chooses the gate).
 *
 * - An open circuit refuses the attempt at once, spending nothing.
 * - Each attempt, retries included, takes its cost from the limits first, so retries count against
 *   the rate like first tries; a wait that cannot end before the deadline fails at once instead of
 *   holding the worker.
 * - After the call, its outcome goes to each observer in turn: the grant is settled against the
 *   reported usage, the budget at what it cost, the breaker hears of server errors and timeouts
 *   (not of 429s — those are the limits' business), the adaptive rate of 429s and successes, and
 *   with `syncHeaders` the limits drop to what the provider says remains.
 */
export class CallGate {
  /** The provider the gate calls. */
  readonly provider: Provider;
  /** The provider's name: what the summary and the result lines call it. */
  readonly name: string;
  /** The provider's limits every attempt acquires first. */
  readonly limits: ProviderLimits;
  /** The clock the gate runs on. */
  readonly clock: Clock;
  /** The circuit breaker the setup asked for, if any. */
  readonly breaker: CircuitBreaker | undefined;
  /** The adaptive rate the setup asked for, if any: its `onChange` tells each move of the rate. */
  readonly adaptive: AdaptiveRate | undefined;
  /** The output tokens each call reserves unless its task says otherwise. */
  readonly maxOutputTokens: number;
  /** The budget every attempt holds its worst case from, if any. */
  readonly budget: Budget | undefined;
  #reserved: CallCost = REQUEST_ONLY;
  #reservedSeen = 0;
  /** Attempts begun and not yet ended; of them, those not yet lined up at the limits. */
  #inFlightCount = 0;
  #arriving = 0;
  /** What the provider charges, its prompt cache's prices filled in from the provider's ratios; undefined without a price. */
  readonly price: ProviderPrice | undefined;
  readonly #callTimeoutMs: number;
  readonly #estimateInputTokens: (request: LlmRequest) => number | Promise<number>;
  readonly #inFlight: LimitFunction | undefined;
  readonly #observers: readonly AttemptObserver[];
  /** The request rate's moves, for the run's rate bound; none kept for shared limits. */
  readonly #rates: RateHistory | undefined;

  constructor(options: CallGateOptions) {
    const { provider, maxConcurrent } = options;
    checkProviderSetup(options, provider.name);
    this.provider = provider;
    this.name = provider.name;
    this.clock = options.clock ?? systemClock;
    const limits = isProviderLimits(options.limits) ? options.limits : new LocalLimits({ limits: options.limits, clock: this.clock });
    this.limits = limits;
    const logger = options.logger ?? silentLogger;
    if (options.breaker !== undefined) {
      const { giveUpAfterMs: _, ...breakerOptions } = options.breaker;
      this.breaker = new CircuitBreaker({ ...breakerOptions, clock: this.clock, name: provider.name, logger });
    }
    if (options.adaptive !== undefined) this.adaptive = new AdaptiveRate({ ...options.adaptive, limits, clock: this.clock });
    this.#rates = (limits as ProviderLimits).shared === true ? undefined : new RateHistory(this.clock.now(), limits.rate);
    this.maxOutputTokens = options.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
    checkInteger('maxOutputTokens', this.maxOutputTokens, 1);
    if (options.price !== undefined) {
      const { price } = options;
      checkObject('price', price);
      checkNumber('price.inputPerMTok', price.inputPerMTok, { min: 0, unit: 'USD per million tokens' });
      checkNumber('price.outputPerMTok', price.outputPerMTok, { min: 0, unit: 'USD per million tokens' });
      for (const field of ['cachedInputPerMTok', 'cacheWritePerMTok'] as const)
        if (price[field] !== undefined) checkNumber(`price.${field}`, price[field], { min: 0, unit: 'USD per million tokens' });
      this.price = withCachePrices(price, provider.promptCacheRatios);
    }
    this.budget = options.budget;
    if (this.budget !== undefined && this.price === undefined) {
      throw expected(`the price of "${provider.name}"`, 'given with a budget (it is what the budget counts in)', undefined);
    }
    this.#callTimeoutMs = options.callTimeoutMs ?? Infinity;
    checkNumber('callTimeoutMs', this.#callTimeoutMs, { min: 0, minExclusive: true, finite: false, unit: 'ms' });
    this.#estimateInputTokens = options.estimateInputTokens ?? estimateInputTokens;
    if (maxConcurrent !== undefined) checkInteger('maxConcurrent', maxConcurrent, 1);
    this.#inFlight = maxConcurrent === undefined ? undefined : pLimit(maxConcurrent);
    const log = logger.child({ component: 'call-gate', provider: provider.name });
    this.#observers = [
      settleGrant(provider.limitsCountCacheReads ?? true),
      ...(this.budget === undefined ? [] : [settleBudget]),
      ...(this.breaker === undefined ? [] : [tellBreaker]),
      ...(this.adaptive === undefined ? [] : [adaptRate(this.adaptive, provider.statesLimits === false)]),
      ...((options.syncHeaders ?? GATE_DEFAULTS.syncHeaders) ? [syncHeaders(limits, log)] : []),
      logFailure(log),
    ];
  }

  /** The gate's figures now. */
  figures(): GateFigures {
    return {
      provider: this.provider.name,
      limits: this.limits.specs,
      rate: this.limits.rate,
      countsTokens: this.limits.countsTokens,
      breakerOpens: this.breaker?.opens ?? 0,
      rateCuts: this.adaptive?.decreases ?? 0,
      adaptive: this.adaptive !== undefined,
      rates: this.#rates?.moves,
    };
  }

  /**
   * The answer cache's key for `request` through this gate: the hash of what its provider says
   * shapes the answer (`Provider.answerIdentity`: the vendor, the model, the request as sent), or
   * undefined when the provider says nothing of it. Two gates whose keys are equal give answers
   * one may keep for the other; a pool looks a call up under each member's key.
   */
  answerKey(request: LlmRequest, maxOutputTokens?: number): string | undefined {
    if (this.provider.answerIdentity === undefined) return undefined;
    return answerKey(this.provider.answerIdentity(request, maxOutputTokens ?? this.maxOutputTokens));
  }

  /** What the call that made a kept answer cost at this gate's price, in whole nano-dollars: what a hit saves (0 without a price or a usage). */
  savedNanoUsd(answer: CachedAnswer): number {
    return answer.usage === undefined || this.price === undefined ? 0 : usageNanoUsd(answer.usage, this.price);
  }

  /** Ms until `calls` more calls would be granted by the limits, behind those waiting (see `ProviderLimits.backlogMs`). */
  backlogMs(calls: number, perCall?: CallCost): number {
    return this.limits.backlogMs(calls, perCall);
  }

  /**
   * Ms until this provider's circuit may admit a new article's call: 0 when it is closed; until the
   * cooldown ends when open; Infinity while half-open — a call already under way makes the probe,
   * and its outcome decides ({@link onCircuitChange} says when).
   */
  circuitWaitMs(): number {
    // Asked before every article starts: a circuit that never opened needs no state read.
    if (this.breaker === undefined || this.breaker.opens === 0) return 0;
    const state = this.breaker.state;
    if (state === undefined || state.kind === 'closed') return 0;
    if (state.kind === 'open') return Math.max(0, state.reopensAtMs - this.clock.now());
    return Infinity;
  }

  /**
   * What a call through this gate takes from the limits, as the recent ones took it: its whole
   * reservation (the usage settles it later, but a call waiting for the limits needs all of it at
   * once, and each one in flight holds all of it until it answers). What admission counts an
   * article's calls at; one request and no tokens until a call with tokens has been made.
   */
  typicalCost(): CallCost {
    return this.#reserved;
  }

  /** The mean of the first calls, then a moving one: prompts change with the articles. */
  #recordCost(cost: CallCost): void {
    this.#reserved = movingMean(this.#reserved, cost, this.#reservedSeen++);
  }

  /** Calls `listener` on every change of the circuit's state; returns a function that stops it. */
  onCircuitChange(listener: () => void): () => void {
    return this.breaker?.onStateChange(listener) ?? (() => {});
  }

  /** Attempts through the gate now: begun (by any route, any call) and not yet ended. */
  get inFlight(): number {
    return this.#inFlightCount;
  }

  /**
   * Of the attempts in flight, those not yet lined up at the limits (at the breaker, the budget,
   * counting their prompt): the limits' backlog does not count them yet, so a route choosing among
   * gates adds them to it.
   */
  get arriving(): number {
    return this.#arriving;
  }

  /**
   * One attempt, start to end: breaker, budget hold, limits (by the scope's deadline), the call,
   * then the observers. Never rejects: how it ended is in the record the observers have seen, which
   * the caller — the call loop — judges, completes and tells on. `number` is the attempt's number
   * within its call (from 1), `repair` its repair number (0: the request as the task made it).
   */
  async attempt(request: LlmRequest, number: number, repair: number, options: GateAttemptOptions, scope: CallScope): Promise<GateAttempt> {
    const maxOutputTokens = options.maxOutputTokens ?? this.maxOutputTokens;
    const attempt = new Attempt(
      this.provider.name,
      request,
      number,
      options.workerId,
      this.clock.now(),
      this.price,
      maxOutputTokens,
      this.provider,
    );
    attempt.repair = repair;
    this.#inFlightCount++;
    this.#arriving++;
    try {
      attempt.permit = this.breaker?.acquirePermit();
      const { countsTokens } = this.limits;
      if (this.budget !== undefined) await this.#hold(attempt, scope.signal);
      const cost = countsTokens ? await this.#cost(request, maxOutputTokens) : REQUEST_ONLY;
      if (cost !== REQUEST_ONLY) this.#recordCost(cost);
      // Holding the budget and counting the prompt (loading the tokenizer, the first time) is not
      // waiting for the limits; with neither, no time has passed since the start.
      if (this.budget !== undefined || countsTokens) attempt.waitStartMs = this.clock.now();
      attempt.response = await (this.#inFlight === undefined
        ? this.#send(attempt, cost, maxOutputTokens, options, scope, attempt.waitStartMs)
        : this.#inFlight(() => this.#send(attempt, cost, maxOutputTokens, options, scope, this.clock.now())));
    } catch (error) {
      attempt.error = error;
    }
    // An attempt that ended before the limits (a breaker's refusal, the budget's) never lined up.
    this.#lineUp(attempt);
    this.#inFlightCount--;
    attempt.end(this.clock.now(), scope.signal);
    const rate = this.limits.rate;
    for (const observe of this.#observers) observe(attempt);
    this.#recordRate(attempt.atMs, rate);
    return attempt;
  }

  /** The attempt is in the limits' queue now, which counts it from here on. */
  #lineUp(attempt: Attempt): void {
    if (attempt.queued) return;
    attempt.queued = true;
    this.#arriving--;
  }

  /**
   * Holds the attempt's worst case from the budget — what it can cost whatever the tokenizer, its
   * whole answer included — waiting for holds in flight to settle when they leave no room, or
   * refuses it, sending nothing, when what is spent leaves none.
   */
  async #hold(attempt: Attempt, signal: AbortSignal | undefined): Promise<void> {
    const worstNano = attempt.worstNanoUsd();
    const budget = this.budget!;
    const hold = await budget.reserve(worstNano, { signal });
    if (hold === undefined)
      throw new BudgetExhaustedError(budget.maxUsd, budget.spentUsd, worstNano / NANO_USD, budget.heldUsd, budget.unknownUsd ?? 0);
    attempt.hold = hold;
  }

  /**
   * Notes a move of the request rate the observers just made. Where the limits are this process's
   * own, every move is one of this gate's observers': a rise is dated at the attempt's end (before
   * the observers ran), a cut now (after them), so that the rates noted never allowed fewer
   * grants than the limits did.
   */
  #recordRate(endMs: number, before: number): void {
    const rate = this.limits.rate;
    if (rate === before || this.#rates === undefined) return;
    this.#rates.record(rate > before ? endMs : this.clock.now(), rate);
  }

  /** Takes the cost from the limits, by the deadline, then calls the provider. `nowMs`: the clock's reading as it begins. */
  async #send(
    attempt: Attempt,
    cost: CallCost,
    maxOutputTokens: number,
    options: GateAttemptOptions,
    scope: CallScope,
    nowMs: number,
  ): Promise<LlmResponse> {
    const { pending } = scope;
    const rank = options.rank ?? (scope.ranked ? scope.deadlineMs - (options.keepBeforeDeadlineMs ?? 0) : undefined);
    if (pending === undefined) {
      const maxWaitMs = Math.max(0, scope.deadlineMs - nowMs);
      const granted = this.limits.acquire(cost, { signal: scope.signal, maxWaitMs, rank });
      this.#lineUp(attempt);
      attempt.grant = await granted;
    } else {
      this.#lineUp(attempt);
      attempt.grant = await this.#acquireNear(cost, pending, scope.signal, rank);
      // Independent calls may wait together: the first granted starts the deadline for all.
      scope.startAt(this.clock.now());
    }
    attempt.sentAtMs = this.clock.now();
    const { signal, deadlineMs } = scope;
    options.onSend?.(attempt.request);
    const leftMs = deadlineMs - attempt.sentAtMs;
    // What is left of the deadline is the call's timeout, unless the call timeout is shorter.
    if (!(this.#callTimeoutMs < leftMs)) return this.provider.call(attempt.request, { signal, timeoutMs: leftMs, maxOutputTokens });
    return callWithin(this.provider, this.clock, attempt.request, this.#callTimeoutMs, signal, maxOutputTokens);
  }

  /**
   * A grant at most `deadline.firstGrantWithinMs()` off: a refusal took nothing and said how far off the grant
   * was, so the call sleeps until it would be that near (at least a call's spacing at the current
   * rate, so that processes refused together do not all ask again at once) and asks again.
   */
  async #acquireNear(
    cost: CallCost,
    deadline: CallDeadline,
    signal: AbortSignal | undefined,
    rank: number | undefined,
  ): Promise<LimitGrant> {
    for (;;) {
      const maxWaitMs = Math.max(0, deadline.firstGrantWithinMs());
      try {
        return await this.limits.acquire(cost, { signal, maxWaitMs, rank });
      } catch (error) {
        if (!isMaxWaitExceededError(error) || !Number.isFinite(error.waitMs)) throw error;
        const spacingMs = this.limits.rate === Infinity ? 1 : 1000 / this.limits.rate;
        await sleep(this.clock, Math.max(spacingMs, error.waitMs - maxWaitMs), signal);
      }
    }
  }

  async #cost(request: LlmRequest, maxOutputTokens: number): Promise<CallCost> {
    return { requests: 1, inputTokens: await this.#estimateInputTokens(request), outputTokens: maxOutputTokens };
  }
}

const REQUEST_ONLY: CallCost = { requests: 1, inputTokens: 0, outputTokens: 0 };

/** A mean of the first 16 costs, then a moving mean of weight 1/16. */
function movingMean(mean: CallCost, next: CallCost, seen: number): CallCost {
  if (seen === 0) return { requests: 1, inputTokens: next.inputTokens, outputTokens: next.outputTokens };
  const weight = seen < 16 ? 1 / (seen + 1) : 1 / 16;
  return {
    requests: 1,
    inputTokens: mean.inputTokens + (next.inputTokens - mean.inputTokens) * weight,
    outputTokens: mean.outputTokens + (next.outputTokens - mean.outputTokens) * weight,
  };
}
