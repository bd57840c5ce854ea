import type { Sentiment } from '../provider/provider.ts';

/** How an article ended. Every article the source yields ends as exactly one of these. */
export type ArticleStatus = 'succeeded' | 'failed' | 'cancelled';

/** Why an article failed or was cancelled: the error's class name and message, and the task it met it in. */
export interface ArticleError {
  readonly type: string;
  readonly message: string;
  readonly task?: string;
}

export interface ArticleResult {
  readonly id: string;
  readonly title: string;
  readonly status: ArticleStatus;
  readonly summary?: string;
  readonly keywords?: readonly string[];
  readonly sentiment?: Sentiment;
  readonly sentimentScore?: number;
  /** Provider calls made for this article, retries included. */
  readonly attempts: number;
  /** From start to end, limiter waits, calls and backoffs included, in ms. */
  readonly elapsedMs: number;
  /** Of that, the time the provider took to answer its calls, in ms (the rest was waiting). */
  readonly callMs: number;
  readonly error?: ArticleError;
}
