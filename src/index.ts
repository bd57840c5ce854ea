// The public API of news-processor. Importing it has no side effects.
export { systemClock, ManualClock, sleep } from './clock.ts';
export type { Clock } from './clock.ts';

export { TokenBucket, MaxWaitExceededError, isMaxWaitExceededError } from './limiter/token-bucket.ts';
export type { TokenBucketOptions, ReserveOptions, AcquireOptions, Reservation } from './limiter/token-bucket.ts';

export {
  TASKS,
  ProviderError,
  RateLimitError,
  ServerError,
  TimeoutError,
  isProviderError,
  isRateLimitError,
  isServerError,
  isTimeoutError,
} from './provider/provider.ts';
export type {
  Provider,
  CallOptions,
  LlmRequest,
  LlmResponse,
  LlmOutput,
  SummarizeOutput,
  SentimentOutput,
  Sentiment,
  TaskName,
  TokenUsage,
} from './provider/provider.ts';
export { SimulatedProvider, FAILURE_PROFILES, PROFILE_NAMES, isProfileName } from './provider/simulated.ts';
export type { SimulatedProviderOptions, FailureProfile, ProfileName, ProviderQuota } from './provider/simulated.ts';
export { createRandom } from './provider/random.ts';
export { summarize, extractKeywords, analyzeSentiment } from './provider/text-analysis.ts';

export { createBackoff, exponentialDelayMs, fullJitterDelayMs, decorrelatedJitterDelayMs } from './retry/backoff.ts';
export type { Backoff, BackoffKind, BackoffOptions } from './retry/backoff.ts';
export { retry, RetryError, isRetryError } from './retry/retry.ts';
export type { RetryOptions, RetryEvent, RetryStopReason } from './retry/retry.ts';

export type { Article } from './pipeline/article.ts';
export { generateArticles, readArticlesJsonl, InputError, isInputError } from './pipeline/articles.ts';
export type { InputIssue, GenerateArticlesOptions, ReadArticlesJsonlOptions } from './pipeline/articles.ts';
export { CallGate } from './pipeline/call-gate.ts';
export type { AttemptEvent, AttemptOutcome, CallGateOptions, GateCallOptions } from './pipeline/call-gate.ts';
export { runPool } from './pipeline/pool.ts';
export type { PoolOptions } from './pipeline/pool.ts';
export { processArticle } from './pipeline/processor.ts';
export type { ProcessorOptions } from './pipeline/processor.ts';
export { runPipeline, CancelledError } from './pipeline/run.ts';
export type { PipelineOptions, ProviderSetup, PipelineAttemptEvent } from './pipeline/run.ts';
export { Metrics } from './pipeline/metrics.ts';
export type { RunSummary, ProviderFigures, Percentiles } from './pipeline/metrics.ts';
export { Histogram } from './pipeline/histogram.ts';
export type { ArticleResult, ArticleStatus, ArticleError } from './pipeline/result.ts';
export { JsonlWriter } from './pipeline/jsonl-writer.ts';
