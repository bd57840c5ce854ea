import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import type { TokenBucket } from '../limiter/token-bucket.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider } from '../provider/provider.ts';
import { isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import type { Backoff } from '../retry/backoff.ts';
import { retry } from '../retry/retry.ts';
import { silentLogger } from './silent-logger.ts';

/** How one attempt ended. */
export type AttemptOutcome = 'ok' | 'rate-limited' | 'server-error' | 'timeout' | 'limiter-timeout' | 'aborted' | 'error';

/** Emitted after every attempt through a gate: what the progress lines and the metrics are made of. */
export interface AttemptEvent {
  readonly provider: string;
  readonly task: LlmRequest['task'];
  readonly articleId: string;
  /** 1-based attempt number within this call. */
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  /** Time spent waiting for the limiter's token, in ms. */
  readonly waitMs: number;
  /** Whether the token came and the provider was called (each such attempt spent one token). */
  readonly called: boolean;
  /** Time the provider took to answer (0 when it was not called), in ms. */
  readonly latencyMs: number;
  /** Clock reading when the attempt ended. */
  readonly atMs: number;
  /** Delay before the next attempt, when there will be one, in ms. */
  readonly retryInMs?: number;
  readonly error?: unknown;
}

export interface CallGateOptions {
  readonly provider: Provider;
  /** The provider's bucket, shared by every worker: one token before every attempt, retries included. */
  readonly limiter: TokenBucket;
  /** Total attempts per call, the first included. Default 3. */
  readonly maxAttempts?: number;
  /** Delay between attempts when the provider gave no retry-after. Default: full jitter, 100 ms base, 2 s cap. */
  readonly backoff?: Backoff;
  /** A provider's retry-after is obeyed up to this many ms. Default 60 000. */
  readonly maxRetryAfterMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

export interface GateCallOptions {
  /** Aborts the limiter wait, the call in flight and the backoff sleep. */
  readonly signal?: AbortSignal;
  /** Absolute clock time by which the call must be done: limiter waits that would end later fail at once. */
  readonly deadlineMs?: number;
  /** Told after every attempt. */
  readonly onAttempt?: (event: AttemptEvent) => void;
}

/**
 * The way to a provider: limiter → call → retry with backoff, for every attempt.
 *
 * A token is acquired before each attempt, so retries count against the rate like first tries do,
 * and a limiter wait that cannot end before the deadline fails at once instead of wasting the slot.
 */
export class CallGate {
  readonly provider: Provider;
  readonly limiter: TokenBucket;
  readonly #maxAttempts: number;
  readonly #backoff: Backoff | undefined;
  readonly #maxRetryAfterMs: number | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(options: CallGateOptions) {
    this.provider = options.provider;
    this.limiter = options.limiter;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#backoff = options.backoff;
    this.#maxRetryAfterMs = options.maxRetryAfterMs;
    this.#clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'call-gate', provider: options.provider.name });
  }

  /** Resolves with the response and the attempts it took; rejects with a `RetryError` or `signal.reason`. */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<{ response: LlmResponse; attempts: number }> {
    const { signal, deadlineMs = Infinity, onAttempt } = options;
    const clock = this.#clock;
    let pending: Pick<AttemptEvent, 'attempt' | 'outcome' | 'waitMs' | 'called' | 'latencyMs' | 'error'> | undefined;
    const report = (retryInMs: number | undefined) => {
      if (pending === undefined) return;
      const event: AttemptEvent = {
        provider: this.provider.name,
        task: request.task,
        articleId: request.articleId,
        ...pending,
        atMs: clock.now(),
        ...(retryInMs === undefined ? {} : { retryInMs }),
      };
      pending = undefined;
      onAttempt?.(event);
    };

    const attemptOnce = async (attempt: number): Promise<LlmResponse> => {
      const waitStartMs = clock.now();
      let calledAtMs = Number.NaN;
      try {
        await this.limiter.acquire(1, { signal, maxWaitMs: Math.max(0, deadlineMs - waitStartMs) });
        calledAtMs = clock.now();
        const response = await this.provider.call(request, signal === undefined ? {} : { signal });
        pending = { attempt, outcome: 'ok', waitMs: calledAtMs - waitStartMs, called: true, latencyMs: clock.now() - calledAtMs };
        return response;
      } catch (error) {
        const endMs = clock.now();
        const waited = Number.isNaN(calledAtMs);
        pending = {
          attempt,
          outcome: classify(error, signal),
          waitMs: (waited ? endMs : calledAtMs) - waitStartMs,
          called: !waited,
          latencyMs: waited ? 0 : endMs - calledAtMs,
          error,
        };
        this.#logger.debug({ articleId: request.articleId, task: request.task, attempt, err: error }, 'attempt failed');
        throw error;
      }
    };

    try {
      const { value, attempts } = await retry((attempt) => attemptOnce(attempt), {
        maxAttempts: this.#maxAttempts,
        clock,
        ...(signal === undefined ? {} : { signal }),
        ...(Number.isFinite(deadlineMs) ? { deadlineMs } : {}),
        ...(this.#backoff === undefined ? {} : { backoff: this.#backoff }),
        ...(this.#maxRetryAfterMs === undefined ? {} : { maxRetryAfterMs: this.#maxRetryAfterMs }),
        onRetry: ({ delayMs }) => report(delayMs),
      });
      report(undefined);
      return { response: value, attempts };
    } finally {
      report(undefined);
    }
  }
}

function classify(error: unknown, signal: AbortSignal | undefined): AttemptOutcome {
  if (signal?.aborted && error === signal.reason) return isTimeoutError(error) ? 'timeout' : 'aborted';
  if (isRateLimitError(error)) return 'rate-limited';
  if (isServerError(error)) return 'server-error';
  if (isTimeoutError(error)) return 'timeout';
  if (isMaxWaitExceededError(error)) return 'limiter-timeout';
  return 'error';
}
