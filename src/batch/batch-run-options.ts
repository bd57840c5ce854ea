// What `runBatch` takes and tells: its options, its summary, and the state a stopped run leaves
// beside its results for `--resume` (run-batch.ts is the run itself).
import type { Clock } from '../clock.ts';
import type { ProviderPrice } from '../gate/provider-options.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { RunPlan } from '../pipeline/run-plan.ts';
import type { LlmRequest } from '../provider/provider.ts';
import type { RouteCaller } from '../route/route.ts';
import type { Article } from '../sources/article.ts';
import type { TaskSet } from '../tasks/task-set.ts';
import type { RunEvents } from '../pipeline/run-events.ts';
import type { BatchApi, BatchProgress } from './batch-api.ts';
import type { BudgetStop } from './budget-rounds.ts';

/** What a batch run does unless told otherwise. */
export const BATCH_DEFAULTS = Object.freeze({
  /** How often a batch is asked how it stands, in ms. */
  pollMs: 30_000,
  /** Both vendors' published discount: a batch call costs this share of the live price. */
  batchDiscount: 0.5,
  /** Rows sent through the live path (`fallback`) at once. */
  fallbackConcurrency: 5,
  /**
   * Articles in progress at once: OpenAI's rows in a batch, so that each dependency level of them
   * fills a batch. What bounds a run's memory, whatever the size of its input.
   */
  holdArticles: 50_000,
});

/** A batch submitted and not yet read back: what a resume re-attaches to. */
export interface PendingBatch {
  /** The provider's id for it. */
  readonly batchId: string;
  /** Its input file, where the vendor has one. @default none */
  readonly fileId?: string | undefined;
  /** Its rows' custom ids. */
  readonly customIds: readonly string[];
  /** Its rows' estimated input tokens, counted against `queueTokens` until it ends. @default 0 */
  readonly inputTokens?: number | undefined;
}

/**
 * What a batch run has submitted and learned, saved (`onState`) before anything is waited on: a
 * run stopped (Ctrl-C, a crash) resumes from it without submitting a row that is at the provider.
 */
export interface BatchRunState {
  /** Batches submitted and not yet read back. */
  readonly pending: readonly PendingBatch[];
  /** The outputs of articles not yet ended, by article id, then task. */
  readonly outputs: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Rows tried and not answered, by custom id: how many times. */
  readonly attempts: Readonly<Record<string, number>>;
  /** Articles ended (their result told): not taken up again. */
  readonly ended: readonly string[];
  /** What the answers read so far cost, in nano-dollars. */
  readonly spentNanoUsd: number;
  /**
   * The tasks' fingerprints of the run that saved it: a resume with tasks changed since drops the
   * outputs of those tasks and of the tasks that depend on them, and does not read back their rows
   * still in flight (asked as the tasks were). Absent in a state saved before they were recorded.
   */
  readonly fingerprints?: Readonly<Record<string, string>> | undefined;
}

/** What {@link runBatch} runs, through which Batch API, and what it is told. */
export interface BatchRunOptions {
  /** The articles: read as the run goes, `holdArticles` in progress at most. */
  readonly source: Iterable<Article> | AsyncIterable<Article>;
  /**
   * The most articles in progress at once: more are read as earlier ones end. What bounds the run's
   * memory; the more, the fewer rounds of batches a large input takes. A resumed run reads at least
   * the articles its state holds. @default BATCH_DEFAULTS.holdArticles
   */
  readonly holdArticles?: number | undefined;
  /** The vendor's Batch API (`OpenAiBatchApi`, `SimulatedBatchApi`). */
  readonly api: BatchApi;
  /** Every article's tasks. @default the plan's, else the built-in summarize, then sentiment */
  readonly tasks?: TaskSet | undefined;
  /**
   * The run worked out ahead (`planRun` of these tasks with `batch`: this API's name and model,
   * and `maxOutputTokens`), when the caller has made it for its own checks: each task's fingerprint
   * is read from it rather than worked out again. @default planned from these options
   */
  readonly plan?: RunPlan | undefined;
  /** The most tokens an answer may take (each row's max tokens). @default 256 */
  readonly maxOutputTokens?: number | undefined;
  /** The provider's live price: rows cost `batchDiscount` of it. @default none (no cost figures, no budget) */
  readonly price?: ProviderPrice | undefined;
  /** The share of the live price a batch call costs, in (0, 1]. @default BATCH_DEFAULTS.batchDiscount */
  readonly batchDiscount?: number | undefined;
  /** The most the run may spend, in USD: a batch goes only with the rows whose worst case fits what is left. Needs `price`. @default none */
  readonly maxCostUsd?: number | undefined;
  /** Times a row is submitted before its article fails with the reason (a dead letter). @default RETRY_DEFAULTS.maxAttempts */
  readonly maxAttempts?: number | undefined;
  /** Rows per batch at most; no more than the vendor's cap (`api.maxRows`). @default the vendor's cap */
  readonly batchSize?: number | undefined;
  /**
   * The most estimated input tokens enqueued at once, the provider's per-model queue limit
   * (OpenAI's enqueued-token limit): batches are cut and submitted so as never to pass it, later
   * ones waiting for earlier ones to end. A batch the provider refuses for its queue all the same
   * goes again later whatever this says, its rows not counted as failed. @default none (not counted)
   */
  readonly queueTokens?: number | undefined;
  /** A request's input tokens as counted against `queueTokens`. @default the tokenizer's count of its prompt and schema */
  readonly estimateInputTokens?: ((request: LlmRequest) => number | Promise<number>) | undefined;
  /**
   * Where a row that came back without an answer goes instead of a later batch: the live path (the
   * route a live run would call, with its call loop: `CallLoop.caller`), at the live price, for when
   * time matters more than price. Its failure fails the article with the reason.
   * @default none (the row goes again in a batch)
   */
  readonly fallback?: RouteCaller | undefined;
  /** Rows sent through `fallback` at once. @default BATCH_DEFAULTS.fallbackConcurrency */
  readonly fallbackConcurrency?: number | undefined;
  /** How often a batch is polled, in ms. @default BATCH_DEFAULTS.pollMs */
  readonly pollMs?: number | undefined;
  /** An earlier run's state (`onState`): its batches are waited for, its ended articles skipped. @default none */
  readonly resume?: BatchRunState | undefined;
  /** Told the state after every submission and every batch read back; awaited before anything is waited on. @default none */
  readonly onState?: ((state: BatchRunState) => void | Promise<void>) | undefined;
  /** Told each article's result as it ends; awaited. @default none */
  readonly onResult?: ((result: ArticleResult) => void | Promise<void>) | undefined;
  /** Told each poll of the batches in flight. @default none */
  readonly onProgress?: ((progress: readonly BatchProgress[]) => void) | undefined;
  /**
   * Where the run tells its start (with its tally), each article's start and result, each batch
   * as this run submits it and as it ends, read back (a resumed run's batches only as they end),
   * and its end — as a live run tells its steps. @default none
   */
  readonly events?: RunEvents | undefined;
  /** Abort to stop waiting: the batches keep running at the provider, recorded in the state. @default none */
  readonly signal?: AbortSignal | undefined;
  /** Time source of the polls. @default systemClock */
  readonly clock?: Clock | undefined;
}

/** What a batch run did. */
export interface BatchRunSummary {
  /** Articles that ended with every task's output. */
  readonly succeeded: number;
  /** Articles that ended failed (a dead letter, with the reason). */
  readonly failed: number;
  /** Articles read and not ended: stopped by the signal or the budget, left for a resume. */
  readonly left: number;
  /** The run stopped before it had read its source to the end: articles after those read are left too (not counted in `left`). */
  readonly unread: boolean;
  /** Batches this run submitted. */
  readonly batches: number;
  /** Rows this run submitted, those sent again included. */
  readonly rows: number;
  /** Rows that came back without an answer (errored, or the batch expired or was cancelled). */
  readonly rowsFailed: number;
  /** Of those, the rows never run: their batch expired or was cancelled first. */
  readonly rowsExpired: number;
  /** Rows submitted again after failing. */
  readonly rowsRetried: number;
  /** Batches the provider refused for its queue limit (their rows went again later, not counted as failed). */
  readonly batchesRefused: number;
  /** Rows sent through the live path (`fallback`) after failing in a batch. */
  readonly rowsLive: number;
  /** Time spent waiting for batches, in ms. */
  readonly waitingMs: number;
  /** What the answers cost at the batch price, in USD; absent without a price. */
  readonly costUsd?: number;
  /** The signal stopped the waiting. */
  readonly interrupted: boolean;
  /**
   * The budget stopped the run: it could not cover the next row, or the next round it could cover
   * was tiny beside the first (`budgetStop` says which).
   */
  readonly budgetStopped: boolean;
  /** Why the budget stopped the run, and what it left unspent; absent when it did not. */
  readonly budgetStop?: BudgetStop;
}
