// The Batch API seam is the provider contract's (a vendor implements it in its folder); what a
// batch run tells of its batches is the run's own.
export {
  BatchQueueFullError,
  isBatchQueueFullError,
  type BatchApi,
  type BatchProgress,
  type BatchRow,
  type RowOutcome,
  type SubmittedBatch,
} from '../provider/batch-api.ts';

/** A batch's step as a batch run tells it (`BatchRunOptions.onBatch`): submitted, then ended and read back. */
export interface BatchEvent {
  /** `submitted` as this run submitted it; `ended` as its results were read back. */
  readonly type: 'submitted' | 'ended';
  /** The provider's id for it. */
  readonly batchId: string;
  /** When, on the run's clock, ms. */
  readonly atMs: number;
  /** Rows in the batch. */
  readonly rows: number;
  /** `submitted`, then the vendor's own word for how it ended (`completed`, `expired`, `cancelled`, …). */
  readonly status: string;
}
