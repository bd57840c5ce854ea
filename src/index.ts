// `news-processor`: the pipeline — tasks, sources, providers, the limits and the budget in front of
// every call, results and resume — and its errors. Importing it has no side effects and loads no
// optional package: the SDKs, the tokenizer, ioredis are loaded when a feature that needs them is
// used. The rest of the API is one entry point per layer: `news-processor/mechanisms` (the token
// bucket, the breaker, retries and backoff, clocks, durations, the rate-limit header codec),
// `news-processor/middleware` (per-client limits for servers), `news-processor/redis` (limits
// shared between processes), `news-processor/queue`, `news-processor/server` (the simulated
// provider over HTTP), `news-processor/bench` (sweeps and charts), `news-processor/testing`.

// The run: articles in, one result per article out, figures at the end.
export { runPipeline, PIPELINE_DEFAULTS, CancelledError, RunStoppedError } from './pipeline/run.ts';
export type { PipelineOptions } from './pipeline/run.ts';
// A run's events, one typed stream a live run and a batch run tell alike (a progress line, a report,
// tracing: they watch and act on nothing), and the counts all of them read, made once.
export { RunEvents } from './pipeline/run-events.ts';
export type {
  RunEventListeners,
  RunEventName,
  RunObserver,
  RunStart,
  RunEnd,
  ArticleEnd,
  PoolChange,
  BatchEvent,
  BudgetEvent,
  PipelineAttemptEvent,
} from './pipeline/run-events.ts';
export type {
  RunCounts,
  CallTally,
  CallColumn,
  ProviderTally,
  TaskTally,
  PoolTally,
  PoolMemberTally,
  ArticleTally,
  TallyWatcher,
} from './pipeline/run-tally.ts';
// Tracing: an observer reporting through @opentelemetry/api after the GenAI conventions (a no-op without it).
export { createOtelObserver, OTEL_OBSERVER_DEFAULTS } from './telemetry/otel-observer.ts';
export type { OtelObserverOptions } from './telemetry/otel-observer.ts';
export type {
  RunSummary,
  RunStop,
  BoundBy,
  CallCounts,
  ProviderFigures,
  PoolFigures,
  TaskFigures,
  Percentiles,
} from './pipeline/metrics.ts';
export type { ArticleResult, ArticleStatus, ArticleError } from './pipeline/result.ts';

// Tasks: what each article is asked, as data — a prompt with placeholders, a schema, what it needs first.
export { defineTasks, TasksError } from './tasks/task-set.ts';
export type { TaskSpec, Task, TaskSet } from './tasks/task-set.ts';
export { loadTasksFile, parseTasksFile, loadBuiltinTasks } from './tasks/tasks-file.ts';
export { MissingFieldError } from './tasks/template.ts';
export type { Template, Placeholder } from './tasks/template.ts';

// Sources: where articles come from.
export type { Article } from './sources/article.ts';
export { generateArticles, generatedArticle } from './sources/generated.ts';
export type { GenerateArticlesOptions, GeneratedArticle } from './sources/generated.ts';
export { readArticlesJsonl } from './sources/jsonl.ts';
export { readArticlesJson } from './sources/json-array.ts';
export { readArticlesCsv } from './sources/csv.ts';
export type { ReadArticlesOptions, ExpectedField } from './sources/read-articles.ts';
export { InputError } from './sources/input-error.ts';
export type { InputIssue } from './sources/input-error.ts';

// Where results go — result stores, JSONL files, resume — is `news-processor/sinks`: a run tells
// each result to `onResult`.

// The gate in front of each provider — breaker, budget, limits, one attempt — and the one shape of a provider's options.
export { CallGate, GATE_DEFAULTS } from './gate/call-gate.ts';
export type { CallGateOptions, GateAttemptOptions, GateFigures } from './gate/call-gate.ts';
export type { AttemptEvent, AttemptOutcome, GateAttempt } from './gate/attempt.ts';
export type { CallDeadline } from './gate/call-deadline.ts';
export type { CallScope, CallScopeOptions } from './gate/call-scope.ts';
// Routes choose a gate for each attempt; the one call loop makes every call through them: cache, retries, repairs, fallbacks.
export type { Route, RouteCall, RouteChoice, RouteCallOptions, RouteAnswer, RouteCaller } from './route/route.ts';
export { CallLoop } from './route/call-loop.ts';
export type { CallLoopOptions } from './route/call-loop.ts';
export { ProviderRoute } from './route/provider-route.ts';
// Pools: several providers of one model as one route, each call where it is granted soonest, with fallbacks.
export { RoutePool } from './route/pool.ts';
export type { RoutePoolOptions, PoolMemberChange } from './route/pool.ts';
export type { PoolSetup, PoolStrategy, PoolSetupProblem } from './route/pool-setup.ts';
export { providerSetupProblem } from './gate/provider-options.ts';
export type { ProviderSetup, ProviderPrice, BreakerSetup, ProviderSetupProblem, ProviderSetupRule } from './gate/provider-options.ts';

// The answer cache: answers kept by the hash of what shaped them, so a second run of the same work makes no call.
export { ANSWER_CACHE_DEFAULTS } from './cache/answer-cache.ts';
export type { AnswerCache, CachedAnswer } from './cache/answer-cache.ts';
// One directory, no server (the shared one, in Redis, is `news-processor/redis`'s `RedisAnswerCache`).
export { LmdbAnswerCache } from './cache/lmdb-answer-cache.ts';
export type { LmdbAnswerCacheOptions } from './cache/lmdb-answer-cache.ts';

// The limits: the seam every implementation sits behind, the in-process one, and the adaptive rate.
export { LimitTooSmallError, isLimitTooSmallError, requestLimit } from './quota/provider-limits.ts';
export type {
  ProviderLimits,
  LimitSpec,
  LimitKind,
  CallCost,
  LimitGrant,
  LimitAcquireOptions,
} from './quota/provider-limits.ts';
export { LocalLimits } from './quota/local-limits.ts';
export type { LocalLimitsOptions } from './quota/local-limits.ts';
export type {
  AdaptiveRateOptions,
  AdaptiveTuning,
  RateLimitedCall,
  RateChangeEvent,
  RateChangeListener,
} from './quota/adaptive-rate.ts';
// The budget: a limit with no refill, in USD; every call holds its worst case first.
export { LocalBudget, BudgetExhaustedError, isBudgetExhaustedError } from './quota/budget.ts';
export type { Budget, BudgetHold, BudgetReserveOptions, LocalBudgetOptions } from './quota/budget.ts';
// The moves of a request rate over a run (`GateFigures.rates`): what the run's rate bound is read from.
export type { RateSince } from './quota/rate-history.ts';
// Thrown by limits kept elsewhere (`news-processor/redis`) when they cannot be reached: a run stops its intake on it.
export { LimiterUnavailableError, isLimiterUnavailableError } from './limiter/limiter-unavailable-error.ts';

// Providers: the interface, its failures, the simulated one, and the HTTP APIs through their official SDKs.
export {
  ProviderError,
  isProviderError,
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
} from './provider/provider.ts';
export type {
  Provider,
  CallOptions,
  LlmRequest,
  LlmResponse,
  LlmOutput,
  TokenUsage,
  RequestFraming,
  ConversationMessage,
  AnswerProblem,
  MalformedOutputOptions,
  ResponseHeaders,
  ProviderErrorOptions,
  ProviderTarget,
  PromptCacheRatios,
  RetriedFailureOptions,
} from './provider/provider.ts';
export type { RateLimitSignals, LimitStatus } from './provider/rate-limit-signals.ts';
export { SimulatedProvider, SIMULATED_DEFAULTS } from './simulator/simulated.ts';
export type { SimulatedProviderOptions, FailureProfile, ProfileName, ProviderQuota, OutageWindow } from './simulator/simulated.ts';
// A vendor's provider by its type; each vendor's own classes are news-processor/vendors'.
export { createHttpProvider } from './vendors/registry.ts';
export type { ProviderType, HttpProviderType } from './vendors/registry.ts';
export type { JsonSchema } from './provider/json-schema.ts';
export type { HttpProviderOptions } from './vendors/http-api.ts';
// A feature whose optional package is not installed says which one to install.
export { MissingPackageError, loadOptional } from './optional-package.ts';
export type { OptionalPackage, PackageSpec } from './optional-package.ts';

// Configuration: the providers file.
export { loadProvidersConfig, parseProvidersConfig, ConfigError } from './config/providers-config.ts';
export type { ProvidersConfig, ProviderConfig, SimulatedConfig, ApiConfig } from './config/providers-config.ts';

// The generic mechanisms' types that the pipeline's options take (their classes and functions are
// `news-processor/mechanisms`').
export type { Clock } from './clock.ts';
