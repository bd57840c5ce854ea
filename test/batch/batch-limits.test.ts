// runBatch on a ManualClock against the in-process simulated Batch API: the queue's token limit
// (never passed; a batch refused for it all the same goes again, not as failed rows), the vendors'
// caps on a batch's rows and bytes, and failed rows sent through the live path (--batch-fallback=live).
import { describe, expect, it } from 'vitest';
import { BatchQueueFullError, type BatchApi, type BatchRow } from '../../src/batch/batch-api.ts';
import { ROW_FRAMING_BYTES } from '../../src/batch/batch-cut.ts';
import { runBatch, type BatchRunOptions, type BatchRunSummary } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { ManualClock } from '../../src/clock.ts';
import { gateCaller } from '../gate-caller.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { ServerError, type LlmRequest, type Provider } from '../../src/provider/provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import type { Article } from '../../src/sources/article.ts';
import { requestFor } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';
import { drive, ScriptedProvider } from '../../src/testing/index.ts';
import '../tokenizer-loaded.ts';

const ARTICLES: Article[] = Array.from({ length: 5 }, (_, i) => ({ id: `a${i + 1}`, title: `Title ${i + 1}`, content: 'Rates held.' }));
const PRICE = { inputPerMTok: 1, outputPerMTok: 4 };
const USAGE = { inputTokens: 1000, outputTokens: 100 };

/** The summarize request of `article`, as the run makes it. */
const requestOf = (article: Article) => requestFor(loadBuiltinTasks().tasks[0]!, article.id, article as never, {});

/** A provider that answers every call at once with a fixed usage, or fails each call with `error`. */
function fixedProvider(clock: ManualClock, error?: Error): Provider & { calls: LlmRequest[] } {
  const scripted = new ScriptedProvider({ name: 'fixed', clock });
  const calls: LlmRequest[] = [];
  return {
    name: 'fixed',
    calls,
    call: async (request, options) => {
      calls.push(request);
      if (error !== undefined) throw error;
      return { ...(await scripted.call(request, options)), usage: USAGE };
    },
  };
}

/**
 * The simulated Batch API on `clock` (a batch takes 100 ms), watched: every submission's rows, the
 * most rows in flight at once, and `refuse` deciding which submissions the provider's queue refuses —
 * at once (`throw`, Anthropic's 429) or once polled (`fail`, OpenAI's failed batch).
 */
function watched(
  clock: ManualClock,
  options: {
    refuse?: (submission: number, rows: readonly BatchRow[]) => 'throw' | 'fail' | undefined;
    caps?: { maxRows?: number; maxBytes?: number };
    provider?: Provider;
  } = {},
) {
  const inner = new SimulatedBatchApi({ provider: options.provider ?? fixedProvider(clock), durationMs: 100, clock });
  const submissions: string[][] = [];
  const bytes: number[] = [];
  const inFlight = new Map<string, number>();
  const failed = new Set<string>();
  let mostInFlight = 0;
  const api: BatchApi = {
    name: inner.name,
    ...options.caps,
    encode: (request, max) => inner.encode(request, max),
    decode: (request, body, max) => inner.decode(request, body, max),
    submit: async (rows) => {
      submissions.push(rows.map((row) => row.request.articleId));
      bytes.push(rows.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row.body)), 0));
      const refusal = options.refuse?.(submissions.length, rows);
      if (refusal === 'throw') throw new BatchQueueFullError('429: the queue is full');
      const submitted = await inner.submit(rows);
      if (refusal === 'fail') failed.add(submitted.batchId);
      else inFlight.set(submitted.batchId, rows.length);
      mostInFlight = Math.max(
        mostInFlight,
        [...inFlight.values()].reduce((sum, n) => sum + n, 0),
      );
      return submitted;
    },
    poll: async (batchId) => {
      if (failed.has(batchId)) return { status: 'failed', ended: true, total: 0, completed: 0, failed: 0, queueFull: true };
      const progress = await inner.poll(batchId);
      if (progress.ended) inFlight.delete(batchId);
      return progress;
    },
    results: async (batchId) => (failed.has(batchId) ? [] : inner.results(batchId)),
    cancel: (batchId) => inner.cancel(batchId),
  };
  return { api, submissions, bytes, mostInFlight: () => mostInFlight };
}

async function run(clock: ManualClock, options: Omit<BatchRunOptions, 'clock' | 'pollMs'>) {
  const results: ArticleResult[] = [];
  const summary: BatchRunSummary = await drive(
    clock,
    runBatch({ pollMs: 50, clock, onResult: (result) => void results.push(result), ...options }),
    10,
  );
  return { summary, results };
}

describe('runBatch: the queue limit (queueTokens)', () => {
  it('never has more estimated tokens enqueued than queueTokens: later batches wait for earlier ones', async () => {
    const clock = new ManualClock();
    const { api, submissions, mostInFlight } = watched(clock);
    // 100 tokens a row, room for 250: two rows in flight at most.
    const { summary } = await run(clock, { source: ARTICLES, api, queueTokens: 250, estimateInputTokens: () => 100 });
    expect(summary).toMatchObject({ succeeded: 5, failed: 0, rowsFailed: 0, batchesRefused: 0, rows: 10 });
    expect(mostInFlight()).toBe(2);
    expect(submissions.every((rows) => rows.length <= 2)).toBe(true);
    // Without the limit the first round is one batch of five.
    const freeClock = new ManualClock();
    const unlimited = watched(freeClock);
    await run(freeClock, { source: ARTICLES, api: unlimited.api });
    expect(unlimited.submissions[0]).toHaveLength(5);
  });

  it.each(['throw', 'fail'] as const)('a batch the queue refuses (%s) goes again later, its rows not counted as failed', async (how) => {
    const clock = new ManualClock();
    const { api, submissions } = watched(clock, { refuse: (n) => (n === 1 ? how : undefined) });
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 2), api, maxAttempts: 1 });
    expect(summary).toMatchObject({ succeeded: 2, failed: 0, rowsFailed: 0, rowsRetried: 0, batchesRefused: 1, batches: 4, rows: 4 });
    // Refused alone with nothing else of ours in the queue: the next try is half the size.
    expect(submissions.map((rows) => rows.length)).toEqual([2, 1, 1, 1, 1]);
    // A refused submission is no attempt: each article's two tasks took one each.
    for (const result of results) expect(result.attempts).toBe(2);
  });

  it('a row the queue refuses alone, again and again, ends failed after maxAttempts', async () => {
    const clock = new ManualClock();
    const { api, submissions } = watched(clock, { refuse: () => 'throw' });
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 1), api, maxAttempts: 2 });
    expect(summary).toMatchObject({ succeeded: 0, failed: 1, batchesRefused: 2, batches: 0 });
    expect(submissions).toHaveLength(2);
    expect(results[0]!.error).toEqual({
      type: 'BatchQueueFullError',
      task: 'summarize',
      message: '429: the queue is full: refused alone, the queue cannot take it (after 2 attempts)',
    });
  });

  it('fails the article of a row larger than the whole queue, and runs the others', async () => {
    const clock = new ManualClock();
    const { api } = watched(clock);
    const estimate = (request: LlmRequest) => (request.articleId === 'a2' ? 1000 : 10);
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 3), api, queueTokens: 100, estimateInputTokens: estimate });
    expect(summary).toMatchObject({ succeeded: 2, failed: 1 });
    expect(results.find((result) => result.id === 'a2')!.error).toEqual({
      type: 'BatchRowTooLargeError',
      task: 'summarize',
      message: "the row cannot go in a batch: its 1000 estimated input tokens pass the queue's 100",
    });
  });

  it('refuses a queueTokens that is not a whole number ≥ 1', async () => {
    const { api } = watched(new ManualClock());
    await expect(runBatch({ source: [], api, queueTokens: 0 })).rejects.toThrow(TypeError);
  });
});

describe("runBatch: a vendor's caps on a batch", () => {
  it('cuts a round into batches of maxRows, and of maxBytes', async () => {
    const clock = new ManualClock();
    const byRows = watched(clock, { caps: { maxRows: 2 } });
    await run(clock, { source: ARTICLES, api: byRows.api });
    expect(byRows.submissions.map((rows) => rows.length)).toEqual([2, 2, 1, 2, 2, 1]);

    const bytesClock = new ManualClock();
    const oneRow = watched(new ManualClock(), { caps: {} });
    const rowBytes = Buffer.byteLength(JSON.stringify(oneRow.api.encode(requestOf(ARTICLES[0]!), 256))) + ROW_FRAMING_BYTES;
    // Room for two rows and a half: the five summarize rows go as 2, 2, 1.
    const byBytes = watched(bytesClock, { caps: { maxBytes: Math.floor(rowBytes * 2.5) } });
    await run(bytesClock, { source: ARTICLES, api: byBytes.api });
    expect(byBytes.submissions.slice(0, 3).map((rows) => rows.length)).toEqual([2, 2, 1]);
    for (const [index, sent] of byBytes.bytes.entries()) {
      expect(sent + byBytes.submissions[index]!.length * ROW_FRAMING_BYTES).toBeLessThanOrEqual(rowBytes * 2.5);
    }
  });

  it('goes no lower than batchSize, and refuses one above the vendor cap', async () => {
    const clock = new ManualClock();
    const { api, submissions } = watched(clock, { caps: { maxRows: 4 } });
    await run(clock, { source: ARTICLES, api, batchSize: 3 });
    expect(submissions.map((rows) => rows.length)).toEqual([3, 2, 3, 2]);
    await expect(runBatch({ source: [], api, batchSize: 5 })).rejects.toThrow('Expected batchSize');
  });

  it('fails the article of a row larger than a whole batch', async () => {
    const clock = new ManualClock();
    const { api } = watched(clock, { caps: { maxBytes: 100 } });
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 1), api });
    expect(summary).toMatchObject({ failed: 1, batches: 0 });
    expect(results[0]!.error!.message).toMatch(/^the row cannot go in a batch: its \d+ bytes pass the 100 a batch takes$/);
  });
});

describe('runBatch: failed rows through the live path (fallback)', () => {
  it('answers the rows a batch failed through the route, at the live price, and says which served them', async () => {
    const clock = new ManualClock();
    // Every row of every batch errors: each goes live.
    const { api, submissions } = watched(clock, { provider: fixedProvider(clock, new ServerError('overloaded', { status: 529 })) });
    const live = fixedProvider(clock);
    const fallback = gateCaller({ provider: live, limits: requestLimit(Infinity, 1), clock });
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 2), api, fallback, price: PRICE });
    expect(summary).toMatchObject({ succeeded: 2, failed: 0, rowsFailed: 4, rowsLive: 4, rowsRetried: 0, batches: 2 });
    expect(submissions).toHaveLength(2);
    expect(live.calls).toHaveLength(4);
    for (const result of results) {
      expect(result.servedBy).toEqual({ summarize: 'fixed', sentiment: 'fixed' });
      // Two live answers of 1000 + 100 tokens at 1 and 4 USD per million, full price: 2 × 0.0014.
      expect(result.costUsd).toBeCloseTo(0.0028, 9);
      expect(result.attempts).toBe(4);
    }
  });

  it("fails the article with the live call's reason and the batch's", async () => {
    const clock = new ManualClock();
    const { api } = watched(clock, { provider: fixedProvider(clock, new ServerError('overloaded', { status: 529 })) });
    const refused = new ServerError('still down', { status: 503 });
    const fallback = gateCaller({
      provider: fixedProvider(clock, refused),
      limits: requestLimit(Infinity, 1),
      clock,
      retry: { maxAttempts: 1 },
    });
    const { summary, results } = await run(clock, { source: ARTICLES.slice(0, 1), api, fallback });
    expect(summary).toMatchObject({ failed: 1, rowsLive: 1 });
    expect(results[0]!.error).toEqual({
      type: 'ServerError',
      task: 'summarize',
      message: "gave up after 1 attempt: still down (live, after the batch's BatchRowError: ServerError: overloaded)",
    });
  });

  it('under maxCostUsd, sends live only the rows whose worst case at the live price fits', async () => {
    const clock = new ManualClock();
    const { api, submissions } = watched(clock, { provider: fixedProvider(clock, new ServerError('overloaded', { status: 529 })) });
    const live = fixedProvider(clock);
    const fallback = gateCaller({ provider: live, limits: requestLimit(Infinity, 1), clock });
    // A summarize row's worst case at half price (~0.0013 USD) fits, at the live price (~0.0026) it does not: it goes again in a batch.
    const { summary } = await run(clock, { source: ARTICLES.slice(0, 1), api, fallback, price: PRICE, maxCostUsd: 0.002, maxAttempts: 2 });
    expect(live.calls).toHaveLength(0);
    expect(submissions).toHaveLength(2);
    expect(summary).toMatchObject({ rowsLive: 0, failed: 1 });
  });
});
