import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import type { TokenBucket } from '../limiter/token-bucket.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider } from '../provider/provider.ts';
import { isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import { createBackoff, type Backoff } from '../retry/backoff.ts';
import { retry, type RetryEvent } from '../retry/retry.ts';
import { silentLogger } from './silent-logger.ts';

/** How one attempt ended. */
export type AttemptOutcome = 'ok' | 'rate-limited' | 'server-error' | 'timeout' | 'limiter-timeout' | 'aborted' | 'error';

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
  /** Time spent waiting for the limiter's token, in ms. */
  readonly waitMs: number;
  /** Whether the token came and the provider was called (each such attempt spent one token). */
  readonly called: boolean;
  /** Time the provider took to answer (0 when it was not called), in ms. */
  readonly latencyMs: number;
  /** Clock reading when the attempt ended. */
  readonly atMs: number;
  /** Delay before the next attempt, when there will be one, in ms. */
  readonly retryInMs: number | undefined;
  /** What the attempt failed with; undefined when it succeeded. */
  readonly error: unknown;
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
  /** Passed through to the attempt events: the pool slot making the call. */
  readonly workerId?: number;
  /** `calls` goes up by one for each attempt that reached the provider (and so spent a token). */
  readonly tally?: { calls: number };
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
  readonly #backoff: Backoff;
  readonly #maxRetryAfterMs: number | undefined;
  readonly clock: Clock;
  readonly #logger: Logger;

  constructor(options: CallGateOptions) {
    this.provider = options.provider;
    this.limiter = options.limiter;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#backoff = options.backoff ?? createBackoff('full');
    this.#maxRetryAfterMs = options.maxRetryAfterMs;
    this.clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'call-gate', provider: options.provider.name });
  }

  /** Resolves with the response and the attempts it took; rejects with a `RetryError` or `signal.reason`. */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<{ response: LlmResponse; attempts: number }> {
    const call = new GateCall(this, request, options);
    try {
      // Inline and anonymous on purpose: named closures cost a defineProperty each under tsx.
      const { value, attempts } = await retry((attempt) => this.attempt(call, attempt), {
        maxAttempts: this.#maxAttempts,
        clock: this.clock,
        signal: options.signal,
        deadlineMs: options.deadlineMs,
        backoff: this.#backoff,
        maxRetryAfterMs: this.#maxRetryAfterMs,
        onRetry: call.onRetry,
      });
      return { response: value, attempts };
    } finally {
      call.report(undefined);
    }
  }

  /** One attempt: wait for the token (bounded by the deadline), then call the provider. */
  async attempt(call: GateCall, attempt: number): Promise<LlmResponse> {
    const clock = this.clock;
    const { signal, deadlineMs } = call;
    call.report(undefined);
    const waitStartMs = clock.now();
    let calledAtMs = Number.NaN;
    try {
      await this.limiter.acquire(1, { signal, maxWaitMs: Math.max(0, deadlineMs - waitStartMs) });
      calledAtMs = clock.now();
      const response = await this.provider.call(call.request, call.providerOptions);
      call.settle(attempt, 'ok', calledAtMs - waitStartMs, true, clock.now() - calledAtMs, undefined);
      return response;
    } catch (error) {
      const endMs = clock.now();
      const called = !Number.isNaN(calledAtMs);
      call.settle(attempt, classify(error, signal), (called ? calledAtMs : endMs) - waitStartMs, called, called ? endMs - calledAtMs : 0, error);
      this.#logger.debug({ articleId: call.request.articleId, task: call.request.task, attempt, err: error }, 'attempt failed');
      throw error;
    }
  }
}

/**
 * The state of one `CallGate.call()`: the last attempt's figures, reported once the retry loop
 * knows whether (and when) another attempt follows.
 */
class GateCall {
  readonly request: LlmRequest;
  readonly signal: AbortSignal | undefined;
  readonly deadlineMs: number;
  readonly providerOptions: { signal?: AbortSignal };
  readonly #gate: CallGate;
  readonly #onAttempt: ((event: AttemptEvent) => void) | undefined;
  readonly #workerId: number | undefined;
  readonly #tally: { calls: number } | undefined;
  #pending = false;
  #attempt = 0;
  #outcome: AttemptOutcome = 'ok';
  #waitMs = 0;
  #called = false;
  #latencyMs = 0;
  #error: unknown;

  constructor(gate: CallGate, request: LlmRequest, options: GateCallOptions) {
    this.#gate = gate;
    this.request = request;
    this.signal = options.signal;
    this.deadlineMs = options.deadlineMs ?? Infinity;
    this.providerOptions = options.signal === undefined ? {} : { signal: options.signal };
    this.#onAttempt = options.onAttempt;
    this.#workerId = options.workerId;
    this.#tally = options.tally;
  }

  readonly onRetry: (event: RetryEvent) => void = reporter(this);

  settle(attempt: number, outcome: AttemptOutcome, waitMs: number, called: boolean, latencyMs: number, error: unknown): void {
    if (called && this.#tally !== undefined) this.#tally.calls++;
    this.#pending = true;
    this.#attempt = attempt;
    this.#outcome = outcome;
    this.#waitMs = waitMs;
    this.#called = called;
    this.#latencyMs = latencyMs;
    this.#error = error;
  }

  report(retryInMs: number | undefined): void {
    if (!this.#pending) return;
    this.#pending = false;
    this.#onAttempt?.({
      provider: this.#gate.provider.name,
      task: this.request.task,
      articleId: this.request.articleId,
      workerId: this.#workerId,
      attempt: this.#attempt,
      outcome: this.#outcome,
      waitMs: this.#waitMs,
      called: this.#called,
      latencyMs: this.#latencyMs,
      atMs: this.#gate.clock.now(),
      retryInMs,
      error: this.#error,
    });
  }
}

function reporter(call: GateCall): (event: RetryEvent) => void {
  return (event) => call.report(event.delayMs);
}

function classify(error: unknown, signal: AbortSignal | undefined): AttemptOutcome {
  if (signal?.aborted && error === signal.reason) return isTimeoutError(error) ? 'timeout' : 'aborted';
  if (isRateLimitError(error)) return 'rate-limited';
  if (isServerError(error)) return 'server-error';
  if (isTimeoutError(error)) return 'timeout';
  if (isMaxWaitExceededError(error)) return 'limiter-timeout';
  return 'error';
}
