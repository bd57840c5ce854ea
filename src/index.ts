// `news-processor`: what a pipeline user needs — the run, its options, events and results; tasks,
// sources, providers and pools as setups, the limits and the budget in front of every call, the
// answer cache — and the errors they catch. At most 120 names, types included
// (test/package/api-report.test.ts): a name goes here only if a pipeline user needs it; every other
// public name is in the entry point of its folder. Importing it has no side effects and loads no
// optional package: the SDKs, the tokenizer, ioredis are loaded when a feature that needs them is
// used. The other entry points: `news-processor/mechanisms` (the token bucket, the breaker, retries
// and backoff, clocks, the adaptive rate, durations, the rate-limit header codec),
// `news-processor/routes` (a route of one's own: the `Route` seam, the call gate, the call loop),
// `news-processor/plan` (a run worked out before it starts, the setups' checks),
// `news-processor/sinks` (where results go), `news-processor/telemetry` (OpenTelemetry, the run's
// counts in detail), `news-processor/vendors` (each vendor, and what a provider is made of),
// `news-processor/batch`, `news-processor/middleware`, `news-processor/redis`,
// `news-processor/queue`, `news-processor/server`, `news-processor/bench`, `news-processor/testing`.

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
  BudgetEvent,
  PipelineAttemptEvent,
} from './pipeline/run-events.ts';
// The counts (their parts, and tracing through OpenTelemetry, are `news-processor/telemetry`'s; a
// batch's step, `BatchEvent`, is `news-processor/batch`'s).
export type { RunCounts } from './pipeline/run-tally.ts';
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

// A provider as a run takes it — its limits, breaker, price — and the defaults of its options (a
// setup's checks are `news-processor/plan`'s; the gate each setup becomes, routes of one's own and
// the call loop, `news-processor/routes`').
export type { ProviderSetup, ProviderPrice, BreakerSetup } from './gate/provider-options.ts';
export { GATE_DEFAULTS } from './gate/call-gate.ts';
// Pools: several providers of one model as one route, each call where it is granted soonest, with fallbacks.
export type { PoolSetup, PoolStrategy } from './route/pool-setup.ts';

// The answer cache: answers kept by the hash of what shaped them, so a second run of the same work makes no call.
export { ANSWER_CACHE_DEFAULTS } from './cache/answer-cache.ts';
export type { AnswerCache, CachedAnswer } from './cache/answer-cache.ts';
// One directory, no server (the shared one, in Redis, is `news-processor/redis`'s `RedisAnswerCache`).
export { LmdbAnswerCache } from './cache/lmdb-answer-cache.ts';
export type { LmdbAnswerCacheOptions } from './cache/lmdb-answer-cache.ts';

// The limits: the seam every implementation sits behind and the in-process one (the adaptive rate
// is `news-processor/mechanisms`').
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
// The budget: a limit with no refill, in USD; every call holds its worst case first.
export { LocalBudget, BudgetExhaustedError, isBudgetExhaustedError } from './quota/budget.ts';
export type { Budget, BudgetHold, BudgetReserveOptions, LocalBudgetOptions } from './quota/budget.ts';

// Providers: the interface, its failures, the simulated one, and the HTTP APIs through their official
// SDKs (what a provider of one's own is made of — the request's framing, the errors' options, the
// rate-limit signals — is `news-processor/vendors`').
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
export type { Provider, CallOptions, LlmRequest, LlmResponse, LlmOutput, TokenUsage } from './provider/provider.ts';
// The simulated provider (its failure profiles, quota and outages are `news-processor/testing`'s).
export { SimulatedProvider, SIMULATED_DEFAULTS } from './simulator/simulated.ts';
export type { SimulatedProviderOptions } from './simulator/simulated.ts';
// A vendor's provider by its type; each vendor's own classes are news-processor/vendors'.
export { createHttpProvider } from './vendors/registry.ts';
export type { HttpProviderType } from './vendors/registry.ts';
export type { JsonSchema } from './provider/json-schema.ts';
export type { HttpProviderOptions } from './vendors/http-api.ts';
// A feature whose optional package is not installed says which one to install.
export { MissingPackageError } from './optional-package.ts';

// Configuration: the providers file.
export { loadProvidersConfig, parseProvidersConfig, ConfigError } from './config/providers-config.ts';
export type { ProvidersConfig, ProviderConfig, SimulatedConfig, ApiConfig } from './config/providers-config.ts';
