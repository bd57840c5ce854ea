/**
 * Gemini's caps on one inline batch: the `batchGenerateContent` request under 20 MB (larger input
 * goes through the Files API, which this does not use: a run cuts its rows into batches under the
 * cap instead), and a row cap as Anthropic's, which Google does not state.
 */
export const GEMINI_BATCH_CAPS = Object.freeze({ maxRows: 100_000, maxBytes: 20_000_000 });
