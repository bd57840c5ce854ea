import { brandedGuard } from '../error-brand.ts';

/**
 * A limiter whose state lives elsewhere (Redis) gave no answer in time, or none it could use. Not a
 * rate limit — nothing says the quota is spent — and not the provider's failure: a circuit breaker
 * must not count it. Whether to stop or to go on with a local limit is the caller's policy.
 */
export class LimiterUnavailableError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'LimiterUnavailableError';
  /** Not worth retrying at once: the store is down, and every caller would wait out its timeout again. */
  readonly retryable = false;
}

/**
 * Whether `error` is a {@link LimiterUnavailableError}, from this copy of the package or another one
 * loaded beside it (limits written against their own copy): what a run stops its intake on.
 */
export const isLimiterUnavailableError = brandedGuard(LimiterUnavailableError, 'LimiterUnavailableError');
