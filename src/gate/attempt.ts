import type { BreakerPermit } from '../breaker/circuit-breaker.ts';
import { isBrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { isLimitTooSmallError, type LimitGrant } from '../quota/provider-limits.ts';
import { isBudgetExhaustedError, NANO_USD, type BudgetHold } from '../quota/budget.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import {
  isAuthenticationError,
  isBadRequestError,
  isMalformedOutputError,
  isNetworkError,
  isNotAnApiError,
  isQuotaExhaustedError,
  isRateLimitError,
  isRefusalError,
  isServerError,
  isTimeoutError,
  isTruncatedOutputError,
  type LlmRequest,
  type LlmResponse,
  type Provider,
  type RequestFraming,
  type ResponseHeaders,
  type TokenUsage,
} from '../provider/provider.ts';
import type { RateLimitSignals } from '../provider/rate-limit-signals.ts';
import { billedUsage, usageNanoUsd, worstCaseNanoUsd } from './call-cost.ts';
import type { ProviderPrice } from './provider-options.ts';

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
  /** The provider the call went to. */
  readonly provider: string;
  /** The task the call was for. */
  readonly task: LlmRequest['task'];
  /** The article the call was for. */
  readonly articleId: string;
  /** The pool slot that made the call, when the caller said. */
  readonly workerId: number | undefined;
  /** 1-based attempt number within this call (a repair does not count: it is the attempt it mends, asked again). */
  readonly attempt: number;
  /**
   * 0 for a request asked as the task made it; n for its nth repair — asked again with an unfit
   * answer and that answer's problems.
   */
  readonly repair: number;
  /** How the attempt ended: ok, rate-limited, a server error, a timeout, … */
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
  /** The provider's answer, when it answered (its model, id and finish reasons, for tracing). */
  readonly response: LlmResponse | undefined;
  /**
   * What the attempt cost at the provider's price, in USD: its reported usage (an answer, or one
   * cut off or malformed); 0 for one not sent, refused with a status, or whose connection failed
   * before the request was written (refused, DNS, TLS); its worst case (its prompt as input tokens,
   * its whole answer) for an answer that states no usage. 0 too for one whose fate is unknown: see
   * `unknownCostUsd`. Undefined without a price.
   */
  readonly costUsd: number | undefined;
  /**
   * The most an attempt whose fate is unknown may have cost, in USD: one sent that ended with no
   * answer and nothing telling whether the provider took it — a timeout, a connection broken
   * mid-request, a call cancelled in flight. It may have been billed in full: the budget keeps its
   * worst case, but it is not counted as spent. 0 for any other attempt; undefined without a price.
   */
  readonly unknownCostUsd?: number | undefined;
  /**
   * The provider refused what no retry mends (the key, an empty account) and was dropped from its
   * pool, which sends its calls elsewhere: this failure stops nothing. @default false
   */
  readonly dropped?: boolean | undefined;
}

/**
 * An attempt through a gate as the call loop has it back: ended, its observers told. The loop
 * judges the answer, decides what comes next and says so on it before it tells the caller.
 */
export interface GateAttempt extends AttemptEvent {
  /** The request as sent: the task's, or a repair of it. */
  readonly request: LlmRequest;
  /** What it cost at the provider's price, in whole nano-dollars (0 without a price): `costUsd`, exactly. */
  readonly costNanoUsd: number;
  /** What it may have cost, its fate unknown, in whole nano-dollars (0 without a price): `unknownCostUsd`, exactly. */
  readonly unknownNanoUsd: number;
  /** Delay before the call's next attempt, when there will be one, in ms. */
  retryInMs: number | undefined;
  /** The gate was dropped from its route for this failure (see {@link AttemptEvent.dropped}). */
  dropped: boolean;
  /** The answer did not fit its schema: the attempt ends `malformed`, failed with `error` (what a repair shows back). */
  unfit(error: unknown): void;
}

/**
 * One attempt as it goes: filled in step by step, then handed to the observers and, as its
 * {@link AttemptEvent}, to the caller. The figures are plain fields, set once it has ended.
 */
export class Attempt implements GateAttempt {
  readonly provider: string;
  readonly request: LlmRequest;
  readonly task: LlmRequest['task'];
  readonly articleId: string;
  readonly workerId: number | undefined;
  readonly attempt: number;
  repair = 0;
  waitStartMs: number;
  permit: BreakerPermit | undefined;
  grant: LimitGrant | undefined;
  /** The budget's hold on the attempt's worst case. */
  hold: BudgetHold | undefined;
  readonly price: ProviderPrice | undefined;
  readonly maxOutputTokens: number;
  /** The provider's framing of a request: what its worst case counts beyond the text. */
  readonly #framing: RequestFraming | undefined;
  /**
   * What the attempt cost, nano-USD (0 without a price): its reported usage, or its worst case
   * for an answer that told none — what the budget keeps as spent.
   */
  costNanoUsd = 0;
  costUsd: number | undefined;
  /** Its worst case, nano-USD, when it was sent and its fate is unknown (it may have been billed in full): what the budget keeps, apart. */
  unknownNanoUsd = 0;
  unknownCostUsd: number | undefined;
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
  dropped = false;
  /** Whether it has lined up at the limits (their queue counts it from then): the gate's count of arrivals. */
  queued = false;

  constructor(
    provider: string,
    request: LlmRequest,
    attempt: number,
    workerId: number | undefined,
    startMs: number,
    price: ProviderPrice | undefined,
    maxOutputTokens: number,
    /** The provider the attempt calls: its framing, and how it reads its headers (`rateLimits`). */
    target: Pick<Provider, 'framing' | 'rateLimits'>,
  ) {
    this.#limitsOf = target;
    this.price = price;
    this.#framing = target.framing;
    this.maxOutputTokens = maxOutputTokens;
    this.provider = provider;
    this.request = request;
    this.task = request.task;
    this.articleId = request.articleId;
    this.workerId = workerId;
    this.attempt = attempt;
    this.waitStartMs = startMs;
  }

  #rateLimitInfo: RateLimitSignals | undefined;
  /** The provider, which reads its headers in its own dialect (`rateLimits`); none states no limits. */
  readonly #limitsOf: Pick<Provider, 'rateLimits'>;

  /** The headers the provider answered with, on a response or on an error. */
  get headers(): ResponseHeaders | undefined {
    return this.response?.headers ?? (this.error as { headers?: ResponseHeaders } | undefined)?.headers;
  }

  /** What those headers say of the limits, as the provider reads them, once for every observer that asks. */
  get rateLimitInfo(): RateLimitSignals | undefined {
    const headers = this.headers;
    if (headers === undefined || this.#limitsOf.rateLimits === undefined) return undefined;
    this.#rateLimitInfo ??= this.#limitsOf.rateLimits(headers);
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
      if (billed !== undefined) this.costNanoUsd = usageNanoUsd(billed, this.price);
      // Answered without a usage: billed, at most this. Unanswered with nothing telling: perhaps billed, perhaps not.
      else if (this.called && this.response !== undefined) this.costNanoUsd = this.worstNanoUsd();
      else if (this.called) this.unknownNanoUsd = this.worstNanoUsd();
      this.costUsd = this.costNanoUsd / NANO_USD;
      this.unknownCostUsd = this.unknownNanoUsd / NANO_USD;
    }
  }

  unfit(error: unknown): void {
    // Its usage stays on the error, as a vendor's unfit answer carries it: what it cost is unchanged.
    this.response = undefined;
    this.usage = undefined;
    this.error = error;
    this.outcome = 'malformed';
  }

  /** The most the attempt can cost at its price, its whole answer included, in nano-USD. */
  worstNanoUsd(): number {
    return worstCaseNanoUsd(this.request, this.maxOutputTokens, this.price!, this.#framing);
  }
}

const PROVIDER_OUTCOMES: readonly (readonly [(error: unknown) => boolean, AttemptOutcome])[] = [
  [isRateLimitError, 'rate-limited'],
  [isServerError, 'server-error'],
  [isTimeoutError, 'timeout'],
  [isNetworkError, 'network-error'],
  [isBadRequestError, 'rejected'],
  [isAuthenticationError, 'unauthorized'],
  [isQuotaExhaustedError, 'quota-exhausted'],
  [isTruncatedOutputError, 'truncated'],
  [isRefusalError, 'refused'],
  [isMalformedOutputError, 'malformed'],
  [isNotAnApiError, 'not-an-api'],
];

export function classify(error: unknown, signal: AbortSignal | undefined, called: boolean): AttemptOutcome {
  if (signal?.aborted && error === signal.reason) {
    // The article's deadline passing while the call waited for its token is the limiter's timeout.
    if (isTimeoutError(error)) return called ? 'timeout' : 'limiter-timeout';
    return 'aborted';
  }
  for (const [isKind, outcome] of PROVIDER_OUTCOMES) if (isKind(error)) return outcome;
  if (isMaxWaitExceededError(error)) return 'limiter-timeout';
  if (isBrokenCircuitError(error)) return 'circuit-open';
  if (isLimitTooSmallError(error)) return 'too-large';
  if (isBudgetExhaustedError(error)) return 'over-budget';
  return 'error';
}
