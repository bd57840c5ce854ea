import { stat } from 'node:fs/promises';
import type { Database, RootDatabase } from 'lmdb';
import { loadOptional } from '../optional-package.ts';
import type { TokenUsage } from '../provider/provider.ts';
import { checkNumber, checkObject, checkString } from '../validation/checks.ts';
import { ANSWER_CACHE_DEFAULTS, type AnswerCache, type CachedAnswer } from './answer-cache.ts';

/** How an LMDB answer cache keeps its answers. */
export interface LmdbAnswerCacheOptions {
  /** How long an answer is kept after it was put, in ms (> 0; `Infinity`: for good). @default ANSWER_CACHE_DEFAULTS.ttlMs (Infinity) */
  readonly ttlMs?: number | undefined;
  /** The wall clock the expiry is read on, ms since the epoch: entries outlive the process. @default Date.now */
  readonly now?: (() => number) | undefined;
}

/** An entry as stored (msgpack): short names, as there may be millions. */
interface Entry {
  /** The output. */
  readonly o: CachedAnswer['output'];
  /** Input and output tokens, when the provider said. */
  readonly u?: readonly [number, number] | undefined;
  /** When it expires, ms since the epoch; absent: never. */
  readonly e?: number | undefined;
}

/**
 * Answers in an LMDB database: a memory-mapped B+tree in one directory (`data.mdb` and
 * `lock.mdb`), no server. Every write is an ACID transaction, so a process killed mid-write leaves
 * the entries it had committed and nothing torn; a read is a lookup in mapped memory, a few
 * microseconds, from any number of processes on the machine at once (LMDB locks between them).
 * Writes are batched into one transaction per tick and committed off the main thread: `put`
 * resolves at the commit. Needs the `lmdb` package (its binaries ship as npm packages).
 */
export class LmdbAnswerCache implements AnswerCache {
  /** The directory it is in. */
  readonly location: string;
  readonly #db: Database<Entry, string>;
  readonly #ttlMs: number;
  readonly #now: () => number;

  private constructor(db: RootDatabase<Entry, string>, path: string, options: LmdbAnswerCacheOptions) {
    this.#db = db;
    this.location = path;
    this.#ttlMs = options.ttlMs ?? ANSWER_CACHE_DEFAULTS.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Opens (making it, and the directories above it, when missing) the LMDB answer cache in the
   * directory `path`. Rejects with a `TypeError` for bad options, with `MissingPackageError` when
   * `lmdb` is not installed, and with an `Error` saying why when the directory cannot hold a
   * database (a file in the way, not writable).
   */
  static async open(path: string, options: LmdbAnswerCacheOptions = {}): Promise<LmdbAnswerCache> {
    checkString('path', path);
    checkObject('options', options);
    checkNumber('ttlMs', options.ttlMs ?? ANSWER_CACHE_DEFAULTS.ttlMs, { min: 0, minExclusive: true, finite: false, unit: 'ms' });
    // LMDB's own word for a file in the way is about its locks; this says what is wrong.
    if ((await stat(path).catch(() => undefined))?.isDirectory() === false) {
      throw new Error(`${path} is a file: the cache is a directory of its own (LMDB keeps data.mdb and lock.mdb in it)`);
    }
    const lmdb = await loadOptional('lmdb', 'the answer cache', () => import('lmdb'));
    // Versions and msgpack's shared structures are off: each entry stands alone, read whole.
    const db = lmdb.open<Entry, string>({ path, encoding: 'msgpack', sharedStructuresKey: undefined, useVersions: false });
    return new LmdbAnswerCache(db, path, options);
  }

  /** The answer kept under `key`, or undefined (none, or expired: then it is removed). A read of mapped memory. */
  async get(key: string): Promise<CachedAnswer | undefined> {
    const entry = this.#db.get(key);
    if (entry === undefined) return undefined;
    if (entry.e !== undefined && entry.e <= this.#now()) {
      // Expired: gone for the next reader too; a removal that fails leaves a miss all the same.
      this.#db.remove(key).catch(() => {});
      return undefined;
    }
    return entry.u === undefined ? { output: entry.o } : { output: entry.o, usage: usageOf(entry.u) };
  }

  /** Keeps `answer` under `key`; resolves at the commit of the transaction that holds it. */
  async put(key: string, answer: CachedAnswer): Promise<void> {
    const { usage } = answer;
    const entry: Entry = {
      o: answer.output,
      ...(usage !== undefined && { u: [usage.inputTokens, usage.outputTokens] as const }),
      ...(this.#ttlMs !== Infinity && { e: this.#now() + this.#ttlMs }),
    };
    await this.#db.put(key, entry);
  }

  /** Entries stored, expired ones included until they are read. */
  get size(): number {
    return (this.#db.getStats() as { entryCount: number }).entryCount;
  }

  /** Waits for the writes pending, then closes the database. */
  async close(): Promise<void> {
    await this.#db.committed;
    await this.#db.close();
  }
}

function usageOf([inputTokens, outputTokens]: readonly [number, number]): TokenUsage {
  return { inputTokens, outputTokens };
}
