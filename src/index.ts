// `news-processor`: the pipeline and the limits in front of every call, with the generic mechanisms
// under them. Importing it has no side effects and loads no optional package: the SDKs, the
// tokenizer, ioredis are loaded when a feature that needs them is used. The rest of the API is
// one entry point per layer: `news-processor/middleware` (per-client limits for servers),
// `news-processor/redis` (limits shared between processes), `news-processor/server` (the simulated
// provider over HTTP), `news-processor/bench` (sweeps and charts), `news-processor/testing`.

// The run: articles in, one result per article out, figures at the end.
export {
  runPipeline,
  taskProviders,
  PIPELINE_DEFAULTS,
  CancelledError,
  isCancelledError,
  RunStoppedError,
  isRunStoppedError,
} from './pipeline/run.ts';
export type { PipelineOptions, PipelineAttemptEvent } from './pipeline/run.ts';
export type { RunSummary, RunStop, BoundBy, ProviderFigures, TaskFigures, Percentiles } from './pipeline/metrics.ts';
export type { ArticleResult, ArticleStatus, ArticleError } from './pipeline/result.ts';

// A run through a vendor's Batch API: the same articles, tasks and results, at half the price.
export { runBatch, BATCH_DEFAULTS } from './batch/run-batch.ts';
export type { BatchRunOptions, BatchRunSummary, BatchRunState, PendingBatch } from './batch/run-batch.ts';
export type { BatchApi, BatchRow, SubmittedBatch, BatchProgress, RowOutcome } from './batch/batch-api.ts';
export { OpenAiBatchApi, type OpenAiBatchApiOptions } from './batch/openai-batch-api.ts';
export { AnthropicBatchApi, type AnthropicBatchApiOptions } from './batch/anthropic-batch-api.ts';
export { SimulatedBatchApi, type SimulatedBatchApiOptions } from './batch/simulated-batch-api.ts';
export { customIdOf } from './batch/custom-id.ts';

// Tasks: what each article is asked, as data — a prompt with placeholders, a schema, what it needs first.
export { defineTasks, requestFor, TasksError, isTasksError } from './tasks/task-set.ts';
export type { TaskSpec, Task, TaskSet } from './tasks/task-set.ts';
export { loadTasksFile, parseTasksFile, loadBuiltinTasks } from './tasks/tasks-file.ts';
export { MissingFieldError, isMissingFieldError } from './tasks/template.ts';
export type { Template, Placeholder } from './tasks/template.ts';

// Sources: where articles come from.
export type { Article } from './sources/article.ts';
export { generateArticles, generatedArticle } from './sources/generated.ts';
export type { GenerateArticlesOptions, GeneratedArticle } from './sources/generated.ts';
export { readArticlesJsonl } from './sources/jsonl.ts';
export { readArticlesJson } from './sources/json-array.ts';
export { readArticlesCsv } from './sources/csv.ts';
export type { ReadArticlesOptions, ExpectedField } from './sources/read-articles.ts';
export { InputError, isInputError } from './sources/input-error.ts';
export type { InputIssue } from './sources/input-error.ts';

// Sinks: where results go.
export { JsonlWriter, OutputError, isOutputError } from './sinks/jsonl-writer.ts';
export type { JsonlWriterOptions } from './sinks/jsonl-writer.ts';
export { keepSucceeded, ResultsFileError, isResultsFileError } from './sinks/results-file.ts';
export type { KeptResults, KeepSucceededOptions } from './sinks/results-file.ts';

// The gate in front of each provider — breaker, limits, call, retry — and the one shape of a provider's options.
export { CallGate, GATE_DEFAULTS } from './gate/call-gate.ts';
export type { CallGateOptions, GateCallOptions, GateFigures } from './gate/call-gate.ts';
export type { AttemptEvent, AttemptOutcome } from './gate/attempt.ts';
export type { CallDeadline } from './gate/call-deadline.ts';
export type { Route, RouteAnswer } from './route/route.ts';
export { providerSetupProblem, checkProviderSetup } from './gate/provider-options.ts';
export type { ProviderSetup, ProviderPrice, BreakerSetup, ProviderSetupProblem, ProviderSetupRule } from './gate/provider-options.ts';

// The limits: the seam every implementation sits behind, the in-process one, and the adaptive rate.
export { LimitTooSmallError, isLimitTooSmallError, requestLimit } from './limits/provider-limits.ts';
export type {
  ProviderLimits,
  LimitSpec,
  LimitKind,
  CallCost,
  LimitGrant,
  LimitAcquireOptions,
  TokensUsed,
} from './limits/provider-limits.ts';
export { LocalLimits } from './limits/local-limits.ts';
export type { LocalLimitsOptions } from './limits/local-limits.ts';
export { AdaptiveRate, ADAPTIVE_DEFAULTS } from './limits/adaptive-rate.ts';
export type {
  AdaptiveRateOptions,
  AdaptiveTuning,
  RateLimitedInfo,
  RateChangeEvent,
  RateChangeListener,
} from './limits/adaptive-rate.ts';
// The budget: a limit with no refill, in USD; every call holds its worst case first.
export { LocalBudget, BudgetExhaustedError, isBudgetExhaustedError } from './limits/budget.ts';
export type { Budget, BudgetHold, LocalBudgetOptions } from './limits/budget.ts';
// The moves of a request rate over a run (`GateFigures.rates`): what the run's rate bound is read from.
export type { RateSince } from './limits/rate-history.ts';
// Thrown by limits kept elsewhere (`news-processor/redis`) when they cannot be reached: a run stops its intake on it.
export { LimiterUnavailableError, isLimiterUnavailableError } from './limiter/limiter-unavailable-error.ts';

// Providers: the interface, its failures, the simulated one, and the HTTP APIs through their official SDKs.
export {
  ProviderError,
  RateLimitError,
  ServerError,
  TimeoutError,
  NetworkError,
  BadRequestError,
  NotAnApiError,
  AuthenticationError,
  QuotaExhaustedError,
  TruncatedOutputError,
  RefusalError,
  MalformedOutputError,
  isProviderError,
  isRateLimitError,
  isServerError,
  isTimeoutError,
  isNetworkError,
  isBadRequestError,
  isNotAnApiError,
  isAuthenticationError,
  isQuotaExhaustedError,
  isTruncatedOutputError,
  isRefusalError,
  isMalformedOutputError,
  stopsRun,
} from './provider/provider.ts';
export type {
  Provider,
  CallOptions,
  LlmRequest,
  LlmResponse,
  LlmOutput,
  TokenUsage,
  ResponseHeaders,
  ProviderErrorOptions,
  RetriedFailureOptions,
} from './provider/provider.ts';
export { SimulatedProvider, SIMULATED_DEFAULTS, FAILURE_PROFILES, OUTAGE_PROFILE_WINDOW } from './simulator/simulated.ts';
export type { SimulatedProviderOptions, FailureProfile, ProfileName, ProviderQuota, OutageWindow } from './simulator/simulated.ts';
export { estimateInputTokens } from './provider/token-estimate.ts';
export { HttpApiProvider } from './vendors/http-api-provider.ts';
export { OpenAiProvider } from './vendors/openai/openai-provider.ts';
export { AnthropicProvider } from './vendors/anthropic/anthropic-provider.ts';
export { AzureOpenAiProvider } from './vendors/azure/azure-provider.ts';
export { OPENAI_DEFAULTS } from './vendors/openai/defaults.ts';
export { ANTHROPIC_DEFAULTS } from './vendors/anthropic/defaults.ts';
export { AZURE_DEFAULTS } from './vendors/azure/defaults.ts';
export { strictSchemaProblem } from './provider/strict-schema.ts';
export { createHttpProvider, VENDORS } from './vendors/registry.ts';
export type { Vendor } from './vendors/vendor.ts';
export type { SdkBinding } from './vendors/http-api-provider.ts';
export type { BoundSdk, ResponseMeta } from './vendors/sdk-wire.ts';
export type { HeaderFormat, HeaderFields } from './vendors/header-fields.ts';
export type { ErrorBody } from './vendors/http-api.ts';
export type { ProviderType, HttpProviderType } from './vendors/registry.ts';
export type { JsonSchema } from './provider/json-schema.ts';
export type { HttpProviderOptions, HttpProviderDefaults, HttpProviderSettings } from './vendors/http-api.ts';
// A feature whose optional package is not installed says which one to install.
export { MissingPackageError, isMissingPackageError } from './optional-package.ts';
export type { OptionalPackage } from './optional-package.ts';

// Rate-limit headers as providers send them, read and written.
export { parseRateLimitHeaders, formatRateLimitHeaders } from './vendors/rate-limit-headers.ts';
export type {
  HeaderStyle,
  HeaderSource,
  LimitStatus,
  LimitSnapshot,
  RateLimitInfo,
  ParseRateLimitHeadersOptions,
  FormatRateLimitHeadersOptions,
} from './vendors/rate-limit-headers.ts';

// Configuration: the providers file, and durations as Go writes them.
export { loadProvidersConfig, parseProvidersConfig, ConfigError, isConfigError } from './config/providers-config.ts';
export type { ProvidersConfig, ProviderConfig, SimulatedConfig, ApiConfig } from './config/providers-config.ts';
export { parseDuration, formatDuration } from './validation/duration.ts';

// Generic mechanisms, usable on their own: time, the token bucket, the breaker, retries.
export { systemClock, ManualClock, sleep } from './clock.ts';
export type { Clock } from './clock.ts';
export { TokenBucket, MaxWaitExceededError, isMaxWaitExceededError } from './limiter/token-bucket.ts';
export type { TokenBucketOptions, ReserveOptions, AcquireOptions, Reservation } from './limiter/token-bucket.ts';
export {
  CircuitBreaker,
  BrokenCircuitError,
  isBrokenCircuitError,
  BREAKER_DEFAULTS,
  FAILURE_RATIO_DEFAULTS,
} from './breaker/circuit-breaker.ts';
export type {
  BreakerState,
  BreakerStateKind,
  BreakerStateChange,
  BreakerPermit,
  CircuitBreakerOptions,
  ExecuteOptions,
  FailureRatioOptions,
} from './breaker/circuit-breaker.ts';
export { retry, RetryPolicy, RetryError, isRetryError, RETRY_DEFAULTS } from './retry/retry.ts';
export type { RetryOptions, RetryPolicyOptions, RetryDecision, RetryEvent, RetryStopReason, AttemptOptions } from './retry/retry.ts';
export { createBackoff, exponentialDelayMs, fullJitterDelayMs, decorrelatedJitterDelayMs, BACKOFF_DEFAULTS } from './retry/backoff.ts';
export type { Backoff, BackoffKind, BackoffOptions } from './retry/backoff.ts';
