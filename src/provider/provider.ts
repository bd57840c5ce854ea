/**
 * What the pipeline asks of an LLM provider, and the typed failures it may answer with.
 *
 * A provider is anything with `call(request, { signal })`. It resolves with a response or rejects
 * with one of the errors below (or `signal.reason` when aborted). The call gate decides what to
 * retry from the error's type alone, so providers must map their transport's failures onto these.
 */

/** The LLM tasks an article goes through, in order. */
export type TaskName = 'summarize' | 'sentiment';

export const TASKS: readonly TaskName[] = ['summarize', 'sentiment'];

export interface LlmRequest {
  readonly task: TaskName;
  readonly articleId: string;
  readonly title: string;
  /** The article body the task works on. */
  readonly text: string;
}

export type Sentiment = 'positive' | 'negative' | 'neutral';

export interface SummarizeOutput {
  readonly task: 'summarize';
  readonly summary: string;
  readonly keywords: readonly string[];
}

export interface SentimentOutput {
  readonly task: 'sentiment';
  readonly sentiment: Sentiment;
  /** From -1 (most negative) to 1 (most positive). */
  readonly score: number;
}

export type LlmOutput = SummarizeOutput | SentimentOutput;

export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/**
 * HTTP response headers as a provider received them, names lower-case (`retry-after`,
 * `x-ratelimit-remaining-requests`, …); read them with `parseRateLimitHeaders()`.
 */
export type ResponseHeaders = Readonly<Record<string, string>>;

export interface LlmResponse {
  readonly output: LlmOutput;
  readonly usage?: TokenUsage;
  /** The response's headers, when the provider has any (rate-limit status, mostly). */
  readonly headers?: ResponseHeaders;
}

export interface CallOptions {
  /** Aborting it must settle the call promptly, rejecting with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * What is left of the caller's deadline, in ms (`Infinity`: none). A provider over a network
   * makes it its request timeout; the signal aborts the call at the deadline all the same.
   */
  readonly timeoutMs?: number | undefined;
}

export interface Provider {
  /** Names the provider in logs, metrics and routing. */
  readonly name: string;
  call(request: LlmRequest, options?: CallOptions): Promise<LlmResponse>;
}

/** Base of every failure a provider reports; `retryable` tells the call gate whether to go again. */
export abstract class ProviderError extends Error {
  abstract readonly retryable: boolean;
}

/**
 * HTTP 429: too many requests. `retryAfterMs` is the provider's own hint, when it gave one;
 * `headers` the response's headers (lower-case names), when the provider passes them up.
 */
export class RateLimitError extends ProviderError {
  override readonly name = 'RateLimitError';
  readonly retryable = true;
  readonly status = 429;
  readonly retryAfterMs: number | undefined;
  readonly headers: ResponseHeaders | undefined;

  constructor(message = 'rate limited (429)', options: { retryAfterMs?: number | undefined; headers?: ResponseHeaders | undefined } = {}) {
    super(message);
    this.retryAfterMs = options.retryAfterMs;
    this.headers = options.headers;
  }
}

/**
 * HTTP 5xx: the provider failed. 503 and other 5xx are retryable. `retryAfterMs` is the provider's
 * hint when it sent one (a 503 during maintenance often does); `headers` as on {@link RateLimitError}.
 */
export class ServerError extends ProviderError {
  override readonly name = 'ServerError';
  readonly retryable = true;
  readonly status: number;
  readonly retryAfterMs: number | undefined;
  readonly headers: ResponseHeaders | undefined;

  constructor(
    message = 'service unavailable (503)',
    options: { status?: number; retryAfterMs?: number | undefined; headers?: ResponseHeaders | undefined } = {},
  ) {
    super(message);
    this.status = options.status ?? 503;
    this.retryAfterMs = options.retryAfterMs;
    this.headers = options.headers;
  }
}

/** The call did not answer in time. Not retried: the article's deadline has passed. */
export class TimeoutError extends ProviderError {
  override readonly name = 'TimeoutError';
  readonly retryable = false;
  readonly timeoutMs: number | undefined;

  constructor(message = 'timed out', options: { timeoutMs?: number } = {}) {
    super(message);
    this.timeoutMs = options.timeoutMs;
  }
}

export const isProviderError = (error: unknown): error is ProviderError => error instanceof ProviderError;
export const isRateLimitError = (error: unknown): error is RateLimitError => error instanceof RateLimitError;
export const isServerError = (error: unknown): error is ServerError => error instanceof ServerError;
export const isTimeoutError = (error: unknown): error is TimeoutError => error instanceof TimeoutError;
