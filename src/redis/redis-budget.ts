import type { Logger } from 'pino';
import { checkNumber, checkObject } from '../validation/checks.ts';
import { NANO_USD, type Budget, type BudgetHold } from '../limits/budget.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkConnection, checkKeyPart, REDIS_DEFAULTS, type RedisConnection } from './redis-connection.ts';
import { defineScript } from './scripts.ts';

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
}

/**
 * Holds `ARGV[2]` nano-dollars when the spend so far (held included) leaves room under `ARGV[1]`.
 * KEYS[1]: the budget. Reply: {1 | 0, the spend after (or as it stands), as text}.
 */
const HOLD = defineScript(
  'newsProcessorBudgetHold',
  `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + tonumber(ARGV[2]) > tonumber(ARGV[1]) then
  return { 0, tostring(used) }
end
return { 1, tostring(redis.call('INCRBY', KEYS[1], ARGV[2])) }
`,
);

/** Gives `ARGV[1]` nano-dollars of a hold back. KEYS[1]: the budget. Reply: the spend after, as text. */
const RELEASE = defineScript('newsProcessorBudgetRelease', `return tostring(redis.call('DECRBY', KEYS[1], ARGV[1]))`);

/**
 * A budget kept in Redis: every process on the same key spends one budget, never more in total.
 * One integer of nano-dollars, spent and held together: a hold is one round trip that adds the
 * call's worst case only if it fits (one script, atomic), and settling gives back what the call did
 * not cost. The key never expires — a budget is not refilled by time — and a process that dies
 * holding money leaves it spent (at most its calls in flight, at their worst case): never overspent.
 * `DEL` the key to start a budget afresh. When Redis does not answer, holding fails with
 * `LimiterUnavailableError`, as the shared limits do.
 */
export class RedisBudget implements Budget {
  readonly maxUsd: number;
  readonly #maxNano: number;
  readonly #connection: RedisConnection;
  readonly #key: string;
  readonly #prefix: string;
  readonly #logger: Logger;
  #usedNano = 0;

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
    this.#prefix = prefix;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'redis-budget', budget: key });
  }

  /** The budget's Redis key. */
  get key(): string {
    return this.#key;
  }

  /**
   * Makes sure, before the first call, that the Redis user may keep the budget here: run its
   * scripts on its key, and `GET`, `INCRBY`, `DECRBY` inside them (`RedisPermissionError` names
   * what it lacks). Changes nothing.
   */
  async check(): Promise<void> {
    await this.#connection.checkAccess([this.#key], [HOLD, RELEASE], `${this.#prefix}*`, ['get', 'incrby', 'decrby']);
  }

  get spentUsd(): number {
    return this.#usedNano / NANO_USD;
  }

  async reserve(nanoUsd: number): Promise<BudgetHold | undefined> {
    checkNumber('nanoUsd', nanoUsd, { min: 0 });
    const amount = Math.ceil(nanoUsd);
    const [held, used] = (await this.#connection.run(HOLD, [this.#key], [this.#maxNano, amount])) as readonly [number, string];
    this.#usedNano = Number(used);
    if (held !== 1) return undefined;
    let open = true;
    return {
      settle: (spentNano) => {
        if (!open) return;
        open = false;
        const refund = amount - Math.min(amount, Math.max(0, Math.ceil(spentNano)));
        if (refund === 0) return;
        this.#connection.run(RELEASE, [this.#key], [refund]).then(
          (after) => (this.#usedNano = Number(after)),
          (error: unknown) =>
            this.#logger.warn({ err: error, refundNanoUsd: refund }, 'a refund to the shared budget was lost: it stays spent'),
        );
      },
    };
  }
}
