import { checkNumber, checkObject } from '../validation/checks.ts';
import { brandedGuard } from '../error-brand.ts';

/**
 * A run's money: a limit that never refills. Before a call its worst case is reserved, so that
 * money spent never exceeds the budget — not with many workers, retries or several providers; after
 * the call the reservation is settled at what the call cost, and the rest comes back. Amounts are
 * whole nano-dollars (10⁻⁹ USD), rounded up: sums of them are exact.
 *
 * Asynchronous, so that a budget may be kept elsewhere and shared by several processes (in Redis).
 */
export interface Budget {
  /** The budget, in USD. */
  readonly maxUsd: number;
  /** Spent and held so far, in USD, as this process last knew it. */
  readonly spentUsd: number;
  /**
   * Holds `nanoUsd` if what is left covers it, at once; resolves with undefined, holding nothing,
   * when it does not (nothing refills: waiting would not help).
   */
  reserve(nanoUsd: number): Promise<BudgetHold | undefined>;
}

/** A reservation: settle it once, at what the call cost (0 when it was not made); the rest is given back. */
export interface BudgetHold {
  /** Keeps `nanoUsd` of the reservation spent (at most all of it) and gives the rest back. Later calls are ignored. */
  settle(nanoUsd: number): void;
}

/** The next call's worst case does not fit what is left of the budget: the run stops taking articles. */
export class BudgetExhaustedError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'BudgetExhaustedError';
  /** Not worth retrying: nothing refills. */
  readonly retryable = false;

  constructor(
    /** The budget, in USD. */
    readonly maxUsd: number,
    /** Spent and held when the call was refused, in USD. */
    readonly spentUsd: number,
    /** The most the call could have cost, in USD. */
    readonly neededUsd: number,
  ) {
    super(
      `the budget of ${formatUsd(maxUsd)} cannot cover the next call (up to ${formatUsd(neededUsd)}): ${formatUsd(spentUsd)} of it is spent or held`,
    );
  }
}

/**
 * Whether `error` is a {@link BudgetExhaustedError}, from this copy of the package or another one
 * loaded beside it (a `Budget` written against its own copy): what stops a run's intake.
 */
export const isBudgetExhaustedError = brandedGuard(BudgetExhaustedError, 'BudgetExhaustedError');

/** Nano-dollars in a dollar. */
export const NANO_USD = 1e9;

/** USD as a budget counts them: whole nano-dollars, rounded up. */
export const toNanoUsd = (usd: number): number => Math.ceil(usd * NANO_USD - 1e-6);

/** `$0.0042`, `$12.50`: four significant decimals under a dollar, cents above. */
export function formatUsd(usd: number): string {
  if (usd >= 1) return `$${usd.toFixed(2)}`;
  if (usd === 0) return '$0';
  return `$${Number(usd.toPrecision(3))}`;
}

/** A budget kept in this process: how much, and how much of it is spent already. */
export interface LocalBudgetOptions {
  /** The budget in USD, finite, > 0. */
  readonly maxUsd: number;
  /**
   * Already spent of it, in USD, ≥ 0: what earlier runs of the same job spent (a resumed run's
   * results file says it), so that the budget is the job's, not each run's. @default 0
   */
  readonly spentUsd?: number | undefined;
}

/** A budget kept in this process: exact, shared by every provider and worker of a run. */
export class LocalBudget implements Budget {
  /** The budget, in USD. */
  readonly maxUsd: number;
  readonly #maxNano: number;
  #usedNano = 0;

  constructor(options: LocalBudgetOptions) {
    checkObject('options', options);
    checkNumber('maxUsd', options.maxUsd, { min: 0, minExclusive: true, unit: 'USD' });
    this.maxUsd = options.maxUsd;
    this.#maxNano = Math.floor(options.maxUsd * NANO_USD + 1e-6);
    const { spentUsd = 0 } = options;
    checkNumber('spentUsd', spentUsd, { min: 0, unit: 'USD' });
    this.#usedNano = toNanoUsd(spentUsd);
  }

  /** Spent and held so far, in USD. */
  get spentUsd(): number {
    return this.#usedNano / NANO_USD;
  }

  /** Holds `nanoUsd` if what is left covers it, at once; resolves with undefined, holding nothing, when it does not. */
  async reserve(nanoUsd: number): Promise<BudgetHold | undefined> {
    checkNumber('nanoUsd', nanoUsd, { min: 0 });
    if (this.#usedNano + nanoUsd > this.#maxNano) return undefined;
    this.#usedNano += nanoUsd;
    let held = nanoUsd;
    return {
      settle: (spentNano) => {
        const kept = Math.min(held, Math.max(0, spentNano));
        this.#usedNano -= held - kept;
        held = kept;
        // Settled once: what is kept stays spent, and nothing more comes back.
        held = 0;
      },
    };
  }
}
