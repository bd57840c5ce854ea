/** OpenAI's caps on one batch: 50,000 requests, an input file of 200 MB. */
export const OPENAI_BATCH_CAPS = Object.freeze({ maxRows: 50_000, maxBytes: 200_000_000 });
