import { sleep, systemClock, type Clock } from '../clock.ts';
import { checkDurationMs, checkFunction, checkInteger, checkNumber } from '../validation/checks.ts';
import { createBackoff, type Backoff } from './backoff.ts';
import { brandedGuard } from '../error-brand.ts';

/** How retries behave unless told otherwise. */
export const RETRY_DEFAULTS = Object.freeze({
  /** Total attempts, the first included. */
  maxAttempts: 3,
  /** A failure's retry-after is obeyed up to this many ms: a broken or hostile hint must not park the batch for an hour. */
  maxRetryAfterMs: 60_000,
});

/** What decides whether and when to go again; shared by {@link retry} and loops of their own (the call gate's). */
export interface RetryPolicyOptions {
  /** Total attempts, the first included; an integer >= 1. @default 3 */
  readonly maxAttempts?: number;
  /** Delay before each retry when the failure gave no hint. @default createBackoff() (full jitter, 100 ms base, 2000 ms cap) */
  readonly backoff?: Backoff;
  /** A retry-after hint is obeyed, but never beyond this many ms; >= 0. @default 60_000 */
  readonly maxRetryAfterMs?: number;
  /**
   * Whether a failure is worth another attempt.
   * @default (error) => error.retryable === true (the providers' 429s and 5xx, an open circuit)
   */
  readonly isRetryable?: (error: unknown) => boolean;
}

/** What `retry()` takes: the policy (attempts, backoff, deadline) and what to tell and what to stop on. */
export interface RetryOptions extends RetryPolicyOptions {
  /** Time source of the backoff sleeps and of `deadlineMs`. @default systemClock */
  readonly clock?: Clock;
  /** Aborts the backoff sleep and is handed to every attempt; retry() then rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * An instant on `clock`'s scale, in milliseconds. When the next backoff would end after it, retry()
   * gives up at once instead of sleeping towards a retry that could not finish in time.
   * @default Infinity (no deadline)
   */
  readonly deadlineMs?: number | undefined;
  /** Called just before each backoff sleep. `attempt` is the attempt that failed. */
  readonly onRetry?: (event: RetryEvent) => void;
}

/** Told before each wait of `retry()`: which attempt failed, how, and how long the loop waits before the next. */
export interface RetryEvent {
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** The attempt's failure. */
  readonly error: unknown;
  /** How long the loop waits before the next attempt, in ms. */
  readonly delayMs: number;
}

/** What each attempt receives besides its number; shaped like the provider's `CallOptions`. */
export interface AttemptOptions {
  /** Aborts when the retry loop gives up (its deadline passed, or the caller's signal aborted): the attempt should stop. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Why retrying stopped: the failure is not worth another attempt, the attempts ran out, or the next
 * attempt could not start before the deadline (a backoff, or whatever else it must wait for, would end past it).
 */
export type RetryStopReason = 'not-retryable' | 'exhausted' | 'deadline';

/** After a failed attempt: go again after `delayMs`, or stop with the error to reject with. */
export type RetryDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly error: RetryError };

/** retry() gave up. `cause` is the last attempt's error, so nothing of the failure is lost. */
export class RetryError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RetryError';
  /** How many attempts were made. */
  readonly attempts: number;
  /** The last attempt's failure. */
  readonly lastError: unknown;
  /** Why the loop stopped: the failure was not retryable, the attempts ran out, or the deadline would have passed. */
  readonly reason: RetryStopReason;

  constructor(attempts: number, lastError: unknown, reason: RetryStopReason) {
    super(retryErrorMessage(attempts, lastError, reason), { cause: lastError });
    this.attempts = attempts;
    this.lastError = lastError;
    this.reason = reason;
  }
}

// By brand: a call through a route built on another copy of the package still gives its last failure.
export const isRetryError = brandedGuard(RetryError, 'RetryError');

const isMarkedRetryable = (error: unknown): boolean =>
  error !== null && typeof error === 'object' && (error as { retryable?: unknown }).retryable === true;

/**
 * The decision after a failed attempt. The wait is the failure's own `retryAfterMs` when it carries
 * one — a 429's, a 503's, an open circuit's — capped at `maxRetryAfterMs`; it wins even when
 * shorter than the backoff, since the provider knows its own quota. Otherwise it is
 * `backoff(attempt, previousDelayMs)`. Options are checked once, here.
 */
export class RetryPolicy {
  /** The most attempts the policy allows, the first included. */
  readonly maxAttempts: number;
  readonly #maxRetryAfterMs: number;
  readonly #backoff: Backoff;
  readonly #isRetryable: (error: unknown) => boolean;

  constructor(options: RetryPolicyOptions = {}) {
    const { maxAttempts = RETRY_DEFAULTS.maxAttempts, maxRetryAfterMs = RETRY_DEFAULTS.maxRetryAfterMs } = options;
    checkInteger('maxAttempts', maxAttempts, 1);
    checkNumber('maxRetryAfterMs', maxRetryAfterMs, { min: 0, finite: false, unit: 'ms' });
    const { backoff = createBackoff(), isRetryable = isMarkedRetryable } = options;
    checkFunction('backoff', backoff);
    checkFunction('isRetryable', isRetryable);
    this.maxAttempts = maxAttempts;
    this.#maxRetryAfterMs = maxRetryAfterMs;
    this.#backoff = backoff;
    this.#isRetryable = isRetryable;
  }

  /**
   * After attempt number `attempt` failed with `error`: retry after how long, or give up (not
   * retryable, out of attempts, or — when the delay would end past `deadlineMs` — out of time).
   */
  next(error: unknown, attempt: number, previousDelayMs: number, nowMs: number, deadlineMs = Infinity): RetryDecision {
    if (!this.#isRetryable(error)) return { retry: false, error: new RetryError(attempt, error, 'not-retryable') };
    if (attempt >= this.maxAttempts) return { retry: false, error: new RetryError(attempt, error, 'exhausted') };
    const hintMs = retryAfterHint(error);
    const delayMs = hintMs === undefined ? this.#backoffMs(attempt, previousDelayMs) : Math.min(hintMs, this.#maxRetryAfterMs);
    if (nowMs + delayMs > deadlineMs) return { retry: false, error: new RetryError(attempt, error, 'deadline') };
    return { retry: true, delayMs };
  }

  #backoffMs(attempt: number, previousDelayMs: number): number {
    const delayMs = this.#backoff(attempt, previousDelayMs);
    // A custom backoff returning NaN would otherwise become a timer that fires at once, forever.
    checkDurationMs('the backoff delay', delayMs);
    return delayMs;
  }
}

/**
 * Calls `attemptFn(1)`, and on a retryable failure waits and calls it again with the next attempt
 * number, until it succeeds, the attempts run out, or the deadline would pass ({@link RetryPolicy}
 * decides). Resolves with the value and the number of attempts it took; otherwise rejects with a
 * {@link RetryError}, or with `signal.reason` when aborted.
 *
 * retry() knows nothing of rate limiters. A caller that must take a token per attempt — retries
 * included, as the call gate does — acquires it inside `attemptFn`, so the backoff and the limiter
 * wait add up rather than one hiding the other.
 */
export async function retry<T>(
  attemptFn: (attempt: number, options: AttemptOptions) => Promise<T>,
  options: RetryOptions = {},
): Promise<{ value: T; attempts: number }> {
  checkFunction('attemptFn', attemptFn);
  const policy = new RetryPolicy(options);
  const { deadlineMs, signal, onRetry, clock = systemClock } = options;
  if (deadlineMs !== undefined) checkNumber('deadlineMs', deadlineMs, { finite: false });
  const attemptOptions: AttemptOptions = { signal };

  let previousDelayMs = 0;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return { value: await attemptFn(attempt, attemptOptions), attempts: attempt };
    } catch (error) {
      // Whatever the attempt failed with, an abort is the reason we stop, and callers match on it.
      if (signal?.aborted) throw signal.reason;
      const decision = policy.next(error, attempt, previousDelayMs, clock.now(), deadlineMs);
      if (!decision.retry) throw decision.error;
      onRetry?.({ attempt, error, delayMs: decision.delayMs });
      await sleep(clock, decision.delayMs, signal);
      previousDelayMs = decision.delayMs;
    }
  }
}

/**
 * The failure's own retry-after in ms — a 429's, a 503's during an outage, an open circuit's — when
 * it carries a usable one (a provider may send garbage: NaN, negative, infinite are ignored).
 */
export function retryAfterHint(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const hintMs = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof hintMs === 'number' && Number.isFinite(hintMs) && hintMs >= 0 ? hintMs : undefined;
}

function retryErrorMessage(attempts: number, lastError: unknown, reason: RetryStopReason): string {
  const detail = lastError instanceof Error ? lastError.message : String(lastError);
  const tried = `${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`;
  switch (reason) {
    case 'exhausted':
      return `gave up after ${tried}: ${detail}`;
    case 'not-retryable':
      return `gave up after ${tried} (not retryable): ${detail}`;
    case 'deadline':
      return `gave up after ${tried} (the next attempt could not start before the deadline): ${detail}`;
  }
}
