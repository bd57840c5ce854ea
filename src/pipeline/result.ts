/** How an article ended. Every article the source yields ends as exactly one of these. */
export type ArticleStatus = 'succeeded' | 'failed' | 'cancelled';

/** Why an article failed or was cancelled: the error's class name and message, and the task it met it in. */
export interface ArticleError {
  /** The error's class name: `RateLimitError`, `MissingFieldError`. */
  readonly type: string;
  /** What happened, in a line. */
  readonly message: string;
  /** The task whose call (or prompt) met it. */
  readonly task?: string;
  /** With a `MissingFieldError`: the placeholder's field the article lacked (`meta.author`), for a tally by field. */
  readonly field?: string;
}

/** What became of one article: succeeded with each task's answer, failed with a reason, cancelled, or not started. */
export interface ArticleResult {
  /** The article's id. */
  readonly id: string;
  /** The article's title. */
  readonly title: string;
  /** How the article ended. */
  readonly status: ArticleStatus;
  /**
   * Each task's answer, by task name: all of them for an article that succeeded; those it had for
   * one that failed or was cancelled (a resume runs only the rest).
   */
  readonly outputs: Readonly<Record<string, unknown>>;
  /** Provider calls made for this article, retries and repairs included. */
  readonly attempts: number;
  /** Of those, the repairs: calls that asked again with an unfit answer and its problems. Absent when none. */
  readonly repairs?: number;
  /** From start to end, limiter waits, calls and backoffs included, in ms. */
  readonly elapsedMs: number;
  /** Of that, the time the provider took to answer its calls, in ms (the rest was waiting). */
  readonly callMs: number;
  /** What its calls cost, retries included, at the providers' prices, in USD; absent without prices. */
  readonly costUsd?: number;
  /**
   * The most its calls whose fate is unknown may have cost (sent, then no answer and nothing
   * telling whether the provider took them: a timeout, a connection broken mid-request), in USD,
   * apart from `costUsd`; absent when there were none.
   */
  readonly unknownCostUsd?: number;
  /**
   * Which provider answered each task whose route chose among several (a pool's member, or a
   * fallback), by task name; absent when no task went through a pool.
   */
  readonly servedBy?: Readonly<Record<string, string>>;
  /** The tasks whose answers came from the answer cache, no call made, in the order they ended; absent when none did. */
  readonly cached?: readonly string[];
  /**
   * Each task's fingerprint when the article ran (task name → 8 hex digits): a short hash of its
   * prompt, schema, description, provider, model and output cap, which `runPipeline` and
   * `runBatch` record. `--resume` runs again the tasks whose fingerprint has changed since, and
   * those that depend on them; a line without it is taken as made by the tasks as they are.
   */
  readonly fingerprints?: Readonly<Record<string, string>>;
  /** Why the article did not succeed, when it did not. */
  readonly error?: ArticleError;
}
