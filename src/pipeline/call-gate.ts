import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import type { BreakerPermit, CircuitBreaker } from '../breaker/circuit-breaker.ts';
import { isBrokenCircuitError } from '../breaker/circuit-breaker.ts';
import type { AdaptiveRate } from '../limiter/adaptive-rate.ts';
import { ProviderLimits, isLimitTooSmallError, type CallCost, type LimitGrant } from '../limiter/provider-limits.ts';
import { isMaxWaitExceededError, type TokenBucket } from '../limiter/token-bucket.ts';
import type { LlmRequest, LlmResponse, Provider, ResponseHeaders, TokenUsage } from '../provider/provider.ts';
import { isProviderError, isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import { parseRateLimitHeaders } from '../provider/rate-limit-headers.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { createBackoff, type Backoff } from '../retry/backoff.ts';
import { retry, retryAfterHint, type RetryEvent } from '../retry/retry.ts';
import { silentLogger } from './silent-logger.ts';

/** How one attempt ended. */
export type AttemptOutcome =
  | 'ok'
  | 'rate-limited'
  | 'server-error'
  | 'timeout'
  | 'limiter-timeout'
  | 'circuit-open'
  | 'too-large'
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
  /** The tokens the provider reported for a successful call. */
  readonly usage: TokenUsage | undefined;
}

export interface CallGateOptions {
  readonly provider: Provider;
  /**
   * The provider's limits, shared by every worker: each attempt, retries included, takes one
   * request (and its estimated tokens) first.
   */
  readonly limits?: ProviderLimits;
  /** Shorthand for `limits` with a request limit alone: this bucket. */
  readonly limiter?: TokenBucket;
  /** Opens on consecutive server errors and timeouts; while open, attempts fail at once with no token spent. */
  readonly breaker?: CircuitBreaker;
  /** Cuts the request rate on 429s and probes back up. */
  readonly adaptive?: AdaptiveRate;
  /** Lower the buckets to what the provider's rate-limit headers say remains. Default false. */
  readonly syncHeaders?: boolean;
  /** Output tokens reserved per call before its usage is known (token limits only). Default 256. */
  readonly maxOutputTokens?: number;
  /** Input tokens of a request, for token limits. Default: the prompt counted with a real tokenizer. */
  readonly estimateInputTokens?: (request: LlmRequest) => number | Promise<number>;
  /** Total attempts per call, the first included. Default 3. */
  readonly maxAttempts?: number;
  /** Delay between attempts when the failure gave no retry-after. Default: full jitter, 100 ms base, 2 s cap. */
  readonly backoff?: Backoff;
  /** A retry-after is obeyed up to this many ms. Default 60 000. */
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

/** 429s, 5xx and an open circuit (which says when it will admit probes) are worth another attempt. */
const isRetryable = (error: unknown): boolean => (isProviderError(error) && error.retryable) || isBrokenCircuitError(error);

/**
 * The way to a provider, for every attempt: circuit breaker → limits → call → retry with backoff.
 *
 * - An open circuit fails the attempt at once, spending no token; the retry waits until it admits
 *   probes (that attempt counts towards `maxAttempts`).
 * - Each attempt, retries included, takes its request token (and estimated LLM tokens) first, so
 *   retries count against the rate like first tries; a wait that cannot end before the deadline
 *   fails at once instead of holding the worker.
 * - After the call: token estimates are settled against the reported usage, the breaker hears of
 *   server errors and timeouts (not of 429s — those are the limiter's business), the adaptive rate
 *   of 429s and successes, and with `syncHeaders` the buckets drop to what the provider says remains.
 */
export class CallGate {
  readonly provider: Provider;
  readonly limits: ProviderLimits;
  readonly breaker: CircuitBreaker | undefined;
  readonly adaptive: AdaptiveRate | undefined;
  readonly clock: Clock;
  readonly #syncHeaders: boolean;
  readonly #maxOutputTokens: number;
  readonly #estimateInputTokens: (request: LlmRequest) => number | Promise<number>;
  readonly #maxAttempts: number;
  readonly #backoff: Backoff;
  readonly #maxRetryAfterMs: number | undefined;
  readonly #logger: Logger;

  constructor(options: CallGateOptions) {
    this.provider = options.provider;
    this.clock = options.clock ?? systemClock;
    const limits = options.limits ?? (options.limiter === undefined ? undefined : ProviderLimits.of(options.limiter, this.clock));
    if (limits === undefined) throw new TypeError('Expected limits or limiter, got neither');
    this.limits = limits;
    this.breaker = options.breaker;
    this.adaptive = options.adaptive;
    this.#syncHeaders = options.syncHeaders ?? false;
    this.#maxOutputTokens = options.maxOutputTokens ?? 256;
    this.#estimateInputTokens = options.estimateInputTokens ?? estimateInputTokens;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#backoff = options.backoff ?? createBackoff('full');
    this.#maxRetryAfterMs = options.maxRetryAfterMs;
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
        isRetryable,
        onRetry: call.onRetry,
      });
      return { response: value, attempts };
    } finally {
      call.report(undefined);
    }
  }

  /** One attempt: breaker, then the limits (bounded by the deadline), then the provider. */
  async attempt(call: GateCall, attempt: number): Promise<LlmResponse> {
    const clock = this.clock;
    const { signal, deadlineMs, request } = call;
    call.report(undefined);
    let waitStartMs = clock.now();
    let calledAtMs = Number.NaN;
    let permit: BreakerPermit | undefined;
    let grant: LimitGrant | undefined;
    let response: LlmResponse;
    try {
      permit = this.breaker?.acquirePermit();
      let cost = REQUEST_ONLY;
      if (this.limits.countsTokens) {
        cost = await this.#cost(request);
        // Counting the prompt (and loading the tokenizer, the first time) is not waiting for the limiter.
        waitStartMs = clock.now();
      }
      grant = await this.limits.acquire(cost, { signal, maxWaitMs: Math.max(0, deadlineMs - waitStartMs) });
      calledAtMs = clock.now();
      response = await this.provider.call(request, call.providerOptions);
    } catch (error) {
      const endMs = clock.now();
      const called = !Number.isNaN(calledAtMs);
      const outcome = classify(error, signal, called);
      // The attempt is on record first: nothing below may lose it.
      call.settle(attempt, outcome, (called ? calledAtMs : endMs) - waitStartMs, called, called ? endMs - calledAtMs : 0, error, undefined);
      grant?.settle(NOTHING_USED);
      // Only the provider's own failures count against it: not a 429 (the limiter's business), not
      // a wait that ran out or was aborted before the call.
      if (called && (outcome === 'server-error' || outcome === 'timeout' || outcome === 'error')) permit?.failure();
      else permit?.release();
      if (outcome === 'rate-limited') this.adaptive?.onRateLimited({ retryAfterMs: retryAfterHint(error), sentAtMs: calledAtMs });
      if (this.#syncHeaders) this.#sync((error as { headers?: ResponseHeaders } | undefined)?.headers);
      this.#logger.debug({ articleId: request.articleId, task: request.task, attempt, outcome, err: error }, 'attempt failed');
      throw error;
    }
    const endMs = clock.now();
    call.settle(attempt, 'ok', calledAtMs - waitStartMs, true, endMs - calledAtMs, undefined, response.usage);
    if (response.usage !== undefined) grant.settle(response.usage);
    permit?.success();
    this.adaptive?.onSuccess();
    if (this.#syncHeaders) this.#sync(response.headers);
    return response;
  }

  async #cost(request: LlmRequest): Promise<CallCost> {
    return { requests: 1, inputTokens: await this.#estimateInputTokens(request), outputTokens: this.#maxOutputTokens };
  }

  /** Lowers each bucket to what the provider says remains of that limit; never raises one. */
  #sync(headers: ResponseHeaders | undefined): void {
    if (headers === undefined) return;
    for (const status of parseRateLimitHeaders(headers).limits) {
      const bucket = this.limits.bucket(status.kind);
      if (bucket === undefined || status.remaining === undefined) continue;
      const excess = bucket.tokens() - status.remaining;
      if (excess > 0) {
        bucket.adjust(-excess);
        this.#logger.debug({ kind: status.kind, remaining: status.remaining, lowered: excess }, 'bucket synced to headers');
      }
    }
  }
}

const REQUEST_ONLY: CallCost = { requests: 1, inputTokens: 0, outputTokens: 0 };
const NOTHING_USED = { inputTokens: 0, outputTokens: 0 };

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
  #usage: TokenUsage | undefined;

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

  settle(
    attempt: number,
    outcome: AttemptOutcome,
    waitMs: number,
    called: boolean,
    latencyMs: number,
    error: unknown,
    usage: TokenUsage | undefined,
  ): void {
    if (called && this.#tally !== undefined) this.#tally.calls++;
    this.#pending = true;
    this.#attempt = attempt;
    this.#outcome = outcome;
    this.#waitMs = waitMs;
    this.#called = called;
    this.#latencyMs = latencyMs;
    this.#error = error;
    this.#usage = usage;
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
      usage: this.#usage,
    });
  }
}

function reporter(call: GateCall): (event: RetryEvent) => void {
  return (event) => call.report(event.delayMs);
}

function classify(error: unknown, signal: AbortSignal | undefined, called: boolean): AttemptOutcome {
  if (signal?.aborted && error === signal.reason) {
    // The article's deadline passing while the call waited for its token is the limiter's timeout.
    if (isTimeoutError(error)) return called ? 'timeout' : 'limiter-timeout';
    return 'aborted';
  }
  if (isRateLimitError(error)) return 'rate-limited';
  if (isServerError(error)) return 'server-error';
  if (isTimeoutError(error)) return 'timeout';
  if (isMaxWaitExceededError(error)) return 'limiter-timeout';
  if (isBrokenCircuitError(error)) return 'circuit-open';
  if (isLimitTooSmallError(error)) return 'too-large';
  return 'error';
}
