// An answer cache in a Map, for tests of what is in front of a store: it can be made to fail, and counts its calls.
import type { AnswerCache, CachedAnswer } from '../../src/cache/answer-cache.ts';

export class MemoryCache implements AnswerCache {
  readonly location = 'memory';
  readonly entries = new Map<string, CachedAnswer>();
  gets = 0;
  puts = 0;
  /** While set, every get and put rejects with it. */
  failure: Error | undefined;

  async get(key: string): Promise<CachedAnswer | undefined> {
    this.gets++;
    if (this.failure !== undefined) throw this.failure;
    return this.entries.get(key);
  }

  async put(key: string, answer: CachedAnswer): Promise<void> {
    this.puts++;
    if (this.failure !== undefined) throw this.failure;
    this.entries.set(key, answer);
  }

  async close(): Promise<void> {}
}
