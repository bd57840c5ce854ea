// A run through a vendor's Batch API (news-processor/batch): the same articles, tasks and results as a live run, at half the price.
export { runBatch, BATCH_DEFAULTS } from './run-batch.ts';
export type { BatchRunOptions, BatchRunSummary, BatchRunState, PendingBatch } from './run-batch.ts';
// Why a budget stopped a batch run (`BatchRunSummary.budgetStop`): what it left, the rounds it went in.
export type { BudgetStop } from './budget-rounds.ts';
// A stopped or finished batch run taken up again from its result store: its state, its results.
export { takeUpBatch } from './batch-resume.ts';
export type { BatchTakenUp } from './batch-resume.ts';
export type { BatchApi, BatchRow, SubmittedBatch, BatchProgress, BatchEvent, RowOutcome } from './batch-api.ts';
// What a BatchApi of one's own throws when the provider's queue refuses a batch: the run submits it again later.
export { BatchQueueFullError, isBatchQueueFullError } from './batch-api.ts';
export { SimulatedBatchApi, type SimulatedBatchApiOptions } from './simulated-batch-api.ts';
export { customIdOf } from './custom-id.ts';
