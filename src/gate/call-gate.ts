import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { CircuitBreaker, type BrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider } from '../provider/provider.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, TimeoutError, isTimeoutError } from '../provider/provider.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { RetryError, RetryPolicy, type RetryDecision, type RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkNumber, checkObject, expected } from '../validation/checks.ts';
import { BudgetExhaustedError, NANO_USD, type Budget } from '../limits/budget.ts';
import { RateHistory, type RateSince } from '../limits/rate-history.ts';
import { checkProviderSetup, isProviderLimits, type ProviderPrice, type ProviderSetup } from './provider-options.ts';
import { formatDuration } from '../validation/duration.ts';
import { AdaptiveRate } from '../limits/adaptive-rate.ts';
import { LocalLimits } from '../limits/local-limits.ts';
import type { CallCost, LimitGrant, LimitSpec, ProviderLimits } from '../limits/provider-limits.ts';
import { Attempt, type AttemptEvent } from './attempt.ts';
import { adaptRate, logFailure, settleBudget, settleGrant, syncHeaders, tellBreaker, type AttemptObserver } from './attempt-observers.ts';
import type { CallDeadline } from './call-deadline.ts';

/** What a gate does unless told otherwise. */
export const GATE_DEFAULTS = Object.freeze({
  /** Output tokens reserved per call until its usage is known (with token limits). */
  maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  /** Lower the limits to what the provider's rate-limit headers say remains. */
  syncHeaders: false,
});

/** What a gate's figures are at a moment: for the run summary, so metrics need not look inside. */
export interface GateFigures {
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
  /** Attempts, backoff and retry-after cap. @default RETRY_DEFAULTS, full-jitter backoff */
  readonly retry?: RetryPolicyOptions | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

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
   * what it cost at the provider's price (whole nano-dollars).
   * @default none (nothing counted)
   */
  readonly tally?: { calls: number; latencyMs: number; costNanoUsd: number } | undefined;
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
 * that makes its own retries across gates (a pool): the caller decides what comes next, and tells
 * `onAttempt` and the tally itself. Never rejects. Not on the package's API: set by the class.
 */
export let attemptThrough: (
  gate: CallGate,
  request: LlmRequest,
  number: number,
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
  readonly provider: Provider;
  readonly limits: ProviderLimits;
  readonly clock: Clock;
  /** The circuit breaker the setup asked for, if any. */
  readonly breaker: CircuitBreaker | undefined;
  /** The adaptive rate the setup asked for, if any: its `onChange` tells each move of the rate. */
  readonly adaptive: AdaptiveRate | undefined;
  #reserved: CallCost = REQUEST_ONLY;
  #reservedSeen = 0;
  readonly #retry: RetryPolicy;
  readonly #maxOutputTokens: number;
  readonly #price: ProviderPrice | undefined;
  readonly #budget: Budget | undefined;
  readonly #callTimeoutMs: number;
  readonly #estimateInputTokens: (request: LlmRequest) => number | Promise<number>;
  readonly #inFlight: LimitFunction | undefined;
  readonly #observers: readonly AttemptObserver[];
  /** The request rate's moves, for the run's rate bound; none kept for shared limits. */
  readonly #rates: RateHistory | undefined;

  static {
    attemptThrough = (gate, request, number, options, scope) => gate.#attempt(request, number, options, scope);
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
    this.#maxOutputTokens = options.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
    checkInteger('maxOutputTokens', this.#maxOutputTokens, 1);
    this.#price = options.price;
    if (this.#price !== undefined) {
      checkObject('price', this.#price);
      checkNumber('price.inputPerMTok', this.#price.inputPerMTok, { min: 0, unit: 'USD per million tokens' });
      checkNumber('price.outputPerMTok', this.#price.outputPerMTok, { min: 0, unit: 'USD per million tokens' });
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
    this.#observers = [
      settleGrant,
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
   */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<{ response: LlmResponse; attempts: number }> {
    const { onAttempt, tally } = options;
    const scope = openScope(options, this.limits.shared === true);
    let previousDelayMs = 0;
    for (let number = 1; ; ) {
      const attempt = await this.#attempt(request, number, options, scope);
      // The first grant may have started the deadline: read both afresh after every attempt.
      const { signal, deadlineMs } = scope;
      // Taken before the caller hears of the attempt: an abort its listener makes (a run stopping
      // on this very failure) must not hide the failure as a cancellation.
      const aborted = signal?.aborted === true;
      // An open circuit sent nothing: the call waits for it as it waits for a token, within its
      // deadline, and the attempt is not spent — a short outage costs time, not the articles that
      // met it.
      const refused = attempt.outcome === 'circuit-open';
      const decision =
        attempt.outcome === 'ok' || aborted
          ? undefined
          : refused
            ? this.#circuitWait(attempt, number, deadlineMs)
            : this.#retry.next(attempt.error, number, previousDelayMs, attempt.atMs, deadlineMs);
      if (decision?.retry) attempt.retryInMs = decision.delayMs;
      if (attempt.called && tally !== undefined) {
        tally.calls++;
        tally.latencyMs += attempt.latencyMs;
        tally.costNanoUsd += attempt.costNanoUsd;
      }
      onAttempt?.(attempt);
      if (attempt.response !== undefined) return { response: attempt.response, attempts: number };
      if (aborted) throw signal!.reason;
      if (!decision!.retry) throw decision!.error;
      if (refused) {
        await this.#untilCircuitMoves(decision!.delayMs, signal);
        continue;
      }
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
  async #attempt(request: LlmRequest, number: number, options: GateCallOptions, scope: CallScope): Promise<Attempt> {
    const maxOutputTokens = options.maxOutputTokens ?? this.#maxOutputTokens;
    const attempt = new Attempt(this.provider.name, request, number, options.workerId, this.clock.now(), this.#price, maxOutputTokens);
    try {
      attempt.permit = this.breaker?.acquirePermit();
      if (this.#budget !== undefined) await this.#hold(attempt);
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
   * whole answer included — or refuses it, sending nothing.
   */
  async #hold(attempt: Attempt): Promise<void> {
    const worstNano = attempt.worstNanoUsd();
    const hold = await this.#budget!.reserve(worstNano);
    if (hold === undefined) throw new BudgetExhaustedError(this.#budget!.maxUsd, this.#budget!.spentUsd, worstNano / NANO_USD);
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
    return this.#callWithin(attempt.request, this.#callTimeoutMs, signal, maxOutputTokens);
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

  /**
   * Calls the provider with `timeoutMs` as its timeout, and enforces it too: a provider need not
   * (the simulated one's hangs last until the signal aborts). Running out of it rejects with a
   * retryable `TimeoutError`: the deadline is still ahead, so another attempt may be made.
   */
  async #callWithin(
    request: LlmRequest,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    maxOutputTokens: number,
  ): Promise<LlmResponse> {
    const timer = new AbortController();
    let timedOut!: (error: TimeoutError) => void;
    // A provider that does not heed its signal is left behind: the attempt ends on time regardless.
    const late = new Promise<never>((_, reject) => (timedOut = reject));
    const cancelTimer = this.clock.setTimer(timeoutMs, () => {
      const error = new TimeoutError(`no answer within ${formatDuration(timeoutMs)} (the call timeout)`, { timeoutMs, retryable: true });
      timer.abort(error);
      timedOut(error);
    });
    try {
      const callSignal = signal === undefined ? timer.signal : AbortSignal.any([signal, timer.signal]);
      const call = this.provider.call(request, { signal: callSignal, timeoutMs, maxOutputTokens });
      // Its outcome after the timeout is nobody's: it must not surface as an unhandled rejection.
      call.catch(() => {});
      return await Promise.race([call, late]);
    } catch (error) {
      // A provider's own timeout (an SDK's, set from timeoutMs, may fire before the timer) ended
      // the attempt, not the call: the deadline has not passed.
      if (isTimeoutError(error) && !error.retryable && signal?.aborted !== true) {
        throw new TimeoutError(error.message, { timeoutMs: error.timeoutMs, retryable: true, cause: error });
      }
      throw error;
    } finally {
      cancelTimer();
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
