import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { CircuitBreaker, type BrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider } from '../provider/provider.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { RetryError, RetryPolicy, type RetryDecision, type RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkNumber, checkObject, expected } from '../validation/checks.ts';
import { BudgetExhaustedError, NANO_USD, type Budget } from '../quota/budget.ts';
import { RateHistory, type RateSince } from '../quota/rate-history.ts';
import { checkProviderSetup, isProviderLimits, type ProviderPrice, type ProviderSetup } from './provider-options.ts';
import { AdaptiveRate } from '../quota/adaptive-rate.ts';
import { LocalLimits } from '../quota/local-limits.ts';
import type { CallCost, LimitGrant, LimitSpec, ProviderLimits } from '../quota/provider-limits.ts';
import { Attempt, type AttemptEvent } from './attempt.ts';
import { adaptRate, logFailure, settleBudget, settleGrant, syncHeaders, tellBreaker, type AttemptObserver } from './attempt-observers.ts';
import type { CallDeadline } from './call-deadline.ts';
import { callWithin } from './call-within.ts';
import type { AnswerCache, CachedAnswer } from '../cache/answer-cache.ts';
import { answerKey } from '../cache/answer-key.ts';
import { OneCallPerKey } from '../cache/one-call-per-key.ts';
import { usageNanoUsd, withCachePrices } from './call-cost.ts';
import { repairAfter } from './repair.ts';

/** What a gate does unless told otherwise. */
export const GATE_DEFAULTS = Object.freeze({
  /** Output tokens reserved per call until its usage is known (with token limits). */
  maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  /** Lower the limits to what the provider's rate-limit headers say remains. */
  syncHeaders: false,
  /**
   * Repairs per call of an answer that does not parse or fit its schema (asked again with the
   * answer and its problems). One: a model shown the validator's message mostly mends the answer at
   * once, and each repair sends the prompt again with the bad answer — more than one rarely pays.
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
  /**
   * Answers kept across calls, runs and processes: a call is looked up first (before the breaker,
   * the budget and the limits, so a hit takes nothing from any of them), identical calls in flight
   * wait for the first one's answer, and every answer the provider gives — parsed and fit to its
   * schema, as a provider resolves only with those — is kept. Only for a provider with
   * `answerIdentity`. @default none (every call made)
   */
  readonly cache?: AnswerCache | undefined;
  /** Attempts, backoff and retry-after cap. @default RETRY_DEFAULTS, full-jitter backoff */
  readonly retry?: RetryPolicyOptions | undefined;
  /**
   * How many times a call's answer that does not parse or fit its schema is repaired — asked again
   * with that answer and the validator's problems — before the retry policy takes it as any other
   * failure (0: never; each repair is an attempt paid for, not counted against `maxAttempts`).
   * @default GATE_DEFAULTS.maxRepairs (1)
   */
  readonly maxRepairs?: number | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

/** What `CallGate.call()` takes besides the request: the most output tokens, a signal, a deadline, a rank among waiting calls. */
export interface GateCallOptions {
  /** The most tokens this call's answer may take (a task's own). @default the gate's `maxOutputTokens` */
  readonly maxOutputTokens?: number | undefined;
  /** Aborts the limiter wait, the call in flight and the backoff sleep. @default none */
  readonly signal?: AbortSignal | undefined;
  /**
   * Clock instant by which the call must be done: limiter waits and backoffs that would end later fail at once.
   * @default Infinity (no deadline)
   */
  readonly deadlineMs?: number | undefined;
  /**
   * A deadline that may not have started yet (an article's): it replaces `signal` and `deadlineMs`.
   * The gate starts it from its `fromMs` — or, on limits other processes share
   * (`ProviderLimits.shared`), at the call's grant, taken only when at most
   * `firstGrantWithinMs()` off: further off, the call takes nothing, sleeps until one would be that
   * near and asks again, so an article not yet begun never queues ahead of the later calls of
   * articles under way.
   * @default none (the deadline is `deadlineMs`, and `signal` aborts the call)
   */
  readonly deadline?: CallDeadline | undefined;
  /**
   * Among calls waiting for the limits, lower ranks go first.
   * @default with a started `deadline`, its instant less `keepBeforeDeadlineMs`; else none (unranked:
   *   served by arrival, behind ranked calls)
   */
  readonly rank?: number | undefined;
  /**
   * With a `deadline` and no `rank`: the time the calls after this one are expected to need before
   * the deadline, in ms. The call is ranked by the latest instant it can be granted and leave them
   * that: earliest deadline first. A call whose deadline has not started is unranked.
   * @default 0
   */
  readonly keepBeforeDeadlineMs?: number | undefined;
  /** Told after every attempt. @default none */
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /**
   * Told as each attempt goes to the provider (granted, before any answer): what a call is paid
   * for, even when the process dies before it answers. @default none
   */
  readonly onSend?: ((request: LlmRequest) => void) | undefined;
  /** Passed through to the attempt events: the pool slot making the call. @default none (the events' `workerId` is undefined) */
  readonly workerId?: number | undefined;
  /**
   * Counts for the caller: `calls` goes up by one for each attempt that reached the provider (and
   * so spent its cost), `latencyMs` by the time the provider took to answer it, `costNanoUsd` by
   * what it cost at the provider's price (whole nano-dollars), `repairs` by one for each repair
   * made (an attempt that asked again with an unfit answer's problems).
   * @default none (nothing counted)
   */
  readonly tally?: { calls: number; latencyMs: number; costNanoUsd: number; repairs: number } | undefined;
}

/** A call's answer through a gate: the provider's response, and the attempts the call took. */
export interface GateAnswer {
  /** The provider's response; from the cache, its output alone (no usage: nothing was used). */
  readonly response: LlmResponse;
  /** Attempts made for it, retries included: 0 for an answer from the cache. */
  readonly attempts: number;
  /** True when the answer came from the answer cache (kept, or another call's under way): no call was made. */
  readonly cached?: boolean | undefined;
  /** With `cached`: what the call that made the answer cost, at this gate's price, in whole nano-dollars (0 without a price or a usage). */
  readonly savedNanoUsd?: number | undefined;
}

/** The deadline and signal a call runs under; a deadline still to start (`pending`) starts at the first grant. */
export interface CallScope {
  signal: AbortSignal | undefined;
  deadlineMs: number;
  pending: CallDeadline | undefined;
  /**
   * Told as an attempt lines up at the limits (their queue now counts it): a pool that chose the
   * gate counts the call as the gate's own until then. @default none
   */
  onQueued?: (() => void) | undefined;
}

/**
 * The deadline a call runs under. An unstarted deadline starts from its `fromMs` now, unless the
 * limits are `shared`: this process cannot see the demand ahead of it there, so the call's grant
 * starts it, and an article waiting for that grant has not begun — it cannot fail for the other
 * processes' share of the queue.
 */
export function openScope(options: GateCallOptions, shared: boolean): CallScope {
  const { deadline } = options;
  if (deadline === undefined) return { signal: options.signal, deadlineMs: options.deadlineMs ?? Infinity, pending: undefined };
  if (!deadline.started && !shared) deadline.start(deadline.fromMs);
  return { signal: deadline.signal, deadlineMs: deadline.atMs, pending: deadline.started ? undefined : deadline };
}

/**
 * One attempt through `gate` — breaker, budget, limits, call, the gate's observers — for a route
 * that makes its own retries and repairs across gates (a pool): the caller decides what comes next,
 * and tells `onAttempt` and the tally itself. `repair` is the attempt's repair number (0: the request
 * as the task made it). Never rejects. Not on the package's API (an attempt's record and its scope
 * are the gate's own): set by the class.
 */
export let attemptThrough: (
  gate: CallGate,
  request: LlmRequest,
  number: number,
  repair: number,
  options: GateCallOptions,
  scope: CallScope,
) => Promise<Attempt>;

/**
 * The way to a provider, for every attempt: circuit breaker → limits → call → retry with backoff.
 *
 * - An open circuit refuses the attempt at once, spending nothing; the call waits until the
 *   circuit admits probes, within its deadline, and the refused attempt does not count towards
 *   `maxAttempts`.
 * - Each attempt, retries included, takes its cost from the limits first, so retries count against
 *   the rate like first tries; a wait that cannot end before the deadline fails at once instead of
 *   holding the worker.
 * - After the call, its outcome goes to each observer in turn: the grant is settled against the
 *   reported usage, the breaker hears of server errors and timeouts (not of 429s — those are the
 *   limits' business), the adaptive rate of 429s and successes, and with `syncHeaders` the limits
 *   drop to what the provider says remains.
 */
export class CallGate {
  /** The provider the gate calls. */
  readonly provider: Provider;
  /** The provider's limits every attempt acquires first. */
  readonly limits: ProviderLimits;
  /** The clock the gate runs on. */
  readonly clock: Clock;
  /** The circuit breaker the setup asked for, if any. */
  readonly breaker: CircuitBreaker | undefined;
  /** The adaptive rate the setup asked for, if any: its `onChange` tells each move of the rate. */
  readonly adaptive: AdaptiveRate | undefined;
  #reserved: CallCost = REQUEST_ONLY;
  #reservedSeen = 0;
  readonly #retry: RetryPolicy;
  readonly #maxRepairs: number;
  readonly #maxOutputTokens: number;
  readonly #price: ProviderPrice | undefined;
  readonly #budget: Budget | undefined;
  readonly #callTimeoutMs: number;
  readonly #estimateInputTokens: (request: LlmRequest) => number | Promise<number>;
  readonly #inFlight: LimitFunction | undefined;
  readonly #observers: readonly AttemptObserver[];
  /** The request rate's moves, for the run's rate bound; none kept for shared limits. */
  readonly #rates: RateHistory | undefined;
  /** The answer cache in front of the calls, when there is one and the provider says what shapes its answers. */
  readonly #cached: OneCallPerKey | undefined;

  static {
    attemptThrough = (gate, request, number, repair, options, scope) => gate.#attempt(request, number, repair, options, scope);
  }

  constructor(options: CallGateOptions) {
    const { provider, maxConcurrent } = options;
    checkProviderSetup(options, provider.name);
    this.provider = provider;
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
    this.#retry = new RetryPolicy(options.retry);
    this.#maxRepairs = options.maxRepairs ?? GATE_DEFAULTS.maxRepairs;
    checkInteger('maxRepairs', this.#maxRepairs, 0);
    this.#maxOutputTokens = options.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
    checkInteger('maxOutputTokens', this.#maxOutputTokens, 1);
    if (options.price !== undefined) {
      const { price } = options;
      checkObject('price', price);
      checkNumber('price.inputPerMTok', price.inputPerMTok, { min: 0, unit: 'USD per million tokens' });
      checkNumber('price.outputPerMTok', price.outputPerMTok, { min: 0, unit: 'USD per million tokens' });
      for (const field of ['cachedInputPerMTok', 'cacheWritePerMTok'] as const)
        if (price[field] !== undefined) checkNumber(`price.${field}`, price[field], { min: 0, unit: 'USD per million tokens' });
      this.#price = withCachePrices(price, provider.promptCacheRatios);
    }
    this.#budget = options.budget;
    if (this.#budget !== undefined && this.#price === undefined) {
      throw expected(`the price of "${provider.name}"`, 'given with a budget (it is what the budget counts in)', undefined);
    }
    this.#callTimeoutMs = options.callTimeoutMs ?? Infinity;
    checkNumber('callTimeoutMs', this.#callTimeoutMs, { min: 0, minExclusive: true, finite: false, unit: 'ms' });
    this.#estimateInputTokens = options.estimateInputTokens ?? estimateInputTokens;
    if (maxConcurrent !== undefined) checkInteger('maxConcurrent', maxConcurrent, 1);
    this.#inFlight = maxConcurrent === undefined ? undefined : pLimit(maxConcurrent);
    const log = logger.child({ component: 'call-gate', provider: provider.name });
    this.#cached = options.cache === undefined || provider.answerIdentity === undefined ? undefined : new OneCallPerKey(options.cache, log);
    this.#observers = [
      settleGrant(provider.limitsCountCacheReads ?? true),
      ...(this.#budget === undefined ? [] : [settleBudget]),
      ...(this.breaker === undefined ? [] : [tellBreaker]),
      ...(this.adaptive === undefined ? [] : [adaptRate(this.adaptive)]),
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
   * Resolves with the response and the attempts it took; rejects with a `RetryError` (carrying the
   * last attempt's error) when the retry policy gives up, or with `signal.reason` when aborted.
   * With a `cache`, an answer kept for the same request ends the call at once, attempting nothing. An
   * answer that does not parse or fit its schema is repaired first, up to `maxRepairs` times: asked
   * again at once with the answer and its problems (the request's conversation grows by them).
   */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<GateAnswer> {
    if (this.#cached === undefined) return this.#call(request, options);
    const key = this.answerKey(request, options.maxOutputTokens)!;
    const signal = options.deadline === undefined ? options.signal : options.deadline.signal;
    const { made, hit } = await this.#cached.call([key], signal, () => this.#call(request, options));
    if (made !== undefined) return made;
    return { response: { output: hit.output }, attempts: 0, cached: true, savedNanoUsd: this.savedNanoUsd(hit) };
  }

  /**
   * The answer cache's key for `request` through this gate: the hash of what its provider says
   * shapes the answer (`Provider.answerIdentity`: the vendor, the model, the request as sent), or
   * undefined when the provider says nothing of it. Two gates whose keys are equal give answers
   * one may keep for the other; a pool looks a call up under each member's key.
   */
  answerKey(request: LlmRequest, maxOutputTokens?: number): string | undefined {
    if (this.provider.answerIdentity === undefined) return undefined;
    return answerKey(this.provider.answerIdentity(request, maxOutputTokens ?? this.#maxOutputTokens));
  }

  /** What the call that made a kept answer cost at this gate's price, in whole nano-dollars: what a hit saves (0 without a price or a usage). */
  savedNanoUsd(answer: CachedAnswer): number {
    return answer.usage === undefined || this.#price === undefined ? 0 : usageNanoUsd(answer.usage, this.#price);
  }

  /** The call through breaker, budget, limits and provider, retried: the gate without its cache. */
  async #call(request: LlmRequest, options: GateCallOptions): Promise<GateAnswer> {
    const { onAttempt, tally } = options;
    const scope = openScope(options, this.limits.shared === true);
    let previousDelayMs = 0;
    let asked = request;
    let repairs = 0;
    for (let number = 1, repair = 0; ; ) {
      const attempt = await this.#attempt(asked, number, repair, options, scope);
      // The first grant may have started the deadline: read both afresh after every attempt.
      const { signal, deadlineMs } = scope;
      // Taken before the caller hears of the attempt: an abort its listener makes (a run stopping
      // on this very failure) must not hide the failure as a cancellation.
      const aborted = signal?.aborted === true;
      // An open circuit sent nothing: the call waits for it as it waits for a token, within its
      // deadline, and the attempt is not spent — a short outage costs time, not the articles that
      // met it.
      const refused = attempt.outcome === 'circuit-open';
      const repaired = aborted ? undefined : repairAfter(attempt, asked, repairs, this.#maxRepairs, deadlineMs);
      const decision =
        attempt.outcome === 'ok' || aborted || repaired !== undefined
          ? undefined
          : refused
            ? this.#circuitWait(attempt, number, deadlineMs)
            : this.#retry.next(attempt.error, number, previousDelayMs, attempt.atMs, deadlineMs);
      if (decision?.retry) attempt.retryInMs = decision.delayMs;
      if (attempt.called && tally !== undefined) {
        tally.calls++;
        tally.latencyMs += attempt.latencyMs;
        tally.costNanoUsd += attempt.costNanoUsd;
        if (attempt.repair > 0) tally.repairs++;
      }
      onAttempt?.(attempt);
      if (attempt.response !== undefined) return { response: attempt.response, attempts: number };
      if (aborted) throw signal!.reason;
      if (repaired !== undefined) {
        // Counted apart from the attempts: a repair is not a retry, and is made at once.
        asked = repaired;
        repair = ++repairs;
        continue;
      }
      if (!decision!.retry) throw decision!.error;
      if (refused) {
        await this.#untilCircuitMoves(decision!.delayMs, signal);
        continue;
      }
      // A retry after an answer no repair mended asks afresh; after any other failure, the same again.
      if (attempt.outcome === 'malformed') asked = request;
      repair = 0;
      await sleep(this.clock, decision!.delayMs, signal);
      previousDelayMs = decision!.delayMs;
      number++;
    }
  }

  /**
   * How long a call the circuit refused waits before it asks again: until an open circuit admits
   * probes (its own cooldown, which no cap shortens: it is the breaker's, not a provider's hint),
   * or — half-open, every probe slot taken — until the probe settles, at the latest the deadline.
   * Refused when that would end past the deadline, or the deadline has come.
   */
  #circuitWait(attempt: Attempt, number: number, deadlineMs: number): RetryDecision {
    // Instants compared, not a wait added to now: `at + (until − at)` may round past `until`.
    // Half-open (no instant): until the probe settles, at the latest the deadline.
    const until = (attempt.error as BrokenCircuitError).reopensAtMs ?? deadlineMs;
    if (attempt.atMs >= deadlineMs || until > deadlineMs)
      return { retry: false, error: new RetryError(number - 1, attempt.error, 'deadline') };
    return { retry: true, delayMs: Math.max(0, until - attempt.atMs) };
  }

  /** Sleeps `ms`, or less: any change of the circuit's state (the probe settled) ends the wait. */
  #untilCircuitMoves(ms: number, signal: AbortSignal | undefined): Promise<void> {
    const breaker = this.breaker!;
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: unknown) => {
        cancelTimer();
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = () => finish(signal!.reason);
      const cancelTimer = this.clock.setTimer(ms, () => finish());
      const unsubscribe = breaker.onStateChange(() => finish());
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The provider's name: what the summary and the result lines call this route. */
  get name(): string {
    return this.provider.name;
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

  /** One attempt, start to end; never rejects: how it ended is in the record, and the observers have seen it. */
  async #attempt(request: LlmRequest, number: number, repair: number, options: GateCallOptions, scope: CallScope): Promise<Attempt> {
    const maxOutputTokens = options.maxOutputTokens ?? this.#maxOutputTokens;
    const attempt = new Attempt(
      this.provider.name,
      request,
      number,
      options.workerId,
      this.clock.now(),
      this.#price,
      maxOutputTokens,
      this.provider,
    );
    attempt.repair = repair;
    try {
      attempt.permit = this.breaker?.acquirePermit();
      if (this.#budget !== undefined) await this.#hold(attempt, scope.signal);
      const cost = this.limits.countsTokens ? await this.#cost(request, maxOutputTokens) : REQUEST_ONLY;
      if (cost !== REQUEST_ONLY) this.#recordCost(cost);
      // Counting the prompt (and loading the tokenizer, the first time) is not waiting for the limits.
      attempt.waitStartMs = this.clock.now();
      attempt.response = await (this.#inFlight === undefined
        ? this.#send(attempt, cost, maxOutputTokens, options, scope)
        : this.#inFlight(() => this.#send(attempt, cost, maxOutputTokens, options, scope)));
    } catch (error) {
      attempt.error = error;
    }
    attempt.end(this.clock.now(), scope.signal);
    const rate = this.limits.rate;
    for (const observe of this.#observers) observe(attempt);
    this.#recordRate(attempt.atMs, rate);
    return attempt;
  }

  /**
   * Holds the attempt's worst case from the budget — what it can cost whatever the tokenizer, its
   * whole answer included — waiting for holds in flight to settle when they leave no room, or
   * refuses it, sending nothing, when what is spent leaves none.
   */
  async #hold(attempt: Attempt, signal: AbortSignal | undefined): Promise<void> {
    const worstNano = attempt.worstNanoUsd();
    const budget = this.#budget!;
    const hold = await budget.reserve(worstNano, { signal });
    if (hold === undefined) throw new BudgetExhaustedError(budget.maxUsd, budget.spentUsd, worstNano / NANO_USD, budget.heldUsd);
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

  /** Takes the cost from the limits, by the deadline, then calls the provider. */
  async #send(attempt: Attempt, cost: CallCost, maxOutputTokens: number, options: GateCallOptions, scope: CallScope): Promise<LlmResponse> {
    const { pending } = scope;
    const rank = options.rank ?? (options.deadline === undefined ? undefined : scope.deadlineMs - (options.keepBeforeDeadlineMs ?? 0));
    if (pending === undefined) {
      const maxWaitMs = Math.max(0, scope.deadlineMs - this.clock.now());
      const granted = this.limits.acquire(cost, { signal: scope.signal, maxWaitMs, rank });
      scope.onQueued?.();
      attempt.grant = await granted;
    } else {
      scope.onQueued?.();
      attempt.grant = await this.#acquireNear(cost, pending, scope.signal, rank);
      // Independent calls may wait together: the first granted starts the deadline for all.
      pending.start(this.clock.now());
      scope.deadlineMs = pending.atMs;
      scope.signal = pending.signal;
      scope.pending = undefined;
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
