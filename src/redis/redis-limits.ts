import type { Logger } from 'pino';
import { sleep, systemClock } from '../clock.ts';
import { LocalLimits } from '../limits/local-limits.ts';
import {
  amountOf,
  checkLimitSpecs,
  frozenSpecs,
  SETTLED,
  unusedOf,
  LimitTooSmallError,
  type CallCost,
  type LimitAcquireOptions,
  type LimitGrant,
  type LimitKind,
  type LimitSpec,
  type ProviderLimits,
  type TokensUsed,
} from '../limits/provider-limits.ts';
import { isLimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { MaxWaitExceededError } from '../limiter/token-bucket.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkNumber, checkObject } from '../validation/checks.ts';
import { checkConnection, checkKeyPart, REDIS_DEFAULTS, type RedisConnection } from './redis-connection.ts';
import { isRedisRedirectError } from './redis-errors.ts';
import { CANCEL, LOWER, RESERVE, readMicroseconds, SET_RATE, SETTLE, type RedisScript } from './scripts.ts';

export interface RedisLimitsOptions {
  /** Where the quota lives ({@link connectRedis}); one connection serves every provider of a process. */
  readonly connection: RedisConnection;
  /** Every limit the provider sets, as for `LocalLimits`. A limit at rate `Infinity` limits nothing and is not kept. */
  readonly limits: readonly LimitSpec[];
  /**
   * The quota's name: every process using the same Redis, prefix and quota key shares one quota
   * (the provider's name, usually; two names for one API key would each get the full quota).
   */
  readonly quotaKey: string;
  /** Begins every key. @default REDIS_DEFAULTS.prefix ("news-processor:") */
  readonly prefix?: string | undefined;
  /**
   * While Redis is unavailable, go on with a bucket in this process at this share of every limit,
   * in (0, 1]: 1/3 when three processes share the quota.
   * @default none (calls fail with `LimiterUnavailableError`, so the caller can stop)
   */
  readonly fallbackShare?: number | undefined;
  /**
   * Told when calls move to the local bucket and back (at error level: the quota is no longer shared).
   * @default silentLogger (says nothing)
   */
  readonly logger?: Logger | undefined;
  /**
   * With `fallbackShare`: called when calls move to the local bucket (`local: true`) and back,
   * with the sentence the logger is told — for a caller to say it where a person sees it (the
   * logger then hears it at warn level, not error). @default none
   */
  readonly onFallback?: ((change: { readonly local: boolean; readonly message: string }) => void) | undefined;
}

/** One limit kept in Redis: its spec, its key, and its configured rate and burst as the scripts read them. */
interface SharedLimit {
  readonly spec: LimitSpec;
  readonly key: string;
  /** The configured rate as text: what the compare-and-set on the shared rate compares. */
  readonly rateText: string;
  readonly burstText: string;
}

/**
 * A provider's limits kept in Redis, shared exactly by every process that uses the same quota key:
 * requests and tokens per minute, with the burst, across processes and machines.
 *
 * Each call is one round trip: a script reserves its whole cost on every limit at once against
 * Redis `TIME` — nothing is spent when any limit would keep it past `maxWaitMs` — and answers when
 * the call may go; the caller sleeps here until then (abortable). That is x/time/rate's reservation
 * model across processes: grants are ordered by arrival at Redis, the rate holds without polling,
 * nothing spins. An abort while waiting cancels the reservation by `Reservation.Cancel`'s rule
 * (tokens that later reservations already count on stay spent); `settle()` refunds or debits the
 * token estimate as `LocalLimits` does. Waiting calls are served by arrival, not by `rank`.
 *
 * The request rate is shared too. `rate` is the rate in force as Redis last said it; `setRate` is a
 * compare-and-set against that rate, so processes that cut on the same cluster of 429s make one
 * cut — the first to arrive wins, the others adopt its rate (docs/shared-quotas.md says what an adaptive
 * rate must do to cooperate). `lowerTo` (header sync) never raises, so every process reporting the
 * same header lowers once. `backlogMs` answers from the last reply.
 *
 * When Redis gives no answer within the connection's timeout, calls fail with
 * `LimiterUnavailableError` — or, with `fallbackShare`, go on with a local bucket at that share
 * until Redis answers again. A Redis that lost its state starts the quota full: at most one extra
 * burst.
 */
export class RedisLimits implements ProviderLimits {
  readonly specs: readonly LimitSpec[];
  readonly countsTokens: boolean;
  /** Other processes take from this quota: an article's deadline starts at its first grant. */
  readonly shared = true;
  readonly #connection: RedisConnection;
  readonly #logger: Logger;
  /** The limits kept in Redis (finite rates), the request limit first. */
  readonly #shared: readonly SharedLimit[];
  readonly #keys: readonly string[];
  readonly #requests: SharedLimit | undefined;
  readonly #fallback: LocalLimits | undefined;
  readonly #fallbackShare: number;
  readonly #prefix: string;
  #onFallback = false;
  readonly #onFallbackChange: RedisLimitsOptions['onFallback'];
  /** Time spent on the local bucket before the current stretch, ms, and when the current one began. */
  #localBeforeMs = 0;
  #localSinceMs = 0;
  #localStretches = 0;
  /** The request rate in force, and as Redis wrote it (what a compare-and-set compares). */
  #rate: number;
  #rateText: string;
  /** Calls sent, numbered; a reply to a call sent before the last rate change does not speak for the rate. */
  #sent = 0;
  #rateChangeSent = 0;
  /** The request bucket's tokens after the last reservation, and when its reply came (local clock). */
  #tokensAfterReply: number | undefined;
  #replyAtMs = 0;

  constructor(options: RedisLimitsOptions) {
    checkObject('options', options);
    const { connection, limits, quotaKey, prefix = REDIS_DEFAULTS.prefix, fallbackShare } = options;
    checkConnection(connection);
    checkLimitSpecs(limits);
    limits.forEach((spec, index) => {
      checkNumber(`limits[${index}].rate`, spec.rate, { min: 0, finite: false, unit: 'per second' });
      checkNumber(`limits[${index}].burst`, spec.burst, { min: 0 });
    });
    checkKeyPart('quotaKey', quotaKey, false);
    checkKeyPart('prefix', prefix, true);
    if (fallbackShare !== undefined) checkNumber('fallbackShare', fallbackShare, { min: 0, minExclusive: true, max: 1 });
    this.#connection = connection;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'redis-limits', quota: quotaKey });
    this.specs = frozenSpecs(limits);
    this.countsTokens = this.specs.some((spec) => spec.kind !== 'requests');
    this.#shared = this.specs
      .filter((spec) => spec.rate !== Infinity)
      .sort((a, b) => Number(b.kind === 'requests') - Number(a.kind === 'requests'))
      .map((spec) => ({ spec, key: `${prefix}{${quotaKey}}:${spec.kind}`, rateText: String(spec.rate), burstText: String(spec.burst) }));
    this.#keys = this.#shared.map((limit) => limit.key);
    this.#requests = this.#shared[0]?.spec.kind === 'requests' ? this.#shared[0] : undefined;
    this.#rate = this.#requests?.spec.rate ?? Infinity;
    this.#rateText = this.#requests?.rateText ?? '';
    this.#fallbackShare = fallbackShare ?? 0;
    this.#onFallbackChange = options.onFallback;
    this.#prefix = prefix;
    this.#fallback =
      fallbackShare === undefined
        ? undefined
        : new LocalLimits({
            limits: this.specs.map((spec) => ({
              kind: spec.kind,
              rate: spec.rate * fallbackShare,
              // A request needs a whole token: a share of a burst of 3 is still one call at a time.
              burst: Math.max(1, Math.floor(spec.burst * fallbackShare)),
            })),
          });
  }

  /** Every key this quota is kept under (one per limit, hash-tagged by the quota key: one Redis Cluster slot). */
  get keys(): readonly string[] {
    return this.#keys;
  }

  get rate(): number {
    return this.#rate;
  }

  /**
   * Makes sure, before the first call, that this quota can be kept where it is: that the Redis
   * user may run the scripts on its keys (`RedisPermissionError` names what it lacks and the key
   * pattern it needs), and that the server serves them (`RedisRedirectError` from a cluster node
   * reached out of cluster mode). Changes nothing in the buckets.
   */
  async check(): Promise<void> {
    if (this.#keys.length === 0) return;
    await this.#connection.checkAccess(this.#keys, [RESERVE, CANCEL, SETTLE, LOWER, SET_RATE], `${this.#prefix}*`);
  }

  async acquire(cost: CallCost, options: LimitAcquireOptions = {}): Promise<LimitGrant> {
    const { signal } = options;
    const maxWaitMs = options.maxWaitMs ?? Infinity;
    signal?.throwIfAborted();
    const args: (string | number)[] = [maxWaitMs === Infinity ? -1 : maxWaitMs];
    for (const { spec, rateText, burstText } of this.#shared) {
      const needed = amountOf(spec.kind, cost);
      if (needed > spec.burst) throw new LimitTooSmallError(spec.kind, needed, spec.burst);
      args.push(rateText, burstText, needed);
    }
    if (this.#shared.length === 0) return SETTLED;
    if (this.#fallback !== undefined && !this.#connection.available) return this.#acquireLocally(cost, options, maxWaitMs);
    if (this.#onFallback) this.#backOnRedis();

    const startMs = systemClock.now();
    const sent = ++this.#sent;
    const pending = this.#connection.run(RESERVE, this.#keys, args);
    let reply: readonly unknown[];
    try {
      reply = (await abandonOnAbort(pending, signal, (late) => this.#cancelLate(late, cost))) as readonly unknown[];
    } catch (error) {
      // A redirect says the quota is not where this process looks: a local bucket would not share it either.
      if (this.#fallback === undefined || !isLimiterUnavailableError(error) || isRedisRedirectError(error)) throw error;
      return this.#acquireLocally(cost, options, Math.max(0, maxWaitMs - (systemClock.now() - startMs)));
    }
    if ((reply[0] as number) < 0) throw new MaxWaitExceededError(readMicroseconds(reply[1]), maxWaitMs);
    const waitMs = (reply[0] as number) / 1000;
    this.#observe(reply, sent);
    if (waitMs > 0) {
      try {
        await sleep(systemClock, waitMs, signal);
      } catch (error) {
        this.#cancel(cost, reply);
        throw error;
      }
    }
    return this.countsTokens ? new RedisGrant((actual) => this.#settle(cost, actual)) : SETTLED;
  }

  setRate(rate: number): void {
    checkNumber('rate', rate, { min: 0, finite: false, unit: 'calls per second' });
    const requests = this.#requests;
    if (requests === undefined) return;
    const target = Math.min(rate, requests.spec.rate);
    this.#fallback?.setRate(target * this.#fallbackShare);
    if (target === this.#rate) return;
    const seen = this.#rateText;
    this.#rate = target;
    this.#rateText = String(target);
    const sent = ++this.#sent;
    this.#rateChangeSent = sent;
    const args = [requests.rateText, requests.burstText, seen, this.#rateText];
    this.#connection.run(SET_RATE, [requests.key], args).then(
      (reply) => {
        // A later change is on its way, and its reply will say.
        if (sent !== this.#rateChangeSent) return;
        const [changed, text] = reply as readonly [number, string];
        if (changed !== 1) this.#logger.debug({ rate: text, wanted: target }, 'the shared rate was changed by another process: adopted');
        this.#rateText = text;
        this.#rate = Number(text);
      },
      (error: unknown) => this.#logger.debug({ err: error }, 'the shared rate could not be set'),
    );
  }

  lowerTo(kind: LimitKind, remaining: number): void {
    if (this.#fallback !== undefined && !this.#connection.available) {
      this.#fallback.lowerTo(kind, remaining * this.#fallbackShare);
      return;
    }
    const limit = this.#shared.find((candidate) => candidate.spec.kind === kind);
    if (limit === undefined) return;
    this.#fire(LOWER, [limit.key], [limit.rateText, limit.burstText, remaining]);
  }

  backlogMs(requests: number): number {
    if (this.#onFallback) return this.#fallback!.backlogMs(requests);
    const limit = this.#requests;
    if (limit === undefined || this.#tokensAfterReply === undefined) return 0;
    const rate = this.#rate;
    const elapsedMs = systemClock.now() - this.#replyAtMs;
    const tokens = Math.min(limit.spec.burst, this.#tokensAfterReply + (elapsedMs * rate) / 1000);
    if (tokens >= requests) return 0;
    return rate === 0 ? Infinity : ((requests - tokens) * 1000) / rate;
  }

  /** Gives back what a grant's estimate did not use, or takes what it overran. */
  #settle(estimate: CallCost, actual: TokensUsed): void {
    if (this.#fallback !== undefined && !this.#connection.available) return;
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const { spec, key, rateText, burstText } of this.#shared) {
      const change = unusedOf(spec.kind, estimate, actual);
      if (change === 0) continue;
      keys.push(key);
      args.push(rateText, burstText, change);
    }
    if (keys.length > 0) this.#fire(SETTLE, keys, args);
  }

  /** Reads a granted reservation's reply, keeping what it says of the shared rate and the request bucket. */
  #observe(reply: readonly unknown[], sent: number): void {
    if (this.#requests === undefined) return;
    this.#tokensAfterReply = (reply[1] as number) / 1e6;
    this.#replyAtMs = systemClock.now();
    if (sent > this.#rateChangeSent) {
      // Nil: no shared rate is set, the configured one is in force.
      this.#rateText = (reply[2] as string | null) ?? this.#requests.rateText;
      this.#rate = Number(this.#rateText);
    }
  }

  /**
   * Undoes a granted reservation that had to wait, told by its reply when it could act on each
   * limit and at what rate. One that could act at once has nothing to give back: its time to act
   * has passed when a cancel comes.
   */
  #cancel(cost: CallCost, reply: readonly unknown[]): void {
    if (reply[0] === 0) return;
    const args: (string | number)[] = [];
    this.#shared.forEach(({ spec, rateText, burstText }, index) => {
      // Only the first limit can hold a shared rate (the request limit, when there is one).
      const rateThen = index === 0 ? ((reply[2] as string | null) ?? rateText) : rateText;
      args.push(rateText, burstText, amountOf(spec.kind, cost), reply[3 + index] as number, rateThen);
    });
    this.#fire(CANCEL, this.#keys, args);
  }

  /** A reservation whose caller gave up before the reply came: cancelled once it does. */
  #cancelLate(late: Promise<unknown>, cost: CallCost): void {
    late.then(
      (reply) => {
        const granted = reply as readonly unknown[];
        if ((granted[0] as number) >= 0) this.#cancel(cost, granted);
      },
      () => {},
    );
  }

  #fire(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): void {
    this.#connection
      .run(script, keys, args)
      .catch((error: unknown) => this.#logger.debug({ err: error, script: script.name }, 'not applied'));
  }

  /**
   * How long calls have gone to the local bucket in all (ms, the current stretch included) and in
   * how many stretches: 0 and 0 while Redis has always answered.
   */
  get fallback(): { readonly localMs: number; readonly stretches: number } {
    const current = this.#onFallback ? systemClock.now() - this.#localSinceMs : 0;
    return { localMs: this.#localBeforeMs + current, stretches: this.#localStretches };
  }

  #acquireLocally(cost: CallCost, options: LimitAcquireOptions, maxWaitMs: number): Promise<LimitGrant> {
    if (!this.#onFallback) {
      this.#onFallback = true;
      this.#localSinceMs = systemClock.now();
      this.#localStretches++;
      const message = `Redis at ${this.#connection.url} is unavailable: the quota is no longer shared; going on with a local bucket at ${formatShare(this.#fallbackShare)} of it`;
      this.#log({ url: this.#connection.url, share: this.#fallbackShare }, message);
      this.#onFallbackChange?.({ local: true, message });
    }
    return this.#fallback!.acquire(cost, { ...options, maxWaitMs });
  }

  #backOnRedis(): void {
    this.#onFallback = false;
    this.#localBeforeMs += systemClock.now() - this.#localSinceMs;
    const message = `Redis at ${this.#connection.url} answers again: back on the shared quota`;
    this.#log({ url: this.#connection.url }, message);
    this.#onFallbackChange?.({ local: false, message });
  }

  /** A move to the local bucket or back: an error (the quota is no longer shared) unless a listener says it. */
  #log(fields: object, message: string): void {
    if (this.#onFallbackChange === undefined) this.#logger.error(fields, message);
    else this.#logger.warn(fields, message);
  }
}

/** A grant whose token estimate is squared in Redis, once. */
class RedisGrant implements LimitGrant {
  #settle: ((actual: TokensUsed) => void) | undefined;

  constructor(settle: (actual: TokensUsed) => void) {
    this.#settle = settle;
  }

  settle(actual: TokensUsed): void {
    const settle = this.#settle;
    this.#settle = undefined;
    settle?.(actual);
  }
}

/**
 * The promise, or `signal.reason` as soon as the signal aborts; an abandoned promise is handed to
 * `abandoned`, which deals with its outcome when it comes.
 */
function abandonOnAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined, abandoned: (late: Promise<T>) => void): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      abandoned(promise);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function formatShare(share: number): string {
  return `${Number((share * 100).toPrecision(3))}%`;
}
