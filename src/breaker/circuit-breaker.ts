import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import { silentLogger } from '../silent-logger.ts';
import { formatDuration } from '../validation/duration.ts';
import { checkClock, checkDurationMs, checkFunction, checkInteger, checkNumber, checkObject, checkString } from '../validation/checks.ts';
import { brandedGuard } from '../error-brand.ts';

/**
 * Where a breaker stands. `closed` admits every call; `open` admits none until `reopensAtMs`;
 * `half-open` admits a few probe calls whose outcome decides between closing and opening again.
 */
export type BreakerState =
  | { readonly kind: 'closed'; readonly consecutiveFailures: number }
  | { readonly kind: 'open'; readonly openedAtMs: number; readonly reopensAtMs: number }
  | { readonly kind: 'half-open'; readonly probesInFlight: number; readonly probeSuccesses: number };

/** A breaker state's name: `closed`, `open` or `half-open`. */
export type BreakerStateKind = BreakerState['kind'];

/** Told to {@link CircuitBreaker.onStateChange} listeners on every transition. */
export interface BreakerStateChange {
  /** The state the breaker left. */
  readonly from: BreakerStateKind;
  /** The state the breaker entered. */
  readonly to: BreakerStateKind;
  /**
   * Clock instant at which the transition took effect. For open → half-open that is the end of the
   * cooldown, which may be earlier than the moment the breaker noticed it (see {@link CircuitBreaker}).
   */
  readonly atMs: number;
  /** The state just entered, as {@link CircuitBreaker.state} reported it at that moment. */
  readonly state: BreakerState;
}

/** The optional volume rule: open when too large a share of the recent calls failed. */
export interface FailureRatioOptions {
  /** Share of failed calls, in (0, 1], at or above which the circuit opens. */
  readonly ratio: number;
  /** Length of the sliding window, in ms: outcomes recorded in (now − windowMs, now] count. */
  readonly windowMs: number;
  /** The rule stays quiet until the window holds at least this many counted calls; an integer >= 1. */
  readonly minimumCalls: number;
}

/** What `new CircuitBreaker()` takes: when to open, how long to stay open, how many probes to let through, and what to tell. */
export interface CircuitBreakerOptions {
  /**
   * Consecutive failures, while closed, that open the circuit; an integer >= 1, or `Infinity` to
   * leave opening to `failureRatio` alone.
   * @default 10
   */
  readonly failureThreshold?: number;
  /** Also open on a failure ratio over a sliding window. @default undefined (no ratio rule) */
  readonly failureRatio?: FailureRatioOptions;
  /** How long the circuit stays open before admitting probes, in ms; finite, >= 0. @default 2000 */
  readonly cooldownMs?: number;
  /** Probe calls admitted at once while half-open; an integer >= 1. @default 1 */
  readonly halfOpenProbes?: number;
  /**
   * Probe successes needed to close; an integer >= 1. It may exceed `halfOpenProbes`: a settled
   * probe frees its slot for the next one.
   * @default halfOpenProbes
   */
  readonly probeSuccessesToClose?: number;
  /** Time source. Tests pass a `ManualClock`. @default systemClock */
  readonly clock?: Clock;
  /** Names the circuit (usually after its provider) in errors and logs. @default undefined (unnamed) */
  readonly name?: string;
  /** Transitions are logged at info, listener errors at error. @default silentLogger (says nothing) */
  readonly logger?: Logger;
}

/**
 * One admitted call's ticket. Settle it exactly once, when the call ends:
 * `success()`, `failure()`, or `release()` when the outcome says nothing about the provider's
 * health (the user aborted, the limiter gave up before calling, a 429 that the limiter handles).
 *
 * The first settle wins; later ones do nothing and return false. That makes `release()` safe as
 * a safety net in a `finally` after `success()` or `failure()`, and a second settle never throws
 * over the error a caller is busy propagating.
 */
export interface BreakerPermit {
  /** Admitted as a half-open probe: its outcome decides whether the circuit closes. */
  readonly probe: boolean;
  /** Counts a success. Returns false, doing nothing, if the permit was already settled. */
  success(): boolean;
  /** Counts a failure. Returns false, doing nothing, if the permit was already settled. */
  failure(): boolean;
  /** Counts nothing, only frees the probe slot if it held one. Returns false if already settled. */
  release(): boolean;
}

/** What `CircuitBreaker.execute()` takes besides the function: a signal to abort with. */
export interface ExecuteOptions {
  /**
   * Whether a rejection counts against the circuit; when false the permit is released, counting
   * nothing.
   * @default () => true (every rejection counts)
   */
  readonly isFailure?: (error: unknown) => boolean;
}

/** The circuit refused a call at once: it is open, or half-open with every probe slot taken. */
export class BrokenCircuitError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'BrokenCircuitError';
  /** Worth another attempt once the circuit admits probes (see {@link retryAfterMs}). */
  readonly retryable = true;
  /** The breaker's `name`, if it has one. */
  readonly circuit: string | undefined;
  /** The state that refused the call. */
  readonly state: 'open' | 'half-open';
  /**
   * Clock instant at which the circuit will admit probes; undefined when half-open, where that
   * depends on how the probes in flight end.
   */
  readonly reopensAtMs: number | undefined;
  /** Ms from the refusal to `reopensAtMs`; undefined when half-open. */
  readonly retryAfterMs: number | undefined;

  constructor(circuit: string | undefined, state: 'open' | 'half-open', reopensAtMs?: number, nowMs?: number) {
    const label = circuit === undefined ? 'circuit' : `circuit "${circuit}"`;
    const retryAfterMs = reopensAtMs === undefined || nowMs === undefined ? undefined : Math.max(0, reopensAtMs - nowMs);
    super(
      retryAfterMs === undefined
        ? `${label} is half-open and every probe slot is taken`
        : `${label} is open; probes admitted in ${formatDuration(retryAfterMs)}`,
    );
    this.circuit = circuit;
    this.state = state;
    this.reopensAtMs = reopensAtMs;
    this.retryAfterMs = retryAfterMs;
  }
}

// By brand: a call through a route built on another copy of the package still reads as circuit-open.
export const isBrokenCircuitError = brandedGuard(BrokenCircuitError, 'BrokenCircuitError');

type Outcome = 'success' | 'failure' | 'release';

/**
 * The breaker's defaults. 10 consecutive failures, not 5: with many workers, calls that hang time
 * out together, and a production-like 10 % failure rate trips 5 in a row (a 200-article run with
 * 20 workers lost 164 articles that way); a 2 s cooldown probes again while a short outage is
 * still worth waiting out.
 */
export const BREAKER_DEFAULTS = Object.freeze({ failureThreshold: 10, cooldownMs: 2000, halfOpenProbes: 1 });

/** The failure-ratio rule's window and volume when a config names only the ratio. */
export const FAILURE_RATIO_DEFAULTS = Object.freeze({ windowMs: 30_000, minimumCalls: 10 });
const countEveryRejection = () => true;

/**
 * A three-state circuit breaker: stops calling a provider that keeps failing, and finds out by a
 * few probe calls when it has recovered.
 *
 * - **closed**: every call is admitted. `failureThreshold` consecutive failures open the circuit
 *   (a success resets the count), and so does the optional `failureRatio` rule, evaluated after
 *   every counted outcome — a success that brings the window to `minimumCalls` too.
 * - **open**: every admission throws {@link BrokenCircuitError} at once, so a caller spends no
 *   rate-limiter token and no retry on it. After `cooldownMs` the circuit is half-open.
 * - **half-open**: up to `halfOpenProbes` probes run at once; `probeSuccessesToClose` successes
 *   close the circuit, and any probe failure opens it again with a fresh cooldown.
 *
 * Use {@link acquirePermit} when the call has steps the breaker must not see (the call gate's
 * limiter wait), {@link execute} otherwise. Which errors are failures is the caller's decision,
 * and the breaker stays agnostic; count what says the provider is unhealthy — 5xx, timeouts,
 * connection errors — and release the permit for 429s (the limiter's business: a provider that
 * throttles is up) and for the caller's own aborts.
 *
 * Only calls admitted in the current state count: a call admitted while closed that ends after
 * the circuit opened, or a probe that ends after another probe reopened it, is ignored, so
 * stragglers neither stretch a cooldown nor close a circuit on stale news.
 *
 * No timer is scheduled: the breaker is a function of `clock.now()`, and open turns half-open
 * lazily, the next time {@link state} or {@link acquirePermit} is read. The open → half-open event
 * fires then, with `atMs` set to the end of the cooldown. Safe to share by any number of
 * concurrent callers (one event loop, no locks needed).
 */
export class CircuitBreaker {
  /** The `name` option. */
  readonly name: string | undefined;
  readonly #failureThreshold: number;
  readonly #ratio: FailureRatioOptions | undefined;
  readonly #cooldownMs: number;
  readonly #halfOpenProbes: number;
  readonly #probeSuccessesToClose: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #window = new OutcomeWindow();
  readonly #listeners = new Set<{ readonly listener: (change: BreakerStateChange) => void }>();
  #kind: BreakerStateKind = 'closed';
  #consecutiveFailures = 0;
  #openedAtMs = Number.NaN;
  #reopensAtMs = Number.NaN;
  #probesInFlight = 0;
  #probeSuccesses = 0;
  /** Bumped on every transition; a permit counts only if issued in the current epoch. */
  #epoch = 0;
  #opens = 0;

  constructor(options: CircuitBreakerOptions = {}) {
    checkObject('options', options);
    const {
      failureThreshold = BREAKER_DEFAULTS.failureThreshold,
      failureRatio,
      cooldownMs = BREAKER_DEFAULTS.cooldownMs,
      halfOpenProbes = BREAKER_DEFAULTS.halfOpenProbes,
      clock = systemClock,
      name,
      logger = silentLogger,
    } = options;
    checkInteger('failureThreshold', failureThreshold, 1, Infinity);
    if (failureRatio !== undefined) checkRatio(failureRatio);
    checkDurationMs('cooldownMs', cooldownMs);
    checkInteger('halfOpenProbes', halfOpenProbes, 1);
    const probeSuccessesToClose = options.probeSuccessesToClose ?? halfOpenProbes;
    checkInteger('probeSuccessesToClose', probeSuccessesToClose, 1);
    checkClock('clock', clock);
    if (name !== undefined) checkString('name', name, { allowEmpty: true });
    this.name = name;
    this.#failureThreshold = failureThreshold;
    this.#ratio = failureRatio === undefined ? undefined : { ...failureRatio };
    this.#cooldownMs = cooldownMs;
    this.#halfOpenProbes = halfOpenProbes;
    this.#probeSuccessesToClose = probeSuccessesToClose;
    this.#clock = clock;
    this.#logger = logger.child({ component: 'circuit-breaker', circuit: name });
  }

  /** The current state; reading it turns an open circuit whose cooldown has passed half-open. */
  get state(): BreakerState {
    this.#refresh();
    return this.#snapshot();
  }

  /** How many times the circuit has opened, reopenings from half-open included. */
  get opens(): number {
    return this.#opens;
  }

  /**
   * Admits one call and returns its permit, or throws {@link BrokenCircuitError} at once: when
   * open, or half-open with all `halfOpenProbes` slots taken. Never waits.
   */
  acquirePermit(): BreakerPermit {
    this.#refresh();
    switch (this.#kind) {
      case 'closed':
        return this.#issue(false);
      case 'open':
        throw new BrokenCircuitError(this.name, 'open', this.#reopensAtMs, this.#clock.now());
      case 'half-open':
        if (this.#probesInFlight >= this.#halfOpenProbes) throw new BrokenCircuitError(this.name, 'half-open');
        this.#probesInFlight++;
        return this.#issue(true);
    }
  }

  /**
   * Runs `fn` under a permit: resolves with its value (a success), or rejects with its error,
   * counted as a failure when `isFailure` says so and released otherwise. Rejects with
   * {@link BrokenCircuitError}, without calling `fn`, when the circuit refuses the call.
   */
  async execute<T>(fn: () => T | PromiseLike<T>, options: ExecuteOptions = {}): Promise<T> {
    checkFunction('fn', fn);
    const { isFailure = countEveryRejection } = options;
    checkFunction('isFailure', isFailure);
    const permit = this.acquirePermit();
    try {
      const value = await fn();
      permit.success();
      return value;
    } catch (error) {
      if (isFailure(error)) permit.failure();
      throw error;
    } finally {
      // Reached unsettled only when isFailure said no, or threw: either way the call must not count.
      permit.release();
    }
  }

  /**
   * Calls `listener` synchronously on every transition, after the breaker has entered the new
   * state. A listener that throws is logged and skipped: the breaker and the other listeners go
   * on. Returns a function that unsubscribes (idempotent).
   */
  onStateChange(listener: (change: BreakerStateChange) => void): () => void {
    checkFunction('listener', listener);
    const entry = { listener };
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  #issue(probe: boolean): BreakerPermit {
    const epoch = this.#epoch;
    let settled = false;
    const settle = (outcome: Outcome): boolean => {
      if (settled) return false;
      settled = true;
      if (epoch === this.#epoch) this.#record(probe, outcome);
      return true;
    };
    return Object.freeze({
      probe,
      success: () => settle('success'),
      failure: () => settle('failure'),
      release: () => settle('release'),
    });
  }

  /** Counts the outcome of a permit issued in the current state (closed, or half-open for probes). */
  #record(probe: boolean, outcome: Outcome): void {
    const nowMs = this.#clock.now();
    if (probe) {
      this.#probesInFlight--;
      if (outcome === 'failure') this.#open(nowMs);
      else if (outcome === 'success' && ++this.#probeSuccesses >= this.#probeSuccessesToClose) this.#close(nowMs);
      return;
    }
    if (outcome === 'release') return;
    const failed = outcome === 'failure';
    this.#consecutiveFailures = failed ? this.#consecutiveFailures + 1 : 0;
    if (this.#ratio !== undefined) this.#window.record(nowMs, failed);
    if (this.#consecutiveFailures >= this.#failureThreshold || this.#ratioTripped(nowMs)) this.#open(nowMs);
  }

  #ratioTripped(nowMs: number): boolean {
    const ratio = this.#ratio;
    if (ratio === undefined) return false;
    this.#window.expire(nowMs - ratio.windowMs);
    const calls = this.#window.calls;
    return calls >= ratio.minimumCalls && this.#window.failures / calls >= ratio.ratio;
  }

  #refresh(): void {
    if (this.#kind === 'open' && this.#clock.now() >= this.#reopensAtMs) {
      this.#probesInFlight = 0;
      this.#probeSuccesses = 0;
      this.#enter('half-open', this.#reopensAtMs);
    }
  }

  #open(nowMs: number): void {
    this.#openedAtMs = nowMs;
    this.#reopensAtMs = nowMs + this.#cooldownMs;
    this.#window.clear();
    this.#opens++;
    this.#enter('open', nowMs);
  }

  #close(nowMs: number): void {
    this.#consecutiveFailures = 0;
    this.#enter('closed', nowMs);
  }

  #enter(to: BreakerStateKind, atMs: number): void {
    const from = this.#kind;
    this.#kind = to;
    this.#epoch++;
    const change: BreakerStateChange = { from, to, atMs, state: this.#snapshot() };
    this.#logger.info(change, 'circuit state changed');
    for (const entry of [...this.#listeners]) {
      if (!this.#listeners.has(entry)) continue;
      try {
        entry.listener(change);
      } catch (error) {
        this.#logger.error({ err: error, from, to }, 'circuit state listener threw');
      }
    }
  }

  #snapshot(): BreakerState {
    switch (this.#kind) {
      case 'closed':
        return { kind: 'closed', consecutiveFailures: this.#consecutiveFailures };
      case 'open':
        return { kind: 'open', openedAtMs: this.#openedAtMs, reopensAtMs: this.#reopensAtMs };
      case 'half-open':
        return { kind: 'half-open', probesInFlight: this.#probesInFlight, probeSuccesses: this.#probeSuccesses };
    }
  }
}

/**
 * Counted outcomes in time order, for the ratio rule. One entry per call: memory is bounded by
 * the calls a window can hold, which the rate limiter in front of the breaker already bounds.
 */
class OutcomeWindow {
  #atMs: number[] = [];
  #failed: boolean[] = [];
  #head = 0;
  #failures = 0;

  get calls(): number {
    return this.#atMs.length - this.#head;
  }

  get failures(): number {
    return this.#failures;
  }

  record(atMs: number, failed: boolean): void {
    this.#atMs.push(atMs);
    this.#failed.push(failed);
    if (failed) this.#failures++;
  }

  /** Drops outcomes recorded at or before `cutoffMs`. */
  expire(cutoffMs: number): void {
    while (this.#head < this.#atMs.length && this.#atMs[this.#head]! <= cutoffMs) {
      if (this.#failed[this.#head]) this.#failures--;
      this.#head++;
    }
    // Compact once the dead prefix outweighs the live part, keeping expire() amortised O(1).
    if (this.#head > 64 && this.#head * 2 > this.#atMs.length) {
      this.#atMs = this.#atMs.slice(this.#head);
      this.#failed = this.#failed.slice(this.#head);
      this.#head = 0;
    }
  }

  clear(): void {
    this.#atMs = [];
    this.#failed = [];
    this.#head = 0;
    this.#failures = 0;
  }
}

function checkRatio(failureRatio: FailureRatioOptions): void {
  checkObject('failureRatio', failureRatio);
  const { ratio, windowMs, minimumCalls } = failureRatio;
  checkNumber('failureRatio.ratio', ratio, { min: 0, minExclusive: true, max: 1 });
  checkDurationMs('failureRatio.windowMs', windowMs, { positive: true });
  checkInteger('failureRatio.minimumCalls', minimumCalls, 1);
}
