/**
 * The names the OpenTelemetry GenAI semantic conventions give a client's calls to a model
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/), and the names of our own beside them,
 * under `news_processor.*`: what a tracing backend that knows the conventions reads without being
 * told.
 */

/** Span and metric attributes of the conventions. */
export const GEN_AI = Object.freeze({
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  outputType: 'gen_ai.output.type',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationInputTokens: 'gen_ai.usage.cache_creation.input_tokens',
  tokenType: 'gen_ai.token.type',
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
});

/** Our own attributes: what the conventions have no name for — the limits, the retries, the articles. */
export const OURS = Object.freeze({
  /** The provider's name in the run (a pool member's), where `gen_ai.provider.name` is its vendor's. */
  provider: 'news_processor.provider',
  task: 'news_processor.task',
  articleId: 'news_processor.article.id',
  articleStatus: 'news_processor.article.status',
  worker: 'news_processor.worker',
  /** 1-based: 2 and up are retries. */
  attempt: 'news_processor.attempt',
  /** How the attempt ended: `ok`, `rate-limited`, `limiter-timeout`, … (`AttemptOutcome`). */
  outcome: 'news_processor.attempt.outcome',
  /** How long the attempt waited for the limits before it was sent, ms. */
  limiterWaitMs: 'news_processor.limiter.wait_ms',
  /** The backoff before the next attempt, when there is one, ms. */
  retryDelayMs: 'news_processor.retry.delay_ms',
  /** Attempts an article's calls took. */
  attempts: 'news_processor.article.attempts',
  costUsd: 'news_processor.cost_usd',
  /** The most a call of unknown fate (a timeout, a connection broken mid-request) may have cost, USD: apart from the cost. */
  unknownCostUsd: 'news_processor.unknown_cost_usd',
});

/** The one operation every call is: a chat completion (OpenAI) or a message (Anthropic). */
export const CHAT = 'chat';

/** The conventions' metrics, and ours. */
export const METRICS = Object.freeze({
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
  limiterWait: 'news_processor.limiter.wait.duration',
  rateLimited: 'news_processor.client.rate_limited',
  budgetRemaining: 'news_processor.budget.remaining',
});

/** `gen_ai.client.token.usage`'s explicit bucket boundaries, as the conventions give them: powers of 4 from 1 to 4^13 tokens. */
export const TOKEN_USAGE_BUCKETS: readonly number[] = Object.freeze([
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
]);

/** `gen_ai.client.operation.duration`'s explicit bucket boundaries, as the conventions give them: doubling from 10 ms to 81.92 s. */
export const OPERATION_DURATION_BUCKETS_S: readonly number[] = Object.freeze([
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]);

/**
 * The limiter wait's boundaries: the operation duration's, below them a bucket of their own for
 * the waits of none (calls the burst let through) and of a few ms.
 */
export const LIMITER_WAIT_BUCKETS_S: readonly number[] = Object.freeze([0, 0.001, 0.005, ...OPERATION_DURATION_BUCKETS_S]);
