// What a store's takeUp decides of each article, written once for every store: which articles a
// resumed run skips, which it runs again and from what, and what was spent.
import { NANO_USD } from '../quota/budget.ts';
import type { KeptResults } from './result-store.ts';

/** What a store knows of one article once it has read all its results. */
export interface ArticleResults {
  readonly id: string;
  readonly title: string;
  /** Its last result's status. */
  readonly status: string;
  /** How many results the store holds of it. */
  readonly results: number;
  /** What all of them cost, in nano-dollars. */
  readonly costNanoUsd: number;
  /** What all of them say their calls of unknown fate may have cost (`unknownCostUsd`), in nano-dollars. */
  readonly unknownNanoUsd: number;
  /** What `redo` said of its last result. */
  readonly again: readonly string[];
  /** Of those, the tasks whose outputs the last result holds. */
  readonly dropping: readonly string[];
}

/** Nothing to do again: shared by every result `redo` says nothing of. */
export const NONE: readonly string[] = Object.freeze([]);

/** `outputs` without those of `tasks`. */
export function withoutTasks(outputs: Readonly<Record<string, unknown>>, tasks: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(outputs).filter(([task]) => !tasks.includes(task)));
}

/** A result's cost in whole nano-dollars (as the budget counts), 0 when it says none. */
export function toNano(costUsd: number | undefined): number {
  return costUsd === undefined ? 0 : Math.round(costUsd * NANO_USD);
}

/**
 * Gathers a take-up article by article, each at its last result in the store's order: a success
 * with nothing to redo is kept and skipped; any other is run again from the outputs it keeps, its
 * result kept with `keepUnfinished` (a success with outputs to redo is kept as it is either way).
 */
export class TakeUpTally {
  readonly #keepUnfinished: boolean;
  readonly #succeeded = new Map<string, string>();
  readonly #partial = new Map<string, Readonly<Record<string, unknown>>>();
  readonly #redo = new Map<string, readonly string[]>();
  readonly #unfinished = new Map<string, string>();
  #spentNanoUsd = 0;
  #unknownNanoUsd = 0;
  #dropped = 0;

  constructor(keepUnfinished: boolean) {
    this.#keepUnfinished = keepUnfinished;
  }

  /**
   * Decides one article by its last result, whose outputs `outputs` reads (only when it runs
   * again); returns whether the result stays in the store, and its cost there (what was spent, and
   * apart what calls of unknown fate may have cost): the sums of the article's results when the
   * store keeps each article once, else its own (undefined).
   */
  add(
    article: ArticleResults,
    outputs: () => Readonly<Record<string, unknown>>,
  ): { readonly keep: boolean; readonly costNanoUsd?: number; readonly unknownNanoUsd?: number } {
    this.#spentNanoUsd += article.costNanoUsd;
    this.#unknownNanoUsd += article.unknownNanoUsd;
    this.#dropped += article.results - 1;
    if (article.status !== 'succeeded') {
      this.#dropped++;
      this.#unfinished.set(article.id, article.status);
    }
    const merged = this.#keepUnfinished && article.results > 1;
    const costNanoUsd = merged ? article.costNanoUsd : undefined;
    const unknownNanoUsd = merged ? article.unknownNanoUsd : undefined;
    if (article.status === 'succeeded' && article.again.length === 0) {
      this.#succeeded.set(article.id, article.title);
      return { keep: true, costNanoUsd, unknownNanoUsd };
    }
    if (article.dropping.length > 0) this.#redo.set(article.id, article.dropping);
    const all = outputs();
    const left = article.dropping.length === 0 ? all : withoutTasks(all, article.dropping);
    if (Object.keys(left).length > 0) this.#partial.set(article.id, left);
    return { keep: this.#keepUnfinished || article.status === 'succeeded', costNanoUsd, unknownNanoUsd };
  }

  /** What was taken up. */
  kept(truncatedLastLine: boolean): KeptResults {
    return {
      succeeded: this.#succeeded,
      dropped: this.#dropped,
      partial: this.#partial,
      redo: this.#redo,
      unfinished: this.#unfinished,
      truncatedLastLine,
      spentUsd: this.#spentNanoUsd / NANO_USD,
      unknownUsd: this.#unknownNanoUsd / NANO_USD,
    };
  }
}
