// `news-processor/mechanisms`: the generic pieces under the pipeline, each usable on its own and
// none of them knowing articles or tasks — time (the system clock, a manual one for exact tests),
// the token bucket, the circuit breaker, the adaptive rate, retries and their backoff formulas,
// durations as Go writes them, the rate-limit headers providers send, read and written, and optional
// packages loaded when first used. The root entry runs the
// pipeline over them; this one is for code that wants a bucket, a breaker or a backoff without it.
// Importing it has no side effects.

// Time: every time-dependent piece takes a `Clock`; tests drive a `ManualClock`.
export { systemClock, ManualClock, sleep } from './clock.ts';
export type { Clock } from './clock.ts';

// The token bucket: x/time/rate's model, with a strict FIFO `acquire()`.
export { TokenBucket, MaxWaitExceededError, isMaxWaitExceededError } from './limiter/token-bucket.ts';
export type { TokenBucketOptions, ReserveOptions, AcquireOptions, Reservation } from './limiter/token-bucket.ts';
// Thrown by limits kept elsewhere (`news-processor/redis`) when they cannot be reached: a run stops its intake on it.
export { LimiterUnavailableError, isLimiterUnavailableError } from './limiter/limiter-unavailable-error.ts';

// The circuit breaker.
export { CircuitBreaker, BrokenCircuitError, BREAKER_DEFAULTS, FAILURE_RATIO_DEFAULTS } from './breaker/circuit-breaker.ts';
export type {
  BreakerState,
  BreakerStateKind,
  BreakerStateChange,
  BreakerPermit,
  CircuitBreakerOptions,
  ExecuteOptions,
  FailureRatioOptions,
} from './breaker/circuit-breaker.ts';

// The adaptive rate: a provider's request rate moved by its 429s (AIMD with a CUBIC climb), over any ProviderLimits.
export { AdaptiveRate, ADAPTIVE_DEFAULTS } from './quota/adaptive-rate.ts';
export type {
  AdaptiveRateOptions,
  AdaptiveTuning,
  RateLimitedCall,
  RateChangeEvent,
  RateChangeListener,
} from './quota/adaptive-rate.ts';
// The moves of a request rate over a run (`GateFigures.rates`): what the run's rate bound is read from.
export type { RateSince } from './quota/rate-history.ts';

// Retries and their backoff.
export { retry, RetryPolicy, RetryError, RETRY_DEFAULTS } from './retry/retry.ts';
export type { RetryOptions, RetryPolicyOptions, RetryDecision, RetryEvent, RetryStopReason, AttemptOptions } from './retry/retry.ts';
export { createBackoff, exponentialDelayMs, fullJitterDelayMs, decorrelatedJitterDelayMs, BACKOFF_DEFAULTS } from './retry/backoff.ts';
export type { Backoff, BackoffKind, BackoffOptions } from './retry/backoff.ts';

// Durations as Go writes them (`1m30s`, `250ms`), read and written.
export { parseDuration, formatDuration, DURATION_SYNTAX } from './validation/duration.ts';
// An optional package loaded when first used, and said by name when it is not installed (the
// root's `MissingPackageError`): how the package loads the SDKs, the tokenizer, ioredis.
export { loadOptional } from './optional-package.ts';
export type { OptionalPackage, PackageSpec } from './optional-package.ts';
// Amounts of USD as the package writes them (`$0.0042`, `$12.50`).
export { formatUsd } from './quota/budget.ts';

// Rate-limit headers as providers send them, read and written.
export { parseRateLimitHeaders, formatRateLimitHeaders, HEADER_STYLES } from './vendors/rate-limit-headers.ts';
export type {
  HeaderStyle,
  HeaderSource,
  LimitStatus,
  LimitSnapshot,
  ParsedRateLimitHeaders,
  ParseRateLimitHeadersOptions,
  FormatRateLimitHeadersOptions,
} from './vendors/rate-limit-headers.ts';
