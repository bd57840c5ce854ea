/**
 * The rounds a budget is spent in. A row is held at its worst case until its answer settles it, so
 * a batch the budget cuts short holds what is left at the worst case, and its answers, settled at
 * their usage, give back most of it: each round after the first holds what the one before left,
 * rounds shrinking by what the answers cost over their worst case. At a real provider a round is
 * minutes to hours, so the budget's last part is not spent a row or two a round: a round the budget
 * cuts short goes only while it holds at least `BUDGET_ROUND_SHARE` of the rows of the first one it
 * cut, and no more than `BUDGET_ROUNDS` of them go. The rest of the budget is left unspent, and
 * said (`BudgetStop`).
 */

/** A round the budget cuts short holds at least this share of the first's rows, or it does not go. */
export const BUDGET_ROUND_SHARE = 0.25;
/** The most rounds the budget cuts short: answers far under their worst case would otherwise take dozens. */
export const BUDGET_ROUNDS = 4;

/** Why a budget stopped a batch run, and what it left. */
export interface BudgetStop {
  /** What the budget still held when the run stopped, in USD: not spent. */
  readonly leftUsd: number;
  /** Rows the next round could hold at their worst case (0: not one more row fits). */
  readonly nextRoundRows: number;
  /** Rows of the first round the budget cut short (0: it cut none). */
  readonly firstRoundRows: number;
  /** Rounds the budget cut short that went. */
  readonly rounds: number;
}

/** Which rounds the budget cuts short go, counted as they go. */
export class BudgetRounds {
  #firstRows = 0;
  #rounds = 0;

  /** Whether a round of `rows` that the budget cut short may go; `rows` 0 never does. */
  allows(rows: number): boolean {
    if (rows === 0) return false;
    return this.#rounds === 0 || (this.#rounds < BUDGET_ROUNDS && rows >= Math.ceil(this.#firstRows * BUDGET_ROUND_SHARE));
  }

  /** A round the budget cut short went with `rows`. */
  went(rows: number): void {
    if (this.#rounds === 0) this.#firstRows = rows;
    this.#rounds++;
  }

  /** What the run says when the budget stops it: `nextRoundRows` fit and did not go, `leftUsd` unspent. */
  stop(nextRoundRows: number, leftUsd: number): BudgetStop {
    return { leftUsd, nextRoundRows, firstRoundRows: this.#firstRows, rounds: this.#rounds };
  }
}
