import type { RateLimitDecision, RateLimitStore } from '../limiter/keyed-limiter.ts';
import { checkNumber, checkObject } from '../validation/checks.ts';
import { checkConnection, checkKeyPart, REDIS_DEFAULTS, type RedisConnection } from './redis-connection.ts';
import { GIVE, readMicroseconds, TAKE } from './scripts.ts';

/** What `new RedisRateLimitStore()` takes: the connection, a key prefix, each key's rate and burst. */
export interface RedisRateLimitStoreOptions {
  /** Where the buckets live ({@link connectRedis}). */
  readonly connection: RedisConnection;
  /** Tokens added per second to each key's bucket. `Infinity` allows everything (and never asks Redis); `0` only the burst. */
  readonly rate: number;
  /** Each key's capacity; a new key starts full. */
  readonly burst: number;
  /**
   * Begins every key (`<prefix><key>`). Give each limit its own: two limits on one prefix would
   * count the same key's takes together.
   * @default REDIS_DEFAULTS.prefix + "rl:" ("news-processor:rl:")
   */
  readonly prefix?: string | undefined;
}

/**
 * Per-key token buckets kept in Redis, for servers behind a load balancer: every process using the
 * same Redis and prefix enforces one limit per client. One round trip per `take` (a script on Redis
 * `TIME`), with `KeyedLimiter`'s semantics and decision fields; each key expires when its bucket
 * would be full again, so Redis holds only the clients that are not full. A take that gets no
 * answer within the connection's timeout rejects with `LimiterUnavailableError` (the middleware's
 * `onStoreError` decides what the request gets).
 */
export class RedisRateLimitStore implements RateLimitStore {
  /** Each key's refill rate, in requests per second. */
  readonly rate: number;
  /** Each key's bucket size. */
  readonly burst: number;
  readonly #connection: RedisConnection;
  readonly #prefix: string;
  readonly #rateText: string;
  readonly #burstText: string;

  constructor(options: RedisRateLimitStoreOptions) {
    checkObject('options', options);
    const { connection, rate, burst, prefix = `${REDIS_DEFAULTS.prefix}rl:` } = options;
    checkConnection(connection);
    checkNumber('rate', rate, { min: 0, finite: false, unit: 'tokens per second' });
    checkNumber('burst', burst, { min: 0 });
    checkKeyPart('prefix', prefix, true);
    this.rate = rate;
    this.burst = burst;
    this.#connection = connection;
    this.#prefix = prefix;
    this.#rateText = String(rate);
    this.#burstText = String(burst);
  }

  /**
   * Makes sure, before serving, that the buckets can be kept where they are: that the Redis user
   * may run the script on keys under the prefix (`RedisPermissionError` names what it lacks), and
   * that the server serves them (`RedisRedirectError` from a cluster node reached out of cluster
   * mode; each key has its own slot, so on a cluster this asks the node of one sample key). Changes
   * nothing.
   */
  async check(): Promise<void> {
    if (this.rate === Infinity) return;
    await this.#connection.checkAccess([`${this.#prefix}check`], [TAKE, GIVE], `${this.#prefix}*`);
  }

  /** Takes `n` tokens from `key`'s bucket in Redis if it holds them, and says whether it did, what remains and when to retry. */
  async take(key: string, n = 1): Promise<RateLimitDecision> {
    if (!(n >= 0 && n < Infinity)) checkNumber('n', n, { min: 0 });
    if (this.rate === Infinity) return { allowed: true, limit: this.burst, remaining: Math.floor(this.burst), resetMs: 0, retryAfterMs: 0 };
    const reply = (await this.#connection.run(TAKE, [this.#prefix + key], [this.#rateText, this.#burstText, n])) as readonly unknown[];
    return {
      allowed: reply[0] === 1,
      limit: this.burst,
      remaining: reply[1] as number,
      resetMs: readMicroseconds(reply[2]),
      retryAfterMs: readMicroseconds(reply[3]),
    };
  }

  /** Puts `n` tokens taken before back in `key`'s bucket in Redis, never past its burst (one round trip). */
  async give(key: string, n: number): Promise<void> {
    if (!(n >= 0 && n < Infinity)) checkNumber('n', n, { min: 0 });
    if (this.rate === Infinity || n === 0) return;
    await this.#connection.run(GIVE, [this.#prefix + key], [this.#rateText, this.#burstText, n]);
  }
}
