import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { CircuitBreaker, isBrokenCircuitError, type BreakerPermit, type BrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { parseRateLimitHeaders, type RateLimitInfo } from '../provider/rate-limit-headers.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider, ResponseHeaders, TokenUsage } from '../provider/provider.ts';
import {
  AuthenticationError,
  BadRequestError,
  DEFAULT_MAX_OUTPUT_TOKENS,
  MalformedOutputError,
  NotAnApiError,
  NetworkError,
  QuotaExhaustedError,
  RateLimitError,
  RefusalError,
  ServerError,
  TimeoutError,
  TruncatedOutputError,
  isTimeoutError,
} from '../provider/provider.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { RetryError, RetryPolicy, retryAfterHint, type RetryDecision, type RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkNumber, checkObject, expected } from '../validation/checks.ts';
import { BudgetExhaustedError, isBudgetExhaustedError, NANO_USD, type Budget, type BudgetHold } from '../limits/budget.ts';
import { billedUsage, usageNanoUsd, worstCaseNanoUsd } from './call-cost.ts';
import { checkProviderSetup, type ProviderPrice, type ProviderSetup } from './provider-options.ts';
import { formatDuration } from '../validation/duration.ts';
import { AdaptiveRate } from '../limits/adaptive-rate.ts';
import { LocalLimits } from '../limits/local-limits.ts';
import { isLimitTooSmallError, type CallCost, type LimitGrant, type LimitSpec, type ProviderLimits } from '../limits/provider-limits.ts';

/** What a gate does unless told otherwise. */
export const GATE_DEFAULTS = Object.freeze({
  /** Output tokens reserved per call until its usage is known (with token limits). */
  maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  /** Lower the limits to what the provider's rate-limit headers say remains. */
  syncHeaders: false,
});

/** How one attempt ended. */
export type AttemptOutcome =
  | 'ok'
  /** The provider's failures, by their type (see the errors in `provider.ts`). */
  | 'rate-limited'
  | 'server-error'
  | 'timeout'
  | 'network-error'
  | 'rejected'
  | 'unauthorized'
  | 'quota-exhausted'
  | 'truncated'
  | 'refused'
  | 'malformed'
  /** A 2xx whose body is not the API's (a web page): see `NotAnApiError`. */
  | 'not-an-api'
  /** Ended before the call: no grant in time, an open circuit, a cost larger than the limits. */
  | 'limiter-timeout'
  | 'circuit-open'
  | 'too-large'
  /** The budget could not cover the call's worst case: nothing was sent. */
  | 'over-budget'
  | 'aborted'
  | 'error';

/** Emitted after every attempt through a gate: what the progress lines and the metrics are made of. */
export interface AttemptEvent {
  readonly provider: string;
  readonly task: LlmRequest['task'];
  readonly articleId: string;
  /** The pool slot that made the call, when the caller said. */
  readonly workerId: number | undefined;
  /** 1-based attempt number within this call. */
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  /** Time spent waiting for the limits, in ms. */
  readonly waitMs: number;
  /** Whether the limits granted the call and the provider was called (each such attempt spent its cost). */
  readonly called: boolean;
  /** Clock reading when the provider was called; undefined when it was not. */
  readonly sentAtMs: number | undefined;
  /** Time the provider took to answer (0 when it was not called), in ms. */
  readonly latencyMs: number;
  /** Clock reading when the attempt ended. */
  readonly atMs: number;
  /** Delay before the next attempt, when there will be one, in ms. */
  readonly retryInMs: number | undefined;
  /** What the attempt failed with; undefined when it succeeded. */
  readonly error: unknown;
  /** The tokens the provider reported for a successful call. */
  readonly usage: TokenUsage | undefined;
  /**
   * What the attempt cost at the provider's price, in USD: its reported usage (an answer, or one
   * cut off or malformed); 0 for one not sent or refused with a status. Undefined without a price.
   */
  readonly costUsd: number | undefined;
}

/** What a gate's figures are at a moment: for the run summary, so metrics need not look inside. */
export interface GateFigures {
  readonly provider: string;
  /** The limits as configured. */
  readonly limits: readonly LimitSpec[];
  /** The request rate in force now (the adaptive rate moves it), calls per second. */
  readonly rate: number;
  readonly countsTokens: boolean;
  /** Times the circuit breaker opened. */
  readonly breakerOpens: number;
  /** Times the adaptive rate cut the rate. */
  readonly rateCuts: number;
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
   * For a call whose deadline starts when the limits grant it (an article's first call on limits
   * other processes share: see `ProviderLimits.shared`). Until then it has no deadline (`signal`
   * still aborts it) and takes a grant only when one is at most `maxWaitMs` off: further off, it
   * takes nothing, sleeps until one would be that near and asks again — so an article not yet
   * begun never queues ahead of the later calls of articles under way. At the grant, `granted`
   * returns the deadline and its signal from then on, which replace `deadlineMs` and `signal`.
   * @default none (the deadline is `deadlineMs` from the start)
   */
  readonly startAtGrant?: StartAtGrant | undefined;
  /**
   * Among calls waiting for the limits, lower ranks go first (the pipeline: the article's start order).
   * @default none (unranked: served by arrival, behind ranked calls)
   */
  readonly rank?: number | undefined;
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

/** A call whose deadline starts at its grant: see `GateCallOptions.startAtGrant`. */
export interface StartAtGrant {
  /** The longest wait for a grant to take, asked at each try. */
  maxWaitMs(): number;
  /** Told the grant's instant; returns the deadline and its signal from then on. */
  granted(atMs: number): { readonly deadlineMs: number; readonly signal: AbortSignal | undefined };
}

/** The deadline and signal a call runs under; its first grant may set them (`startAtGrant`). */
interface CallScope {
  signal: AbortSignal | undefined;
  deadlineMs: number;
  startAtGrant: StartAtGrant | undefined;
}

/** Something that acts on how an attempt ended: settles the grant, tells the breaker, adapts the rate. */
type AttemptObserver = (attempt: Attempt) => void;

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

  constructor(options: CallGateOptions) {
    const { provider, maxConcurrent } = options;
    checkProviderSetup(options, provider.name);
    this.provider = provider;
    this.clock = options.clock ?? systemClock;
    const limits = Array.isArray(options.limits)
      ? new LocalLimits({ limits: options.limits as readonly LimitSpec[], clock: this.clock })
      : (options.limits as ProviderLimits);
    this.limits = limits;
    const logger = options.logger ?? silentLogger;
    if (options.breaker !== undefined) {
      const { giveUpAfterMs: _, ...breakerOptions } = options.breaker;
      this.breaker = new CircuitBreaker({ ...breakerOptions, clock: this.clock, name: provider.name, logger });
    }
    if (options.adaptive !== undefined) this.adaptive = new AdaptiveRate({ ...options.adaptive, limits, clock: this.clock });
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
    };
  }

  /**
   * Resolves with the response and the attempts it took; rejects with a `RetryError` (carrying the
   * last attempt's error) when the retry policy gives up, or with `signal.reason` when aborted.
   */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<{ response: LlmResponse; attempts: number }> {
    const { onAttempt, tally } = options;
    const scope: CallScope = { signal: options.signal, deadlineMs: options.deadlineMs ?? Infinity, startAtGrant: options.startAtGrant };
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
    const attempt = new Attempt(this.provider.name, request, number, options.workerId, this.clock.now(), this.#price);
    try {
      attempt.permit = this.breaker?.acquirePermit();
      if (this.#budget !== undefined) await this.#hold(attempt, maxOutputTokens);
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
    for (const observe of this.#observers) observe(attempt);
    return attempt;
  }

  /**
   * Holds the attempt's worst case from the budget — what it can cost whatever the tokenizer, its
   * whole answer included — or refuses it, sending nothing.
   */
  async #hold(attempt: Attempt, maxOutputTokens: number): Promise<void> {
    const worstNano = worstCaseNanoUsd(attempt.request, maxOutputTokens, this.#price!);
    const hold = await this.#budget!.reserve(worstNano);
    if (hold === undefined) throw new BudgetExhaustedError(this.#budget!.maxUsd, this.#budget!.spentUsd, worstNano / NANO_USD);
    attempt.hold = hold;
    attempt.worstNanoUsd = worstNano;
  }

  /** Takes the cost from the limits, by the deadline, then calls the provider. */
  async #send(attempt: Attempt, cost: CallCost, maxOutputTokens: number, options: GateCallOptions, scope: CallScope): Promise<LlmResponse> {
    const { rank } = options;
    const start = scope.startAtGrant;
    if (start === undefined) {
      const maxWaitMs = Math.max(0, scope.deadlineMs - this.clock.now());
      attempt.grant = await this.limits.acquire(cost, { signal: scope.signal, maxWaitMs, rank });
    } else {
      attempt.grant = await this.#acquireNear(cost, start, scope.signal, rank);
      ({ deadlineMs: scope.deadlineMs, signal: scope.signal } = start.granted(this.clock.now()));
      scope.startAtGrant = undefined;
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
   * A grant at most `start.maxWaitMs()` off: a refusal took nothing and said how far off the grant
   * was, so the call sleeps until it would be that near (at least a call's spacing at the current
   * rate, so that processes refused together do not all ask again at once) and asks again.
   */
  async #acquireNear(cost: CallCost, start: StartAtGrant, signal: AbortSignal | undefined, rank: number | undefined): Promise<LimitGrant> {
    for (;;) {
      const maxWaitMs = Math.max(0, start.maxWaitMs());
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
const NOTHING_USED = { inputTokens: 0, outputTokens: 0 };

/**
 * One attempt as it goes: filled in step by step, then handed to the observers and, as its
 * {@link AttemptEvent}, to the caller. The figures are plain fields, set once it has ended.
 */
class Attempt implements AttemptEvent {
  readonly provider: string;
  readonly request: LlmRequest;
  readonly task: LlmRequest['task'];
  readonly articleId: string;
  readonly workerId: number | undefined;
  readonly attempt: number;
  waitStartMs: number;
  permit: BreakerPermit | undefined;
  grant: LimitGrant | undefined;
  /** The budget's hold on the attempt's worst case, and that worst case (nano-USD). */
  hold: BudgetHold | undefined;
  worstNanoUsd = 0;
  readonly price: ProviderPrice | undefined;
  /** What the attempt cost by its reported usage, nano-USD (0 without a price). */
  costNanoUsd = 0;
  costUsd: number | undefined;
  sentAtMs: number | undefined;
  response: LlmResponse | undefined;
  error: unknown;
  outcome: AttemptOutcome = 'ok';
  called = false;
  waitMs = 0;
  latencyMs = 0;
  atMs = 0;
  usage: TokenUsage | undefined;
  retryInMs: number | undefined;

  constructor(
    provider: string,
    request: LlmRequest,
    attempt: number,
    workerId: number | undefined,
    startMs: number,
    price: ProviderPrice | undefined,
  ) {
    this.price = price;
    this.provider = provider;
    this.request = request;
    this.task = request.task;
    this.articleId = request.articleId;
    this.workerId = workerId;
    this.attempt = attempt;
    this.waitStartMs = startMs;
  }

  #rateLimitInfo: RateLimitInfo | undefined;

  /** The headers the provider answered with, on a response or on an error. */
  get headers(): ResponseHeaders | undefined {
    return this.response?.headers ?? (this.error as { headers?: ResponseHeaders } | undefined)?.headers;
  }

  /** What those headers say of the limits, read once for every observer that asks. */
  get rateLimitInfo(): RateLimitInfo | undefined {
    const headers = this.headers;
    if (headers === undefined) return undefined;
    this.#rateLimitInfo ??= parseRateLimitHeaders(headers);
    return this.#rateLimitInfo;
  }

  end(atMs: number, signal: AbortSignal | undefined): void {
    this.atMs = atMs;
    this.called = this.sentAtMs !== undefined;
    this.waitMs = (this.sentAtMs ?? atMs) - this.waitStartMs;
    this.latencyMs = this.sentAtMs === undefined ? 0 : atMs - this.sentAtMs;
    this.usage = this.response?.usage;
    if (this.response === undefined) this.outcome = classify(this.error, signal, this.called);
    if (this.price !== undefined) {
      const billed = this.called ? billedUsage(this.usage, this.error) : undefined;
      this.costNanoUsd = billed === undefined ? 0 : usageNanoUsd(billed, this.price);
      this.costUsd = this.costNanoUsd / NANO_USD;
    }
  }
}

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

/** The grant squares its token estimate with what the call used: all of it back when nothing was used. */
const settleGrant: AttemptObserver = (attempt) => {
  if (attempt.response === undefined) attempt.grant?.settle(NOTHING_USED);
  else if (attempt.usage !== undefined) attempt.grant?.settle(attempt.usage);
};

/**
 * The budget keeps what the attempt was billed: nothing for one not sent, its usage when the
 * provider said, and all of its worst case when nothing tells (a timeout, a broken connection):
 * it may have been billed in full, and the budget must never be overspent.
 */
const settleBudget: AttemptObserver = (attempt) => {
  const { hold } = attempt;
  if (hold === undefined) return;
  if (!attempt.called) return hold.settle(0);
  const billed = billedUsage(attempt.usage, attempt.error);
  hold.settle(billed === undefined ? attempt.worstNanoUsd : usageNanoUsd(billed, attempt.price!));
};

/** The outcomes that say the provider is unwell: what the breaker counts. */
const UNHEALTHY: ReadonlySet<AttemptOutcome> = new Set(['server-error', 'timeout', 'network-error', 'error']);

/**
 * Only the provider's own ill health counts against it: not a 429 (the limits' business), not a
 * request it refused or an answer it botched (it is up), not a wait that ran out or was aborted
 * before the call.
 */
const tellBreaker: AttemptObserver = (attempt) => {
  const { permit, outcome } = attempt;
  if (permit === undefined) return;
  if (outcome === 'ok') permit.success();
  else if (attempt.called && UNHEALTHY.has(outcome)) permit.failure();
  else permit.release();
};

/**
 * The adaptive rate hears of 429s and successes — and, when the provider states its request limit
 * in its headers, adopts that instead of searching for it.
 */
function adaptRate(adaptive: AdaptiveRate): AttemptObserver {
  return (attempt) => {
    const stated = statedRequestRate(attempt.rateLimitInfo);
    if (stated !== undefined) adaptive.onStatedLimit(stated);
    if (attempt.outcome === 'ok') adaptive.onSuccess();
    else if (attempt.outcome === 'rate-limited') {
      adaptive.onRateLimited({ retryAfterMs: retryAfterHint(attempt.error), sentAtMs: attempt.sentAtMs });
    }
  };
}

/**
 * Lowers each limit to what the provider says remains of it, and the request rate to the limit it
 * states (a bucket refilling faster than the provider's would only fill with 429s); never raises
 * either. With an adaptive rate, which runs first, the stated rate is the adaptive rate's already.
 */
function syncHeaders(limits: ProviderLimits, logger: Logger): AttemptObserver {
  return (attempt) => {
    for (const status of attempt.rateLimitInfo?.limits ?? []) {
      if (status.remaining === undefined) continue;
      limits.lowerTo(status.kind, status.remaining);
      logger.debug({ kind: status.kind, remaining: status.remaining }, 'limits synced to headers');
    }
    const stated = statedRequestRate(attempt.rateLimitInfo);
    if (stated !== undefined && stated < limits.rate) {
      limits.setRate(stated);
      logger.debug({ kind: 'requests', rate: stated }, 'rate synced to headers');
    }
  };
}

/** The request limit the headers state, in requests per second (their limit over their window); undefined when they state none. */
function statedRequestRate(info: RateLimitInfo | undefined): number | undefined {
  const stated = info?.limits.find((status) => status.kind === 'requests' && status.windowMs !== undefined);
  return stated === undefined || !(stated.limit! > 0) ? undefined : (stated.limit! * 1000) / stated.windowMs!;
}

function logFailure(logger: Logger): AttemptObserver {
  return (attempt) => {
    if (attempt.outcome === 'ok') return;
    const { articleId, task, attempt: number, outcome, error } = attempt;
    logger.debug({ articleId, task, attempt: number, outcome, err: error }, 'attempt failed');
  };
}

const PROVIDER_OUTCOMES: readonly (readonly [abstract new (...args: never[]) => Error, AttemptOutcome])[] = [
  [RateLimitError, 'rate-limited'],
  [ServerError, 'server-error'],
  [TimeoutError, 'timeout'],
  [NetworkError, 'network-error'],
  [BadRequestError, 'rejected'],
  [AuthenticationError, 'unauthorized'],
  [QuotaExhaustedError, 'quota-exhausted'],
  [TruncatedOutputError, 'truncated'],
  [RefusalError, 'refused'],
  [MalformedOutputError, 'malformed'],
  [NotAnApiError, 'not-an-api'],
];

function classify(error: unknown, signal: AbortSignal | undefined, called: boolean): AttemptOutcome {
  if (signal?.aborted && error === signal.reason) {
    // The article's deadline passing while the call waited for its token is the limiter's timeout.
    if (isTimeoutError(error)) return called ? 'timeout' : 'limiter-timeout';
    return 'aborted';
  }
  for (const [type, outcome] of PROVIDER_OUTCOMES) if (error instanceof type) return outcome;
  if (isMaxWaitExceededError(error)) return 'limiter-timeout';
  if (isBrokenCircuitError(error)) return 'circuit-open';
  if (isLimitTooSmallError(error)) return 'too-large';
  if (isBudgetExhaustedError(error)) return 'over-budget';
  return 'error';
}
