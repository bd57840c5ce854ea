// An answer cache in a Map, for tests of what is in front of a store: it can be made to fail or to
// write slowly, and counts its calls.
import type { AnswerCache, CachedAnswer } from '../../src/cache/answer-cache.ts';
import { sleep, type Clock } from '../../src/clock.ts';

export class MemoryCache implements AnswerCache {
  readonly location = 'memory';
  readonly entries = new Map<string, CachedAnswer>();
  gets = 0;
  puts = 0;
  /** While set, every get and put rejects with it. */
  failure: Error | undefined;
  /** With `clock`: how long a put takes to commit, in ms; a get sees the answer only then (an LMDB write, a Redis round trip). */
  readonly #commit: { readonly clock: Clock; readonly ms: number } | undefined;

  constructor(commit?: { readonly clock: Clock; readonly ms: number }) {
    this.#commit = commit;
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    this.gets++;
    if (this.failure !== undefined) throw this.failure;
    return this.entries.get(key);
  }

  async put(key: string, answer: CachedAnswer): Promise<void> {
    this.puts++;
    if (this.failure !== undefined) throw this.failure;
    if (this.#commit !== undefined) await sleep(this.#commit.clock, this.#commit.ms);
    this.entries.set(key, answer);
  }

  async close(): Promise<void> {}
}
