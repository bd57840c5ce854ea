// runBatch at a real provider's pace, on a ManualClock against the in-process simulated Batch API:
// a budget's last part spent in a few rounds, not one tiny batch at a time; a queue that refused a
// batch teaches the run how the provider counts, and is not submitted into again until a batch ends.
import { describe, expect, it } from 'vitest';
import { BatchQueueFullError, type BatchApi, type BatchRow } from '../../src/batch/batch-api.ts';
import { runBatch, type BatchRunOptions, type BatchRunSummary } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { BUDGET_ROUNDS } from '../../src/batch/budget-rounds.ts';
import { ManualClock } from '../../src/clock.ts';
import { inputTokenBound, worstCaseNanoUsd } from '../../src/gate/call-cost.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import type { Provider, TokenUsage } from '../../src/provider/provider.ts';
import type { Article } from '../../src/sources/article.ts';
import { defineTasks, requestFor } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';
import { drive, ScriptedProvider } from '../../src/testing/index.ts';
import '../tokenizer-loaded.ts';

const articles = (count: number): Article[] =>
  Array.from({ length: count }, (_, i) => ({ id: `a${i + 1}`, title: 'Rates', content: 'Rates held at the bank.' }));
/** The built-in summarize task alone: one row an article. */
const SUMMARIZE = defineTasks([loadBuiltinTasks().tasks[0]!]);
const BATCH_MS = 100;

/** A provider that answers every call at once with `usage`. */
function fixedProvider(clock: ManualClock, usage: TokenUsage): Provider {
  const scripted = new ScriptedProvider({ name: 'fixed', clock });
  return { name: 'fixed', call: async (request, options) => ({ ...(await scripted.call(request, options)), usage }) };
}

/**
 * The simulated Batch API on `clock` (a batch takes 100 ms), each submission's rows recorded, and,
 * with `queue`, a provider's queue of `limit` tokens that counts each row's tokens `scale` times the
 * run's estimate (`tokensOf`): a batch that would pass it is refused — at once (`throw`, Anthropic's
 * 429) or once polled (`fail`, OpenAI's failed batch) — and `refusedWhileHeld` counts the refusals
 * met while a batch of the run's was in the queue.
 */
function paced(clock: ManualClock, usage: TokenUsage, queue?: { limit: number; scale: number; tokensOf: number; how: 'throw' | 'fail' }) {
  const inner = new SimulatedBatchApi({ provider: fixedProvider(clock, usage), durationMs: BATCH_MS, clock });
  const submissions: number[] = [];
  const enqueued = new Map<string, { tokens: number; endsAtMs: number }>();
  const failed = new Set<string>();
  const refusals: number[] = [];
  const held = () => [...enqueued.values()].filter((batch) => batch.endsAtMs > clock.now());
  const api: BatchApi = {
    name: inner.name,
    encode: (request, max) => inner.encode(request, max),
    decode: (request, body, max) => inner.decode(request, body, max),
    submit: async (rows: readonly BatchRow[]) => {
      submissions.push(rows.length);
      const tokens = queue === undefined ? 0 : rows.length * queue.tokensOf * queue.scale;
      const inQueue = held();
      const refuse = queue !== undefined && inQueue.reduce((sum, batch) => sum + batch.tokens, 0) + tokens > queue.limit;
      if (refuse) refusals.push(inQueue.length);
      if (refuse && queue.how === 'throw') throw new BatchQueueFullError('429: the queue is full');
      const submitted = await inner.submit(rows);
      if (refuse) failed.add(submitted.batchId);
      else enqueued.set(submitted.batchId, { tokens, endsAtMs: clock.now() + BATCH_MS });
      return submitted;
    },
    poll: async (batchId) =>
      failed.has(batchId) ? { status: 'failed', ended: true, total: 0, completed: 0, failed: 0, queueFull: true } : inner.poll(batchId),
    results: async (batchId) => (failed.has(batchId) ? [] : inner.results(batchId)),
    cancel: (batchId) => inner.cancel(batchId),
  };
  return { api, submissions, refusals };
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

describe('runBatch under maxCostUsd: the budget spent in a few rounds', () => {
  // 1000 USD per million tokens both ways, half that a batch row: 30 tokens a row is 0.015 USD, 300
  // rows 4.50 USD; a row's worst case (its prompt's bytes, 256 output tokens) is some 25 times that.
  const PRICE = { inputPerMTok: 1000, outputPerMTok: 1000 };

  it('a budget a fraction of the whole: a few batches, never over it, what was left said', async () => {
    const clock = new ManualClock();
    const { api, submissions } = paced(clock, { inputTokens: 20, outputTokens: 10 });
    const { summary, results } = await run(clock, { source: articles(300), api, tasks: SUMMARIZE, price: PRICE, maxCostUsd: 3 });
    expect(submissions.length).toBeGreaterThanOrEqual(2);
    expect(submissions.length).toBeLessThanOrEqual(5);
    expect(summary.costUsd!).toBeLessThanOrEqual(3);
    expect(summary).toMatchObject({ budgetStopped: true, failed: 0, interrupted: false });
    expect(summary.succeeded).toBe(results.length);
    expect(summary.succeeded + summary.left).toBe(300);
    expect(summary.left).toBeGreaterThan(0);
    // Why it stopped: the next round, what the budget still holds, against the first.
    expect(summary.budgetStop).toMatchObject({ rounds: submissions.length, firstRoundRows: submissions[0] });
    expect(summary.budgetStop!.leftUsd).toBeCloseTo(3 - summary.costUsd!, 9);
    expect(summary.budgetStop!.rounds).toBeLessThanOrEqual(BUDGET_ROUNDS);
  });

  it('answers at half their worst case: most of the budget spent, in rounds halving to a quarter of the first', async () => {
    const clock = new ManualClock();
    const request = requestFor(SUMMARIZE.tasks[0]!, 'a1', articles(1)[0] as never, {});
    const bound = inputTokenBound(request);
    // A row's worst case at the batch price (half the live one), and answers that cost half of it.
    const worstUsd = worstCaseNanoUsd(request, 256, { inputPerMTok: 500, outputPerMTok: 500 }) / 1e9;
    const { api, submissions } = paced(clock, { inputTokens: Math.floor(bound / 2), outputTokens: 128 });
    const maxCostUsd = 40 * worstUsd;
    const { summary } = await run(clock, { source: articles(300), api, tasks: SUMMARIZE, price: PRICE, maxCostUsd });
    // 40 rows, then the 20 their answers gave back, then 10; 5 would be under a quarter of the first.
    expect(submissions).toEqual([40, 20, 10]);
    expect(summary.costUsd!).toBeLessThanOrEqual(maxCostUsd);
    expect(summary.costUsd!).toBeGreaterThan(maxCostUsd * 0.85);
    expect(summary).toMatchObject({ succeeded: 70, left: 230, budgetStopped: true });
    expect(summary.budgetStop).toMatchObject({ nextRoundRows: 5, firstRoundRows: 40, rounds: 3 });
  });

  it('a budget that covers the whole run: one batch, nothing left', async () => {
    const clock = new ManualClock();
    const { api, submissions } = paced(clock, { inputTokens: 20, outputTokens: 10 });
    const { summary } = await run(clock, { source: articles(300), api, tasks: SUMMARIZE, price: PRICE, maxCostUsd: 1000 });
    expect(submissions).toEqual([300]);
    expect(summary).toMatchObject({ succeeded: 300, left: 0, budgetStopped: false });
    expect(summary.budgetStop).toBeUndefined();
  });
});

describe('runBatch: a queue that refused a batch teaches the run', () => {
  it.each(['throw', 'fail'] as const)(
    'a provider counting 1.5 times the estimate (%s): one refusal in 150 rows, none while a batch of ours is in the queue, every row done',
    async (how) => {
      const clock = new ManualClock();
      const { api, submissions, refusals } = paced(
        clock,
        { inputTokens: 100, outputTokens: 10 },
        { limit: 4000, scale: 1.5, tokensOf: 100, how },
      );
      const { summary } = await run(clock, { source: articles(75), api, queueTokens: 4000, estimateInputTokens: () => 100 });
      expect(summary).toMatchObject({ succeeded: 75, failed: 0, rowsFailed: 0, rows: 150 });
      expect(summary.batchesRefused).toBe(refusals.length);
      // The first batch fills the queue as the run counts it; half of it fits, and the run counts so from then on.
      expect(summary.batchesRefused).toBe(1);
      // The first refusal is met with the queue empty (the run filled it as it counts); none after it with a batch of ours in it.
      expect(refusals.slice(1).every((inQueue) => inQueue === 0)).toBe(true);
      // Accepted batches and refused ones: the refused are all the submissions past the accepted.
      expect(submissions.length).toBe(summary.batches + summary.batchesRefused);
    },
  );

  it('a provider counting 3 times the estimate: the scale learned in two refusals, every row done', async () => {
    const clock = new ManualClock();
    const { api } = paced(clock, { inputTokens: 100, outputTokens: 10 }, { limit: 4000, scale: 3, tokensOf: 100, how: 'fail' });
    const { summary } = await run(clock, { source: articles(75), api, queueTokens: 4000, estimateInputTokens: () => 100 });
    expect(summary).toMatchObject({ succeeded: 75, failed: 0, rowsFailed: 0, rows: 150 });
    // Refused at the whole queue, then at half of it; a quarter fits.
    expect(summary.batchesRefused).toBe(2);
  });
});
