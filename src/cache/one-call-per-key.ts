import type { Logger } from 'pino';
import type { LlmResponse } from '../provider/provider.ts';
import type { AnswerCache, CachedAnswer } from './answer-cache.ts';

/** How a call through the cache ended: made (a miss), or answered without a call (a hit, and the key it was kept under). */
export type Cached<T> =
  | { readonly made: T; readonly hit?: undefined; readonly key?: undefined }
  | { readonly made?: undefined; readonly hit: CachedAnswer; readonly key: string };

/** An answer a call under way brought, and the key it was kept under. */
interface Settled {
  readonly key: string;
  readonly answer: CachedAnswer;
}

/**
 * The cache in front of a route's calls, and one call per key at a time: a call looks its keys up
 * first, and while a call for one of them is under way, identical calls wait for its answer rather
 * than make their own. A stored answer, or the one the call under way got, ends the call as a hit;
 * a miss is made by `make`, and its answer kept — and it answers identical calls itself until the
 * store has it readable, so that a call is made once however its twins are timed. A call under way
 * that fails leaves those waiting to go round again: one of them makes the call. A store that
 * fails is a miss (and a write that fails is lost): logged, never the call's failure.
 *
 * A call may have several keys: a pool's members may be different vendors or models, each shaping
 * its answer in its own way, and a call through the pool may be answered by any of them. It is a
 * hit under any of its keys (the first listed that holds one), and its answer is kept under the key
 * of the one that made it only: an answer is another caller's hit only where that caller's keys
 * hold that key.
 */
export class OneCallPerKey {
  readonly #cache: AnswerCache;
  readonly #logger: Logger;
  /** The answer each key's call under way will bring (undefined: it failed, or was kept under no key), or brought and is storing. */
  readonly #underWay = new Map<string, Promise<Settled | undefined>>();

  constructor(cache: AnswerCache, logger: Logger) {
    this.#cache = cache;
    this.#logger = logger;
  }

  /**
   * The answer kept under the first of `keys` that holds one, or `make`'s, kept under the key
   * `keptUnder` names for it (undefined: not kept, as an answer that came from a cache itself).
   */
  async call<T extends { readonly response: LlmResponse }>(
    keys: readonly string[],
    signal: AbortSignal | undefined,
    make: () => Promise<T>,
    keptUnder: (made: T) => string | undefined = () => keys[0],
  ): Promise<Cached<T>> {
    for (;;) {
      const underWay = this.#firstUnderWay(keys);
      if (underWay !== undefined) {
        const settled = await abortable(underWay, signal);
        if (settled !== undefined && keys.includes(settled.key)) return { hit: settled.answer, key: settled.key };
        continue;
      }
      let settle!: (settled: Settled | undefined) => void;
      // Taken before the store is asked: an identical call meanwhile waits for this one.
      const mine = new Promise<Settled | undefined>((resolve) => (settle = resolve));
      for (const key of keys) this.#underWay.set(key, mine);
      let settled: Settled | undefined;
      let stored: Promise<void> | undefined;
      try {
        const kept = await this.#get(keys);
        if (kept !== undefined) {
          settled = kept;
          return { hit: kept.answer, key: kept.key };
        }
        const made = await make();
        const key = keptUnder(made);
        if (key === undefined) return { made };
        const { output, usage } = made.response;
        settled = { key, answer: usage === undefined ? { output } : { output, usage } };
        // Not waited for: the answer is the caller's now; the store's commit follows, and close() waits for it.
        stored = this.#cache.put(key, settled.answer);
        return { made };
      } finally {
        // Its key stays taken by the answer until the store can give it: a twin that comes meanwhile
        // is answered by it, not made again. The other keys go now (a twin under them alone goes round).
        for (const key of keys) if (stored === undefined || key !== settled!.key) this.#underWay.delete(key);
        settle(settled);
        if (stored !== undefined) {
          const key = settled!.key;
          stored.then(
            () => this.#release(key, mine),
            (error: unknown) => {
              this.#release(key, mine);
              this.#logger.warn({ err: error, cache: this.#cache.location }, 'answer not cached');
            },
          );
        }
      }
    }
  }

  /** Lets `key` go, unless another call has taken it since. */
  #release(key: string, mine: Promise<Settled | undefined>): void {
    if (this.#underWay.get(key) === mine) this.#underWay.delete(key);
  }

  #firstUnderWay(keys: readonly string[]): Promise<Settled | undefined> | undefined {
    for (const key of keys) {
      const underWay = this.#underWay.get(key);
      if (underWay !== undefined) return underWay;
    }
    return undefined;
  }

  /** The first of `keys` the store holds an answer for; asked together, so several keys cost one round trip's time. */
  async #get(keys: readonly string[]): Promise<Settled | undefined> {
    let failure: unknown;
    const answers = await Promise.all(
      keys.map(async (key) => {
        try {
          return await this.#cache.get(key);
        } catch (error) {
          failure ??= error;
          return undefined;
        }
      }),
    );
    if (failure !== undefined)
      this.#logger.warn({ err: failure, cache: this.#cache.location }, 'answer cache unavailable: called the provider');
    const index = answers.findIndex((answer) => answer !== undefined);
    return index < 0 ? undefined : { key: keys[index]!, answer: answers[index]! };
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
