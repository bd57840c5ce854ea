// The Batch API seam is the provider contract's (a vendor implements it in its folder); what a
// batch run tells of its batches is the run's own, one of its events.
export {
  BatchQueueFullError,
  isBatchQueueFullError,
  type BatchApi,
  type BatchProgress,
  type BatchRow,
  type RowOutcome,
  type SubmittedBatch,
} from '../provider/batch-api.ts';

/** A batch's step as a batch run tells it (`RunEvents`' `batch`): submitted, then ended and read back. */
export type { BatchEvent } from '../pipeline/run-events.ts';
