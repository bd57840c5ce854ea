// The public API of news-processor, by layer, in the order data flows. Importing it has no side
// effects. Test helpers (a scripted provider, a driver for the manual clock) are in
// `news-processor/testing`.

// The run: articles in, one result per article out, figures at the end.
export { runPipeline, CancelledError, RunStoppedError, PIPELINE_DEFAULTS } from './pipeline/run.ts';
export type { BreakerSetup, PipelineOptions, ProviderSetup, PipelineAttemptEvent } from './pipeline/run.ts';
export type { RunSummary, RunStop, BoundBy, ProviderFigures, Percentiles } from './pipeline/metrics.ts';
export type { ArticleResult, ArticleStatus, ArticleError } from './pipeline/result.ts';

// Sources: where articles come from.
export type { Article } from './sources/article.ts';
export { generateArticles, generatedArticle } from './sources/generated.ts';
export type { GenerateArticlesOptions } from './sources/generated.ts';
export { readArticlesJsonl, InputError, isInputError } from './sources/jsonl.ts';
export { MAX_LINE_BYTES } from './sources/lines.ts';
export type { InputIssue, ReadArticlesJsonlOptions } from './sources/jsonl.ts';

// Sinks: where results go.
export { JsonlWriter, OutputError, isOutputError } from './sinks/jsonl-writer.ts';
export type { JsonlWriterOptions } from './sinks/jsonl-writer.ts';
export { keepSucceeded, ResultsFileError } from './sinks/results-file.ts';
export type { KeptResults } from './sinks/results-file.ts';

// The gate in front of each provider: breaker, limits, call, retry; the limits behind their seam.
export { CallGate, GATE_DEFAULTS } from './gate/call-gate.ts';
export type { AttemptEvent, AttemptOutcome, CallGateOptions, GateCallOptions, GateFigures } from './gate/call-gate.ts';
export { LimitTooSmallError, isLimitTooSmallError, requestLimit, LIMIT_KINDS } from './limits/provider-limits.ts';
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
export type { AdaptiveRateOptions, AdaptiveTuning, RateLimitedInfo, RateChangeEvent, RateChangeListener } from './limits/adaptive-rate.ts';

// Sharing the limits through Redis: a provider's quota across processes, and a store for the per-key limits of servers (below).
export { connectRedis, RedisConnection, REDIS_DEFAULTS } from './redis/redis-connection.ts';
export type { RedisConnectOptions } from './redis/redis-connection.ts';
export {
  RedisConnectError,
  isRedisConnectError,
  RedisTlsFileError,
  isRedisTlsFileError,
  RedisPermissionError,
  isRedisPermissionError,
  RedisRedirectError,
  isRedisRedirectError,
} from './redis/redis-errors.ts';
export type { RedisConnectReason } from './redis/redis-errors.ts';
export { RedisTarget, REDIS_URL_PARAMETERS } from './redis/redis-target.ts';
export type { RedisTlsOptions } from './redis/redis-target.ts';
export type { RedisScript } from './redis/scripts.ts';
export { RedisLimits } from './redis/redis-limits.ts';
export type { RedisLimitsOptions } from './redis/redis-limits.ts';
export { RedisRateLimitStore } from './redis/redis-store.ts';
export type { RedisRateLimitStoreOptions } from './redis/redis-store.ts';
export { LimiterUnavailableError, isLimiterUnavailableError } from './limiter/limiter-unavailable-error.ts';

// Providers: the interface, its failures, and the simulated one.
export {
  TASKS,
  ProviderError,
  RateLimitError,
  ServerError,
  TimeoutError,
  NetworkError,
  BadRequestError,
  AuthenticationError,
  QuotaExhaustedError,
  TruncatedOutputError,
  RefusalError,
  MalformedOutputError,
  isProviderError,
  isRateLimitError,
  isServerError,
  isTimeoutError,
  stopsRun,
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
  ResponseHeaders,
  ProviderErrorOptions,
} from './provider/provider.ts';
export { SimulatedProvider, SIMULATED_DEFAULTS, FAILURE_PROFILES, PROFILE_NAMES, OUTAGE_PROFILE_WINDOW } from './provider/simulated.ts';
export type { SimulatedProviderOptions, FailureProfile, ProfileName, ProviderQuota, OutageWindow } from './provider/simulated.ts';
export { estimateInputTokens } from './provider/token-estimate.ts';
export { DEFAULT_MAX_OUTPUT_TOKENS } from './provider/provider.ts';
export type { RetriedFailureOptions } from './provider/provider.ts';
// Providers over HTTP: OpenAI (and compatible servers) and Anthropic, through their official SDKs.
export { OpenAiProvider, OPENAI_DEFAULTS } from './provider/openai.ts';
export { AnthropicProvider, ANTHROPIC_DEFAULTS } from './provider/anthropic.ts';
export { hasCredentials, isHeaderSafe, isHttpUrl, maskCredentials, SdkProvider } from './provider/http-api.ts';
export type {
  ErrorBody,
  ErrorClass,
  Fetch,
  HttpProviderSettings,
  RefetchableClient,
  Sdk,
  SdkApiError,
  SdkErrorClasses,
} from './provider/http-api.ts';
export {
  createHttpProvider,
  isHttpProviderType,
  isEnvVariableName,
  PROVIDER_TYPES,
  PROVIDER_DEFAULTS,
  HTTP_PROVIDER_DEFAULTS,
} from './provider/provider-types.ts';
export type { ProviderType, HttpProviderType } from './provider/provider-types.ts';
export type { HttpProviderOptions, HttpProviderDefaults } from './provider/http-api.ts';

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

// HTTP: rate-limit headers as providers send them, read and written.
export { parseRateLimitHeaders, formatRateLimitHeaders, HEADER_STYLES, isHeaderStyle } from './provider/rate-limit-headers.ts';
export type {
  HeaderStyle,
  HeaderSource,
  LimitStatus,
  LimitSnapshot,
  RateLimitInfo,
  ParseRateLimitHeadersOptions,
  FormatRateLimitHeadersOptions,
} from './provider/rate-limit-headers.ts';

// Servers: per-client limits in front of node:http, Express and Fastify handlers, and the keyed
// buckets under them (in this process, or any store that shares them).
export { KeyedLimiter, KEYED_LIMITER_DEFAULTS } from './limiter/keyed-limiter.ts';
export type { KeyedLimiterOptions, RateLimitDecision, RateLimitStore } from './limiter/keyed-limiter.ts';
export { rateLimit, RATE_LIMIT_DEFAULTS, STORE_ERROR_ACTIONS } from './middleware/rate-limit.ts';
export type {
  RateLimitOptions,
  RateLimitMiddleware,
  LimitedRequest,
  RateLimitMessage,
  StoreErrorAction,
  FastifyLikeRequest,
  FastifyLikeReply,
} from './middleware/rate-limit.ts';
export type { RateLimitFigures, RateLimitOutcome } from './middleware/rate-limit-metrics.ts';
export { clientAddressKey, CLIENT_ADDRESS_DEFAULTS, PROXY_HEADERS } from './middleware/client-address.ts';
export type { ClientAddressOptions, TrustProxy, ProxyHeader } from './middleware/client-address.ts';
export { RATE_LIMIT_HEADER_DRAFTS } from './middleware/ietf-headers.ts';
export type { RateLimitHeaderDraft } from './middleware/ietf-headers.ts';

// Configuration: the providers file, and durations as Go writes them.
export { loadProvidersConfig, parseProvidersConfig, parseOutageWindow, ConfigError, isConfigError } from './config/providers-config.ts';
export type { ProvidersConfig, ProviderConfig, BreakerConfig, SimulatedConfig } from './config/providers-config.ts';
export type { ApiConfig } from './config/providers-config.ts';
export { parseDuration, formatDuration, DURATION_SYNTAX } from './validation/duration.ts';

// The server side: the simulated provider over HTTP, speaking the OpenAI and Anthropic APIs, a quota per API key.
export { LlmServer, LLM_SERVER_DEFAULTS } from './server/llm-server.ts';
export type { LlmServerOptions, LlmServerSimulation, ListenOptions } from './server/llm-server.ts';

// Measuring: sweep rate/burst settings through the pipeline, and chart them.
export { pairSettings, runSweep, settingLabel } from './bench/sweep.ts';
export type { BenchSetting, BenchRun, SettingResult, SweepResult, SweepOptions, SweepRunStart } from './bench/sweep.ts';
export { benchChartSpec, renderBenchChart } from './bench/chart.ts';
export type { BenchChartOptions } from './bench/chart.ts';
