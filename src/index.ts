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
export { retry, retryAfterHint, RetryError, isRetryError } from './retry/retry.ts';
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
export { JsonlWriter, OutputError, isOutputError } from './pipeline/jsonl-writer.ts';

export { pairSettings, runSweep, settingLabel } from './bench/sweep.ts';
export type { BenchSetting, BenchRun, SettingResult, SweepResult, SweepOptions, SweepRunStart } from './bench/sweep.ts';
export { benchChartSpec, renderBenchChart } from './bench/chart.ts';
export type { BenchChartOptions } from './bench/chart.ts';

export { ProviderLimits, LimitTooSmallError, isLimitTooSmallError, LIMIT_KINDS } from './limiter/provider-limits.ts';
export type { LimitKind, LimitSpec, CallCost, LimitGrant } from './limiter/provider-limits.ts';
export { AdaptiveRate } from './limiter/adaptive-rate.ts';
export type { AdaptiveRateOptions, RateLimitedInfo, RateChangeEvent, RateChangeListener } from './limiter/adaptive-rate.ts';
export { CircuitBreaker, BrokenCircuitError, isBrokenCircuitError } from './breaker/circuit-breaker.ts';
export type {
  BreakerState,
  BreakerStateKind,
  BreakerStateChange,
  BreakerPermit,
  CircuitBreakerOptions,
  FailureRatioOptions,
} from './breaker/circuit-breaker.ts';
export { parseRateLimitHeaders, formatRateLimitHeaders, HEADER_STYLES, isHeaderStyle } from './provider/rate-limit-headers.ts';
export type { HeaderStyle, LimitStatus, RateLimitInfo } from './provider/rate-limit-headers.ts';
export type { ResponseHeaders } from './provider/provider.ts';
export type { OutageWindow } from './provider/simulated.ts';
export { estimateInputTokens, promptFor } from './provider/token-estimate.ts';
export {
  loadProvidersConfig,
  parseProvidersConfig,
  parseOutageWindow,
  ConfigError,
  isConfigError,
  DEFAULT_BREAKER,
} from './config/providers-config.ts';
export type { ProvidersConfig, ProviderConfig, BreakerConfig, SimulatedConfig } from './config/providers-config.ts';
export { parseDuration } from './config/duration.ts';
export { DeadlineSignals } from './pipeline/deadline-signals.ts';
