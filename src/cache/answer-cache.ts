import type { LlmOutput, TokenUsage } from '../provider/provider.ts';

/** An answer as the cache keeps it: the output, and the tokens it cost when it was made (what a hit saves). */
export interface CachedAnswer {
  /** The answer: it fit its schema when it was made. */
  readonly output: LlmOutput;
  /** The usage the provider reported for the call that made it. @default none (a hit then saves no figure) */
  readonly usage?: TokenUsage | undefined;
}

/**
 * Answers kept across calls, runs and processes, by the hash of everything that shaped them
 * ({@link answerKey}): the seam every store sits behind. `get` and `put` are asynchronous, so an
 * embedded store (`LmdbAnswerCache`) and a shared one (`news-processor/redis`'s `RedisAnswerCache`) are
 * interchangeable. A store keeps only whole entries: a reader sees an answer as it was put, or
 * none. It never throws for a key it lacks; a store that cannot be reached rejects, and the gate
 * takes that as a miss — a cache makes a run cheaper, never fail.
 */
export interface AnswerCache {
  /** Where the answers are, for messages: a path, or a Redis URL with its password hidden. */
  readonly location: string;
  /** The answer kept under `key`, or undefined (none, or it has expired). */
  get(key: string): Promise<CachedAnswer | undefined>;
  /** Keeps `answer` under `key`, replacing any; resolves once it is written where every later `get` sees it. */
  put(key: string, answer: CachedAnswer): Promise<void>;
  /** Writes what is pending and lets go of the store; calls after it reject. */
  close(): Promise<void>;
}

/** What a cache does unless told otherwise. */
export const ANSWER_CACHE_DEFAULTS = Object.freeze({
  /**
   * How long an answer is kept, in ms: forever. The key holds the model and the whole request, so
   * an answer does not go stale with time — a changed model or prompt is a new key; a store that
   * must stay small is bounded by size better than by age (Redis's `maxmemory` with an LRU policy).
   */
  ttlMs: Infinity,
});
