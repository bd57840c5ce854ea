import type { Logger } from 'pino';
import { checkNumber, checkObject } from '../validation/checks.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { NANO_USD, type Budget, type BudgetHold, type BudgetReserveOptions } from '../quota/budget.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkConnection, checkKeyPart, REDIS_DEFAULTS, type RedisConnection } from './redis-connection.ts';
import { defineScript } from './scripts.ts';

/** What `new RedisBudget()` takes: the connection, the key the budget is kept under, the budget, a key prefix and a logger. */
export interface RedisBudgetOptions {
  /** Where the budget is kept ({@link connectRedis}). */
  readonly connection: RedisConnection;
  /** The budget's name: every process using the same Redis, prefix and key spends one budget. */
  readonly key: string;
  /** The budget in USD, finite, > 0: each process holds the shared spend to it. */
  readonly maxUsd: number;
  /** Begins the key. @default REDIS_DEFAULTS.prefix ("news-processor:") */
  readonly prefix?: string | undefined;
  /** Told when a refund could not be made (Redis gone): the money stays counted as spent. @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
  /**
   * How long a hold that does not fit waits for the holds out (any process's) to settle, in ms:
   * a process that died holding never settles, so the wait is bounded; past it the hold is
   * refused. @default REDIS_BUDGET_DEFAULTS.settleWaitMs (60 000)
   */
  readonly settleWaitMs?: number | undefined;
  /** Time source for that wait. @default systemClock */
  readonly clock?: Clock | undefined;
}

/** What a Redis budget does unless told otherwise. */
export const REDIS_BUDGET_DEFAULTS = Object.freeze({
  /** Ms a hold waits for others to settle: longer than a call takes, short enough to end a run a dead process left holding. */
  settleWaitMs: 60_000,
  /** Ms between the first looks at the budget while waiting; doubled each time up to `maxPollMs`. */
  firstPollMs: 25,
  maxPollMs: 1000,
});

/**
 * Holds `ARGV[2]` nano-dollars when the spend so far (held included) leaves room under `ARGV[1]`.
 * KEYS[1]: spent, unknown and held together; KEYS[2]: held; KEYS[3]: kept for calls whose fate is
 * unknown. Reply: {1 | 0, all together after (or as they stand), held, unknown, as text}.
 */
const HOLD = defineScript(
  'newsProcessorBudgetHold3',
  `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local unknown = redis.call('GET', KEYS[3]) or '0'
if used + tonumber(ARGV[2]) > tonumber(ARGV[1]) then
  return { 0, tostring(used), redis.call('GET', KEYS[2]) or '0', unknown }
end
return { 1, tostring(redis.call('INCRBY', KEYS[1], ARGV[2])), tostring(redis.call('INCRBY', KEYS[2], ARGV[2])), unknown }
`,
);

/**
 * Settles a hold of `ARGV[2]` nano-dollars, giving `ARGV[1]` of it back and keeping `ARGV[3]` of
 * it as unknown (perhaps billed). KEYS as for HOLD. Reply: {all together after, held after,
 * unknown after, as text}.
 */
const RELEASE = defineScript(
  'newsProcessorBudgetRelease3',
  `return { tostring(redis.call('DECRBY', KEYS[1], ARGV[1])), tostring(redis.call('DECRBY', KEYS[2], ARGV[2])), tostring(redis.call('INCRBY', KEYS[3], ARGV[3])) }`,
);

/**
 * A budget kept in Redis: every process on the same key spends one budget, never more in total.
 * Three integers of nano-dollars: spent, unknown and held together; held; and unknown — the worst
 * cases kept for calls whose fate is unknown (a timeout, a connection broken mid-request), counted
 * against the budget but not as spent. A hold is one round trip that adds the call's worst case
 * only if it fits (one script, atomic), and settling gives back what the call did not cost (all of
 * it for a call that never reached the provider). A hold that does not fit while holds are out looks again, less and less often,
 * until it fits or `settleWaitMs` has passed. The keys never expire — a budget is not refilled by
 * time — and a process that dies holding money leaves it held (at most its calls in flight, at
 * their worst case): never overspent, and the others stop waiting for it after `settleWaitMs`.
 * `DEL` the three keys to start a budget afresh. When Redis does not answer, holding fails with
 * `LimiterUnavailableError`, as the shared limits do.
 */
export class RedisBudget implements Budget {
  /** The budget, in USD. */
  readonly maxUsd: number;
  readonly #maxNano: number;
  readonly #connection: RedisConnection;
  readonly #key: string;
  readonly #prefix: string;
  readonly #heldKey: string;
  readonly #unknownKey: string;
  readonly #logger: Logger;
  readonly #settleWaitMs: number;
  readonly #clock: Clock;
  #usedNano = 0;
  #heldNano = 0;
  #unknownNano = 0;

  constructor(options: RedisBudgetOptions) {
    checkObject('options', options);
    const { connection, key, maxUsd, prefix = REDIS_DEFAULTS.prefix } = options;
    checkConnection(connection);
    checkKeyPart('key', key, false);
    checkKeyPart('prefix', prefix, true);
    checkNumber('maxUsd', maxUsd, { min: 0, minExclusive: true, unit: 'USD' });
    this.maxUsd = maxUsd;
    this.#maxNano = Math.floor(maxUsd * NANO_USD + 1e-6);
    this.#connection = connection;
    // One key, hash-tagged by the budget's name: on a Redis Cluster it lives on one node.
    this.#key = `${prefix}{budget:${key}}`;
    this.#heldKey = `${this.#key}:held`;
    this.#unknownKey = `${this.#key}:unknown`;
    this.#prefix = prefix;
    this.#settleWaitMs = options.settleWaitMs ?? REDIS_BUDGET_DEFAULTS.settleWaitMs;
    checkNumber('settleWaitMs', this.#settleWaitMs, { min: 0, unit: 'ms' });
    this.#clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'redis-budget', budget: key });
  }

  /**
   * The budget's Redis key: spent, unknown and held together, in nano-dollars (what is held alone
   * is in the same key with `:held` after it, what is kept for calls of unknown fate with `:unknown`).
   */
  get key(): string {
    return this.#key;
  }

  /**
   * Makes sure, before the first call, that the Redis user may keep the budget here: run its
   * scripts on its key, and `GET`, `INCRBY`, `DECRBY` inside them (`RedisPermissionError` names
   * what it lacks). Changes nothing.
   */
  async check(): Promise<void> {
    await this.#connection.checkAccess([...this.#keys], [HOLD, RELEASE], `${this.#prefix}*`, ['get', 'incrby', 'decrby']);
  }

  get #keys(): readonly [string, string, string] {
    return [this.#key, this.#heldKey, this.#unknownKey];
  }

  /** Spent so far (settled), in USD, as this process last knew it. */
  get spentUsd(): number {
    return (this.#usedNano - this.#heldNano - this.#unknownNano) / NANO_USD;
  }

  /** Kept for calls whose fate is unknown (perhaps billed), by every process, in USD, as this process last knew it. */
  get unknownUsd(): number {
    return this.#unknownNano / NANO_USD;
  }

  /** Held by calls not yet settled, in USD, as this process last knew it. */
  get heldUsd(): number {
    return this.#heldNano / NANO_USD;
  }

  /**
   * Holds `nanoUsd` in Redis, atomically, when what is spent and held there leaves room for it;
   * otherwise asks again as the holds of every process settle, for at most `settleWaitMs`, and
   * resolves with undefined, holding nothing, when what is spent with nothing held cannot cover it.
   */
  async reserve(nanoUsd: number, options: BudgetReserveOptions = {}): Promise<BudgetHold | undefined> {
    checkNumber('nanoUsd', nanoUsd, { min: 0 });
    const { signal } = options;
    signal?.throwIfAborted();
    const amount = Math.ceil(nanoUsd);
    const giveUpAtMs = this.#clock.now() + this.#settleWaitMs;
    for (let pollMs: number = REDIS_BUDGET_DEFAULTS.firstPollMs; ; pollMs = Math.min(2 * pollMs, REDIS_BUDGET_DEFAULTS.maxPollMs)) {
      const [held, used, heldByAll, unknown] = (await this.#connection.run(HOLD, this.#keys, [this.#maxNano, amount])) as readonly [
        number,
        string,
        string,
        string,
      ];
      this.#usedNano = Number(used);
      this.#heldNano = Number(heldByAll);
      this.#unknownNano = Number(unknown);
      if (held === 1) return this.#hold(amount);
      // Nothing out that could come back, or not enough of it: waiting would not help.
      if (this.#usedNano - this.#heldNano + amount > this.#maxNano) return undefined;
      const leftMs = giveUpAtMs - this.#clock.now();
      if (leftMs <= 0) return undefined;
      await sleep(this.#clock, Math.min(pollMs, leftMs), signal);
    }
  }

  #hold(amount: number): BudgetHold {
    let open = true;
    return {
      settle: (spentNano, unknownNano = 0) => {
        if (!open) return;
        open = false;
        const spent = Math.min(amount, Math.max(0, Math.ceil(spentNano)));
        const unknown = Math.min(amount - spent, Math.max(0, Math.ceil(unknownNano)));
        const refund = amount - spent - unknown;
        this.#connection.run(RELEASE, this.#keys, [refund, amount, unknown]).then(
          (after) => {
            const [used, held, unknownByAll] = after as readonly [string, string, string];
            this.#usedNano = Number(used);
            this.#heldNano = Number(held);
            this.#unknownNano = Number(unknownByAll);
          },
          (error: unknown) =>
            this.#logger.warn({ err: error, refundNanoUsd: refund }, 'a settle of the shared budget was lost: its hold stays held'),
        );
      },
    };
  }
}
