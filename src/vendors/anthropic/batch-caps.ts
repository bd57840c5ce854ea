/** Anthropic's caps on one batch: 100,000 requests, a request of 256 MB. */
export const ANTHROPIC_BATCH_CAPS = Object.freeze({ maxRows: 100_000, maxBytes: 256_000_000 });
