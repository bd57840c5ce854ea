import { brandedGuard } from '../error-brand.ts';
import type { LlmRequest, LlmResponse, PromptCacheRatios } from './provider.ts';

/**
 * A vendor's Batch API as a batch run sees it — the provider contract's optional half: rows the
 * vendor's encoded requests, submitted, polled, read back by custom id, cancelled. Each vendor that
 * has one implements it in its folder (`src/vendors/<name>/batch-api.ts`); `runBatch` drives it.
 */

/** One row of a batch: the request it answers, and the vendor's body for it under its custom id. */
export interface BatchRow {
  /** Unique within the batch, `^[a-zA-Z0-9_-]{1,64}$` (what both vendors take). */
  readonly customId: string;
  /** The request the row answers: its answer is read against it. */
  readonly request: LlmRequest;
  /** The vendor's request body: what a live call would send. */
  readonly body: object;
  /** `body` as JSON, where the run has made it already (to count its bytes): sent as it is. @default made from `body` */
  readonly bodyJson?: string | undefined;
}

/** A batch as the provider created it. */
export interface SubmittedBatch {
  /** The provider's id for it. */
  readonly batchId: string;
  /** The uploaded input file, where the vendor has one (OpenAI). @default none */
  readonly fileId?: string | undefined;
}

/** Where a batch stands, from the provider's counts. */
export interface BatchProgress {
  /** The vendor's own word for it (`in_progress`, `finalizing`, `completed`, `expired`, …). */
  readonly status: string;
  /** Whether it has ended (completed, failed, expired or cancelled): its results can be read. */
  readonly ended: boolean;
  /** Rows in the batch. */
  readonly total: number;
  /** Rows answered. */
  readonly completed: number;
  /** Rows that failed (and, once it ended, expired or were cancelled). */
  readonly failed: number;
  /**
   * The provider refused the whole batch for its queue limit (OpenAI's `token_limit_exceeded`): no
   * row ran, and each goes again once the queue has room, not as a failed row. @default false
   */
  readonly queueFull?: boolean | undefined;
}

/** How one row ended: a response body to decode, or the reason it has none. */
export type RowOutcome =
  | { readonly customId: string; readonly body: object }
  | {
      readonly customId: string;
      /** Why the row has no answer, in a line. */
      readonly error: string;
      /** The row was never run (the batch expired or was cancelled first). */
      readonly expired?: boolean | undefined;
    };

/**
 * A vendor's Batch API as a batch run uses it: submit rows, poll a batch, read its rows' outcomes,
 * cancel it. Rows are the vendor's encoded requests; outcomes come back by custom id, in any order.
 */
export interface BatchApi {
  /** Names the provider in results and messages. */
  readonly name: string;
  /** The model its rows ask for, when it names one: part of the tasks' fingerprints on the result lines. @default none */
  readonly model?: string | undefined;
  /**
   * What the vendor's prompt cache bills, as fractions of the input price, when the price does not
   * say. @default no discount (reads and writes at the input price)
   */
  readonly promptCacheRatios?: PromptCacheRatios | undefined;
  /** The most rows the vendor takes in one batch. @default no cap */
  readonly maxRows?: number | undefined;
  /** The most bytes the vendor takes in one batch's upload. @default no cap */
  readonly maxBytes?: number | undefined;
  /** The vendor's body for `request`, as a live call sends it. */
  encode(request: LlmRequest, maxOutputTokens: number): object;
  /** Reads a row's response body as the answer to `request` (checked against its schema), or throws what it means. */
  decode(request: LlmRequest, body: object, maxOutputTokens: number): Promise<LlmResponse>;
  /** Uploads `rows` as one batch and starts it; rejects with {@link BatchQueueFullError} when the provider's queue has no room for it (Anthropic's 429). */
  submit(rows: readonly BatchRow[]): Promise<SubmittedBatch>;
  /** The batch's status and counts. */
  poll(batchId: string): Promise<BatchProgress>;
  /** The outcome of the rows of an ended batch, as a list or read as they come; a row it says nothing of had no answer. */
  results(batchId: string): Promise<Iterable<RowOutcome> | AsyncIterable<RowOutcome>>;
  /** Asks the provider to stop the batch (rows not yet run end expired). */
  cancel(batchId: string): Promise<void>;
}

/**
 * The provider refused a batch because its queue of enqueued input tokens is full (Anthropic's
 * 429 on create): nothing of it was taken, and its rows can go again once earlier batches end.
 */
export class BatchQueueFullError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'BatchQueueFullError';
}

/** Whether `value` is a {@link BatchQueueFullError}, from this copy of the package or another. */
export const isBatchQueueFullError = brandedGuard(BatchQueueFullError, 'BatchQueueFullError');
