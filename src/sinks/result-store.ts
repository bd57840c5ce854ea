// The seam between a run and where its results go: a store writes each result as its article
// ends, and tells a later run what it kept — what a resumed run skips, runs again, and has spent.
import type { ArticleResult } from '../pipeline/result.ts';

/**
 * Where a run's results go, and what a later run takes up from them (`--resume`). A store holds
 * results in the order they ended; of each article the last is the one that counts, and what all of
 * its results cost is what it spent. The live run writes through one (`runPipeline`'s `onResult`),
 * a batch run too, with its state beside the results; `collect` writes a queue's results through
 * one. A JSONL file is one implementation (`JsonlResultStore`: what `--output` writes), memory
 * another (`MemoryResultStore`, for tests and for results that are read back in the same process).
 */
export interface ResultStore {
  /** What the store is called in messages: a file's path, `stdout`, `memory`. */
  readonly name: string;
  /** Results written through this object so far. */
  readonly written: number;
  /**
   * Takes up what earlier runs stored, before this one writes (see {@link KeepSucceededOptions}):
   * of each article its last result decides — a success is kept, to be skipped; one that did not
   * succeed is dropped, or with `keepUnfinished` kept to be run again from the outputs it holds.
   * Leaves the store holding each article once, a crash at any instant leaving it as it was or
   * taken up, either one valid. A store that holds nothing takes up nothing.
   */
  takeUp(options?: KeepSucceededOptions): Promise<KeptResults>;
  /**
   * Keeps one result; resolves once the store has taken it, so that a slow store slows the run
   * rather than buffering. Once the store has failed, every write rejects with the same `OutputError`.
   */
  write(result: ArticleResult): Promise<void>;
  /**
   * Folds each article's results into its last, their costs added to it (after a resumed run wrote
   * newer results of articles it held), so that the store holds each article once and still says
   * all that was spent. Rejects with an `OutputError`.
   */
  compact(): Promise<void>;
  /** Takes what is pending and lets go; rejects with the `OutputError` of a write that failed. */
  close(): Promise<void>;
  /** What a run that goes in rounds keeps beside its results to resume mid-way: a batch run's batches at the provider. */
  readonly state: RunStateSlot;
}

/**
 * One value a run keeps beside its results (a batch run's state: its batches at the provider, the
 * outputs of articles not yet ended), replaced whole or not at all: a crash mid-save leaves the last.
 */
export interface RunStateSlot {
  /** What it is called in messages (a file's path). */
  readonly name: string;
  /** The value last saved; undefined when there is none. */
  load(): Promise<unknown>;
  /** Replaces the value, whole or not at all; resolves once it is kept. */
  save(state: object): Promise<void>;
  /** Removes the value: the run it was for has ended. */
  clear(): Promise<void>;
}

/** What a store held of a run that is to be completed. */
export interface KeptResults {
  /** The articles that succeeded, id → their title (to tell a different input from the same one); not those with outputs to redo. */
  readonly succeeded: ReadonlyMap<string, string>;
  /** Results dropped: those of failed and cancelled articles, and every result of an article but its last. */
  readonly dropped: number;
  /**
   * The outputs to keep of the articles that are to run again — those that did not succeed, and
   * those with outputs to redo (`redo`) — id → task → output, from the article's last result, less
   * the outputs to redo: a resumed run keeps them and runs only the tasks that are missing.
   */
  readonly partial: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** The articles with outputs to redo (`redo`), id → the tasks of those outputs; none without `redo`. */
  readonly redo: ReadonlyMap<string, readonly string[]>;
  /** The articles whose last result did not succeed, id → its status (`failed`, `cancelled`): a batch run does not send a dead letter again. */
  readonly unfinished: ReadonlyMap<string, string>;
  /** The last result was cut short (a run killed mid-write) and was dropped. */
  readonly truncatedLastLine: boolean;
  /**
   * What the store's results say was spent, in USD: the sum of their `costUsd`, the results of
   * articles that did not finish included — the calls they made were billed too. 0 without prices.
   */
  readonly spentUsd: number;
  /**
   * What the store's results say their calls of unknown fate may have cost, in USD: the sum of
   * their `unknownCostUsd` (kept apart from `spentUsd`; a budget counts both). 0 when none.
   */
  readonly unknownUsd: number;
}

/** What a result holds that {@link KeepSucceededOptions.redo} reads. */
export interface ResultLine {
  /** The article's id. */
  readonly id: string;
  /** Its outputs, by task. */
  readonly outputs: Readonly<Record<string, unknown>>;
  /** The tasks' fingerprints it was written with; absent on a result written before they were recorded. */
  readonly fingerprints: Readonly<Record<string, string>> | undefined;
}

/** How a store's `takeUp` (and {@link keepSucceeded} on a JSONL file) treats what it holds. */
export interface KeepSucceededOptions {
  /**
   * Keep the last result of each article that did not succeed too, its `costUsd` (and
   * `unknownCostUsd`) the sum of that article's results — and a success's the sum of its article's results too — so that the store
   * keeps each article once and still says all that was spent.
   * @default false (those results are dropped)
   */
  readonly keepUnfinished?: boolean | undefined;
  /**
   * The tasks to run again for an article's last result, as the tasks now are (a run plan's
   * `redo`): those whose task changed since the result was written and the tasks that depend on
   * them (their outputs are not kept), and any task the result has no output of (one added since).
   * A success with any is taken up as unfinished (its result kept as it is until a run writes a
   * newer one). Asked of every result as it is read; the answer for an article's last is the one
   * that counts.
   * @default none (every output kept)
   */
  readonly redo?: ((line: ResultLine) => readonly string[]) | undefined;
}
