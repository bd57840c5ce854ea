import { sleep, systemClock } from '../clock.ts';
import type { Clock } from '../clock.ts';
import { isProviderError } from '../provider/provider.ts';
import { createBackoff } from './backoff.ts';
import type { Backoff } from './backoff.ts';

export interface RetryOptions {
  /** Total attempts, the first included; an integer >= 1. Default 3. */
  maxAttempts?: number;
  /** Delay before each retry when the provider gave no hint. Default `createBackoff('full')`. */
  backoff?: Backoff;
  /**
   * A provider's retry-after hint is obeyed, but never beyond this many milliseconds: a broken or
   * hostile hint must not park the batch for an hour. Default 60_000; must be >= 0.
   */
  maxRetryAfterMs?: number;
  /**
   * Whether a failure is worth another attempt. Default: a `ProviderError` whose `retryable` is
   * true (429 and 5xx yes, timeout no).
   */
  isRetryable?: (error: unknown) => boolean;
  /** Default {@link systemClock}. */
  clock?: Clock;
  /** Aborts the backoff sleep and is handed to every attempt; retry() then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * An instant on `clock`'s scale, in milliseconds. When the next backoff would end after it, retry()
   * gives up at once instead of sleeping towards a retry that could not finish in time.
   */
  deadlineMs?: number;
  /** Called just before each backoff sleep. `attempt` is the attempt that failed. */
  onRetry?: (event: RetryEvent) => void;
}

export interface RetryEvent {
  readonly attempt: number;
  readonly error: unknown;
  readonly delayMs: number;
}

/** What each attempt receives besides its number; shaped like the provider's `CallOptions`. */
export interface AttemptOptions {
  readonly signal?: AbortSignal;
}

export type RetryStopReason = 'not-retryable' | 'exhausted' | 'deadline';

/** retry() gave up. `cause` is the last attempt's error, so nothing of the failure is lost. */
export class RetryError extends Error {
  override readonly name = 'RetryError';
  readonly attempts: number;
  readonly lastError: unknown;
  readonly reason: RetryStopReason;

  constructor(attempts: number, lastError: unknown, reason: RetryStopReason) {
    super(retryErrorMessage(attempts, lastError, reason), { cause: lastError });
    this.attempts = attempts;
    this.lastError = lastError;
    this.reason = reason;
  }
}

export const isRetryError = (error: unknown): error is RetryError => error instanceof RetryError;

const DEFAULT_MAX_ATTEMPTS = 3;
const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

const defaultIsRetryable = (error: unknown): boolean => isProviderError(error) && error.retryable;

/**
 * Calls `attemptFn(1)`, and on a retryable failure waits and calls it again with the next attempt
 * number, until it succeeds, the attempts run out, or the deadline would pass. Resolves with the
 * value and the number of attempts it took; otherwise rejects with a {@link RetryError}, or with
 * `signal.reason` when aborted.
 *
 * The wait is the failure's own `retryAfterMs` when it carries one — a 429's, a 503's, an open
 * circuit's — capped at `maxRetryAfterMs`; it wins even when shorter than the backoff, since the
 * provider knows its own quota. Otherwise it is `backoff(attempt, previousDelayMs)`.
 *
 * retry() knows nothing of rate limiters. A caller that must take a token per attempt — retries
 * included, as the call gate does — acquires it inside `attemptFn`, so the backoff and the limiter
 * wait add up rather than one hiding the other.
 */
export async function retry<T>(
  attemptFn: (attempt: number, options: AttemptOptions) => Promise<T>,
  options: RetryOptions = {},
): Promise<{ value: T; attempts: number }> {
  if (typeof attemptFn !== 'function') {
    throw new TypeError(`Expected attemptFn to be a function, got ${typeof attemptFn}`);
  }
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new TypeError(`Expected maxAttempts to be an integer >= 1, got ${String(maxAttempts)}`);
  }
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  if (!(typeof maxRetryAfterMs === 'number' && maxRetryAfterMs >= 0)) {
    throw new TypeError(`Expected maxRetryAfterMs to be a number >= 0, got ${String(maxRetryAfterMs)}`);
  }
  const { deadlineMs, signal, onRetry } = options;
  if (deadlineMs !== undefined && !(typeof deadlineMs === 'number' && !Number.isNaN(deadlineMs))) {
    throw new TypeError(`Expected deadlineMs to be a number, got ${String(deadlineMs)}`);
  }
  const backoff = options.backoff ?? createBackoff('full');
  const isRetryable = options.isRetryable ?? defaultIsRetryable;
  const clock = options.clock ?? systemClock;
  const attemptOptions: AttemptOptions = signal === undefined ? {} : { signal };

  let previousDelayMs = 0;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return { value: await attemptFn(attempt, attemptOptions), attempts: attempt };
    } catch (error) {
      // Whatever the attempt failed with, an abort is the reason we stop, and callers match on it.
      if (signal?.aborted) throw signal.reason;
      if (!isRetryable(error)) throw new RetryError(attempt, error, 'not-retryable');
      if (attempt >= maxAttempts) throw new RetryError(attempt, error, 'exhausted');

      const hintMs = retryAfterHint(error);
      const delayMs = hintMs === undefined ? checkedBackoff(backoff, attempt, previousDelayMs) : Math.min(hintMs, maxRetryAfterMs);
      if (deadlineMs !== undefined && clock.now() + delayMs > deadlineMs) {
        throw new RetryError(attempt, error, 'deadline');
      }
      onRetry?.({ attempt, error, delayMs });
      await sleep(clock, delayMs, signal);
      previousDelayMs = delayMs;
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

function checkedBackoff(backoff: Backoff, attempt: number, previousDelayMs: number): number {
  const delayMs = backoff(attempt, previousDelayMs);
  // A custom backoff returning NaN would otherwise become a timer that fires at once, forever.
  if (!(Number.isFinite(delayMs) && delayMs >= 0)) {
    throw new TypeError(`Expected backoff to return a finite number >= 0, got ${String(delayMs)}`);
  }
  return delayMs;
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
      return `gave up after ${tried} (the next backoff would end past the deadline): ${detail}`;
  }
}
