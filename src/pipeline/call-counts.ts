// What calls came to, as the run's counts (run-tally.ts) and its summary (metrics.ts) both say it.

/** A distribution in ms: its median, 95th and 99th percentiles, and its largest value. */
export interface Percentiles {
  /** The median. */
  readonly p50: number;
  /** The 95th percentile. */
  readonly p95: number;
  /** The 99th percentile. */
  readonly p99: number;
  /** The largest value. */
  readonly max: number;
}

/**
 * What calls came to: how many, then one count per way a call ended — answered, or why not — so
 * that `calls` is always the other counts but `retries` added up. A provider's, a task's, and the
 * whole run's (the sum over its providers).
 */
export interface CallCounts {
  /** Attempts that reached a provider, retries and repairs included: each took its limits' tokens. */
  readonly calls: number;
  /** Calls the provider answered (an answer that then proved unfit is in `unfit`). */
  readonly answered: number;
  /** Calls the provider refused with a 429. */
  readonly rateLimited: number;
  /** Calls the provider answered with a 5xx. */
  readonly serverErrors: number;
  /** Calls the provider did not answer in time. */
  readonly timeouts: number;
  /** Calls that could not reach the provider or lost the connection (refused, reset, DNS, TLS). */
  readonly networkErrors: number;
  /** Calls the provider refused for the key or the account (401, 403, no credit): a pool member that answers so is dropped. */
  readonly refused: number;
  /** Calls whose answer could not be used: cut off, refused by the model, malformed, not the API's. */
  readonly unfit: number;
  /** Calls cut short in flight: the run was stopped (Ctrl-C) or the article's time ran out. */
  readonly cancelledCalls: number;
  /** Calls that failed otherwise: the request rejected (400), an unknown error. */
  readonly otherErrors: number;
  /** Of the calls, those that failed and were followed by another. */
  readonly retries: number;
}
