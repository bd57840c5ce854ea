import type { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from './redis-target.ts';
import { checkKeyPart, REDIS_DEFAULTS } from './redis-connection.ts';
import { checkNumber, checkObject, expected } from '../validation/checks.ts';
import { ANSWER_CACHE_DEFAULTS, type AnswerCache, type CachedAnswer } from '../cache/answer-cache.ts';

/** Where a Redis answer cache keeps its answers, and for how long. */
export interface RedisAnswerCacheOptions {
  /** The Redis: `(await connectRedis(url, …)).target` — one server or a Cluster, TLS, an ACL user. */
  readonly target: RedisTarget;
  /** Begins every key, before `answer:`. @default REDIS_DEFAULTS.prefix ("news-processor:") */
  readonly prefix?: string | undefined;
  /** How long an answer is kept after it was put, in ms (> 0; `Infinity`: until Redis evicts it). @default ANSWER_CACHE_DEFAULTS.ttlMs (Infinity) */
  readonly ttlMs?: number | undefined;
}

/**
 * Answers in Redis, shared by every process, machine and queue worker that uses it: one string
 * key per answer (`<prefix>answer:<key>`, JSON), read with `GET` and written with one `SET` (with
 * `PX` under a TTL) — whole or not at all, on one server or spread over a Cluster's slots. A call
 * with no answer within the target's timeout rejects (the gate takes it as a miss). Its own
 * client, made from `target`; needs the `ioredis` package.
 */
export class RedisAnswerCache implements AnswerCache {
  /** The Redis URL, its password hidden. */
  readonly location: string;
  readonly #client: Redis | Cluster;
  readonly #prefix: string;
  readonly #ttlMs: number;

  constructor(options: RedisAnswerCacheOptions) {
    checkObject('options', options);
    const { target } = options;
    if (typeof target?.createClient !== 'function') throw expected('target', 'a RedisTarget (connectRedis(url).target)', target);
    this.#prefix = options.prefix ?? REDIS_DEFAULTS.prefix;
    checkKeyPart('prefix', this.#prefix, true);
    this.#ttlMs = options.ttlMs ?? ANSWER_CACHE_DEFAULTS.ttlMs;
    checkNumber('ttlMs', this.#ttlMs, { min: 0, minExclusive: true, finite: false, unit: 'ms' });
    this.location = target.url;
    // One try per call, bounded by the timeout: a cache that does not answer is a miss, not a wait.
    this.#client = target.createClient({ maxRetriesPerRequest: 1, commandTimeout: target.timeoutMs });
    // Without a listener an 'error' event would crash the process; a failed call says it anyway.
    this.#client.on('error', () => {});
  }

  /** The answer kept under `key` (`GET`), or undefined; rejects when Redis does not answer in time. */
  async get(key: string): Promise<CachedAnswer | undefined> {
    const text = await this.#client.get(this.#key(key));
    if (text === null) return undefined;
    const { o, u } = JSON.parse(text) as { o: CachedAnswer['output']; u?: [number, number] };
    return u === undefined ? { output: o } : { output: o, usage: { inputTokens: u[0], outputTokens: u[1] } };
  }

  /** Keeps `answer` under `key` (one `SET`, with `PX` under a TTL). */
  async put(key: string, answer: CachedAnswer): Promise<void> {
    const { usage } = answer;
    const text = JSON.stringify(
      usage === undefined ? { o: answer.output } : { o: answer.output, u: [usage.inputTokens, usage.outputTokens] },
    );
    if (this.#ttlMs === Infinity) await this.#client.set(this.#key(key), text);
    else await this.#client.set(this.#key(key), text, 'PX', Math.max(1, Math.round(this.#ttlMs)));
  }

  /**
   * Rejects, before any call, when this Redis user may not read and write the answers (an ACL
   * without `GET` or `SET` on `<prefix>answer:*`), or Redis does not answer; writes nothing that
   * stays (a probe key that expires at once).
   */
  async check(): Promise<void> {
    const probe = this.#key('check');
    await this.#client.get(probe);
    await this.#client.set(probe, '', 'PX', 1);
  }

  /** Closes its client once the writes sent are answered. */
  async close(): Promise<void> {
    // QUIT is answered after the writes sent before it: none is lost.
    await this.#client.quit().catch(() => this.#client.disconnect());
  }

  #key(key: string): string {
    return `${this.#prefix}answer:${key}`;
  }
}
