import { checkNumber, checkObject } from '../validation/checks.ts';
import { brandedGuard } from '../error-brand.ts';

/**
 * A run's money: a limit that never refills. Before a call its worst case is held, so that money
 * spent never exceeds the budget — not with many workers, retries or several providers; after the
 * call the hold is settled at what the call cost, and the rest comes back. A hold that does not
 * fit while other holds are out waits for them to settle (they mostly settle at a fraction of their
 * worst case): the budget is spent, not held. Only when what is spent leaves no room for the call
 * with nothing held is it refused. A call whose fate is unknown (a timeout, a connection broken
 * mid-request: perhaps billed, perhaps not) keeps its worst case, counted against the budget as
 * spent is but kept apart (`unknownUsd`); one that never reached the provider gives it all back.
 * Amounts are whole nano-dollars (10⁻⁹ USD), rounded up: sums of them are exact.
 *
 * Asynchronous, so that a budget may be kept elsewhere and shared by several processes (in Redis).
 */
export interface Budget {
  /** The budget, in USD. */
  readonly maxUsd: number;
  /** Spent so far (settled), in USD, as this process last knew it. */
  readonly spentUsd: number;
  /**
   * Kept at their worst case for calls whose fate is unknown (a timeout, a connection broken
   * mid-request: perhaps billed, perhaps not), in USD, as this process last knew it: counted
   * against the budget as if spent, not among `spentUsd`. @default 0 (a budget that keeps no such
   * account has counted them in `spentUsd`)
   */
  readonly unknownUsd?: number | undefined;
  /** Held by calls not yet settled, in USD, as this process last knew it. */
  readonly heldUsd: number;
  /**
   * Holds `nanoUsd` once it fits: at once when what is left covers it; when it does not but holds
   * are out, once enough of them settle; resolves with undefined, holding nothing, when it does not
   * fit what is spent with nothing held (nothing refills: waiting longer would not help). Rejects
   * with `signal.reason` when `signal` aborts the wait.
   */
  reserve(nanoUsd: number, options?: BudgetReserveOptions): Promise<BudgetHold | undefined>;
}

/** How a hold waits. */
export interface BudgetReserveOptions {
  /** Ends the wait for holds to settle. @default none */
  readonly signal?: AbortSignal | undefined;
}

/** A reservation: settle it once, at what the call cost (0 when it was not made); the rest is given back. */
export interface BudgetHold {
  /**
   * Keeps `nanoUsd` of the reservation spent and `unknownNanoUsd` of it kept for a call whose fate
   * is unknown (together at most all of it), and gives the rest back. Later calls are ignored.
   */
  settle(nanoUsd: number, unknownNanoUsd?: number): void;
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
    /** Spent when the call was refused, in USD. */
    readonly spentUsd: number,
    /** The most the call could have cost, in USD. */
    readonly neededUsd: number,
    /** Held by calls in flight when the call was refused, in USD (a shared budget's may be of a process that died holding). @default 0 */
    readonly heldUsd = 0,
    /** Kept for calls whose fate is unknown (perhaps billed) when the call was refused, in USD. @default 0 */
    readonly unknownUsd = 0,
  ) {
    const held = heldUsd > 0 ? `, ${formatUsd(heldUsd)} held by calls in flight` : '';
    const unknown = unknownUsd > 0 ? `, up to ${formatUsd(unknownUsd)} unknown (calls that may have been billed)` : '';
    super(
      `the budget of ${formatUsd(maxUsd)} cannot cover the next call (up to ${formatUsd(neededUsd)}): ${formatUsd(spentUsd)} of it is spent${unknown}${held}`,
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
  /**
   * Already kept of it for calls of earlier runs whose fate is unknown (perhaps billed), in USD,
   * ≥ 0: counted against the budget as spent is, reported apart. @default 0
   */
  readonly unknownUsd?: number | undefined;
}

/**
 * A budget kept in this process: exact, shared by every provider and worker of a run. Holds that
 * wait for others to settle are served first come, first served.
 */
export class LocalBudget implements Budget {
  /** The budget, in USD. */
  readonly maxUsd: number;
  readonly #maxNano: number;
  #spentNano = 0;
  #unknownNano = 0;
  #heldNano = 0;
  readonly #waiting: Waiter[] = [];

  constructor(options: LocalBudgetOptions) {
    checkObject('options', options);
    checkNumber('maxUsd', options.maxUsd, { min: 0, minExclusive: true, unit: 'USD' });
    this.maxUsd = options.maxUsd;
    this.#maxNano = Math.floor(options.maxUsd * NANO_USD + 1e-6);
    const { spentUsd = 0 } = options;
    checkNumber('spentUsd', spentUsd, { min: 0, unit: 'USD' });
    this.#spentNano = toNanoUsd(spentUsd);
    const { unknownUsd = 0 } = options;
    checkNumber('unknownUsd', unknownUsd, { min: 0, unit: 'USD' });
    this.#unknownNano = toNanoUsd(unknownUsd);
  }

  /** Kept for calls whose fate is unknown (perhaps billed), in USD: counted against the budget, not among `spentUsd`. */
  get unknownUsd(): number {
    return this.#unknownNano / NANO_USD;
  }

  /** Spent so far (settled), in USD, as this process last knew it. */
  get spentUsd(): number {
    return this.#spentNano / NANO_USD;
  }

  /** Held by calls not yet settled, in USD, as this process last knew it. */
  get heldUsd(): number {
    return this.#heldNano / NANO_USD;
  }

  /**
   * Holds `nanoUsd` when what is spent and held leaves room for it; otherwise waits for the calls in
   * flight to settle, first come first served, and resolves with undefined, holding nothing, only
   * when what is spent with nothing held cannot cover it. Aborting `options.signal` rejects the wait.
   */
  reserve(nanoUsd: number, options: BudgetReserveOptions = {}): Promise<BudgetHold | undefined> {
    checkNumber('nanoUsd', nanoUsd, { min: 0 });
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    // Behind others waiting, a hold waits its turn even if it would fit: the larger ones ahead are not starved.
    if (this.#waiting.length === 0) {
      const now = this.#tryHold(nanoUsd);
      if (now !== WAIT) return Promise.resolve(now);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { nanoUsd, resolve, reject, signal, onAbort: () => {} };
      waiter.onAbort = () => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        reject(signal!.reason);
        this.#serveWaiting();
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** A hold when it fits now; undefined when it never will (nothing is held that could come back); else WAIT. */
  #tryHold(nanoUsd: number): BudgetHold | undefined | typeof WAIT {
    if (this.#spentNano + this.#unknownNano + this.#heldNano + nanoUsd <= this.#maxNano) return this.#hold(nanoUsd);
    return this.#heldNano === 0 ? undefined : WAIT;
  }

  #hold(nanoUsd: number): BudgetHold {
    this.#heldNano += nanoUsd;
    let open = true;
    return {
      settle: (spentNano, unknownNano = 0) => {
        if (!open) return;
        open = false;
        this.#heldNano -= nanoUsd;
        const spent = Math.min(nanoUsd, Math.max(0, spentNano));
        this.#spentNano += spent;
        this.#unknownNano += Math.min(nanoUsd - spent, Math.max(0, unknownNano));
        this.#serveWaiting();
      },
    };
  }

  /** Serves the holds waiting, in order, while the first fits or can be told it never will. */
  #serveWaiting(): void {
    while (this.#waiting.length > 0) {
      const waiter = this.#waiting[0]!;
      const hold = this.#tryHold(waiter.nanoUsd);
      if (hold === WAIT) return;
      this.#waiting.shift();
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(hold);
    }
  }
}

const WAIT = Symbol('wait');

/** A hold waiting for others to settle. */
interface Waiter {
  readonly nanoUsd: number;
  readonly resolve: (hold: BudgetHold | undefined) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: () => void;
}
