import type { Logger } from 'pino';
import type { LlmResponse } from '../provider/provider.ts';
import type { AnswerCache, CachedAnswer } from './answer-cache.ts';

/** How a call through the cache ended: made (a miss), or answered without a call (a hit). */
export type Cached<T> = { readonly made: T; readonly hit?: undefined } | { readonly made?: undefined; readonly hit: CachedAnswer };

/**
 * The cache in front of a gate's calls, and one call per key at a time: a call looks its key up
 * first, and while a call for a key is under way, identical calls wait for its answer rather than
 * make their own. A stored answer, or the one the call under way got, ends the call as a hit; a
 * miss is made by `make`, and its answer kept. A call under way that fails leaves those waiting
 * to go round again: one of them makes the call. A store that fails is a miss (and a write that
 * fails is lost): logged, never the call's failure.
 */
export class OneCallPerKey {
  readonly #cache: AnswerCache;
  readonly #logger: Logger;
  /** The answer each key's call under way will bring (undefined: it failed). */
  readonly #underWay = new Map<string, Promise<CachedAnswer | undefined>>();

  constructor(cache: AnswerCache, logger: Logger) {
    this.#cache = cache;
    this.#logger = logger;
  }

  async call<T extends { readonly response: LlmResponse }>(
    key: string,
    signal: AbortSignal | undefined,
    make: () => Promise<T>,
  ): Promise<Cached<T>> {
    for (;;) {
      const underWay = this.#underWay.get(key);
      if (underWay !== undefined) {
        const answer = await abortable(underWay, signal);
        if (answer !== undefined) return { hit: answer };
        continue;
      }
      let settle!: (answer: CachedAnswer | undefined) => void;
      // Taken before the store is asked: an identical call meanwhile waits for this one.
      this.#underWay.set(key, new Promise((resolve) => (settle = resolve)));
      let answer: CachedAnswer | undefined;
      try {
        const kept = await this.#get(key);
        if (kept !== undefined) {
          answer = kept;
          return { hit: kept };
        }
        const made = await make();
        const { output, usage } = made.response;
        answer = usage === undefined ? { output } : { output, usage };
        // Not waited for: the answer is the caller's now; the store's commit follows, and close() waits for it.
        this.#cache
          .put(key, answer)
          .catch((error: unknown) => this.#logger.warn({ err: error, cache: this.#cache.location }, 'answer not cached'));
        return { made };
      } finally {
        this.#underWay.delete(key);
        settle(answer);
      }
    }
  }

  async #get(key: string): Promise<CachedAnswer | undefined> {
    try {
      return await this.#cache.get(key);
    } catch (error) {
      this.#logger.warn({ err: error, cache: this.#cache.location }, 'answer cache unavailable: called the provider');
      return undefined;
    }
  }
}

/** `promise`, or `signal.reason` as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
