import { systemClock, sleep, type Clock } from '../clock.ts';
import { usageNanoUsd, worstCaseNanoUsd } from '../gate/call-cost.ts';
import type { ProviderPrice } from '../gate/provider-options.ts';
import { NANO_USD } from '../quota/budget.ts';
import type { ArticleError, ArticleResult } from '../pipeline/result.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, ProviderError, type TokenUsage } from '../provider/provider.ts';
import { RETRY_DEFAULTS } from '../retry/retry.ts';
import type { Article } from '../sources/article.ts';
import { requestFor, type TaskSet } from '../tasks/task-set.ts';
import { loadBuiltinTasks } from '../tasks/tasks-file.ts';
import { MissingFieldError } from '../tasks/template.ts';
import { checkDurationMs, checkInteger, checkNumber } from '../validation/checks.ts';
import type { BatchApi, BatchEvent, BatchProgress, BatchRow, RowOutcome } from './batch-api.ts';
import { customIdOf } from './custom-id.ts';

/** What a batch run does unless told otherwise. */
export const BATCH_DEFAULTS = Object.freeze({
  /** How often a batch is asked how it stands, in ms. */
  pollMs: 30_000,
  /** Rows per batch at most: OpenAI's cap (Anthropic's is 100,000). */
  batchSize: 50_000,
  /** Both vendors' published discount: a batch call costs this share of the live price. */
  batchDiscount: 0.5,
});

/** A batch submitted and not yet read back: what a resume re-attaches to. */
export interface PendingBatch {
  /** The provider's id for it. */
  readonly batchId: string;
  /** Its input file, where the vendor has one. @default none */
  readonly fileId?: string | undefined;
  /** Its rows' custom ids. */
  readonly customIds: readonly string[];
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
}

/** What {@link runBatch} runs, through which Batch API, and what it is told. */
export interface BatchRunOptions {
  /** The articles: read whole before the first batch (a batch run holds every article's state). */
  readonly source: Iterable<Article> | AsyncIterable<Article>;
  /** The vendor's Batch API (`OpenAiBatchApi`, `SimulatedBatchApi`). */
  readonly api: BatchApi;
  /** Every article's tasks. @default the built-in summarize, then sentiment */
  readonly tasks?: TaskSet | undefined;
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
  /** Rows per batch at most. @default BATCH_DEFAULTS.batchSize */
  readonly batchSize?: number | undefined;
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
  /** Told each batch as this run submits it and as it ends, read back (a resumed run's batches only as they end). @default none */
  readonly onBatch?: ((event: BatchEvent) => void) | undefined;
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
  /** Articles not ended: stopped by the signal or the budget, left for a resume. */
  readonly left: number;
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
  /** Time spent waiting for batches, in ms. */
  readonly waitingMs: number;
  /** What the answers cost at the batch price, in USD; absent without a price. */
  readonly costUsd?: number;
  /** The signal stopped the waiting. */
  readonly interrupted: boolean;
  /** The budget could not cover the next row. */
  readonly budgetStopped: boolean;
}

interface Entry {
  readonly article: Article;
  readonly fields: Readonly<Record<string, unknown>>;
  readonly outputs: Record<string, unknown>;
  calls: number;
  costNanoUsd: number;
  error?: ArticleError;
}

/**
 * Runs every article's tasks through a vendor's Batch API: a round per dependency level (a task's
 * row goes once its dependencies have outputs), each row the request a live call sends, each answer
 * decoded and checked against its schema as a live one. Rows that come back without an answer go
 * again in a later batch up to `maxAttempts`; then their article fails with the reason. Every
 * article that ends is told to `onResult` as an `ArticleResult`, as `runPipeline` tells it.
 */
export async function runBatch(options: BatchRunOptions): Promise<BatchRunSummary> {
  const clock = options.clock ?? systemClock;
  const { api } = options;
  const tasks = options.tasks ?? loadBuiltinTasks();
  const maxOutputTokens = options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const maxAttempts = options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts;
  const batchSize = options.batchSize ?? BATCH_DEFAULTS.batchSize;
  const pollMs = options.pollMs ?? BATCH_DEFAULTS.pollMs;
  const discount = options.batchDiscount ?? BATCH_DEFAULTS.batchDiscount;
  checkInteger('maxOutputTokens', maxOutputTokens, 1);
  checkInteger('maxAttempts', maxAttempts, 1);
  checkInteger('batchSize', batchSize, 1);
  checkDurationMs('pollMs', pollMs, { positive: true });
  checkNumber('batchDiscount', discount, { min: 0, max: 1 });
  if (options.maxCostUsd !== undefined && options.price === undefined) throw new TypeError('maxCostUsd needs a price');
  const price =
    options.price === undefined
      ? undefined
      : { inputPerMTok: options.price.inputPerMTok * discount, outputPerMTok: options.price.outputPerMTok * discount };
  const maxNano = options.maxCostUsd === undefined ? Infinity : Math.floor(options.maxCostUsd * NANO_USD + 1e-6);

  const resume = options.resume;
  const ended = new Set(resume?.ended ?? []);
  const attempts = new Map(Object.entries(resume?.attempts ?? {}));
  let pending = [...(resume?.pending ?? [])];
  let spentNano = resume?.spentNanoUsd ?? 0;
  const entries = new Map<string, Entry>();
  for await (const article of options.source) {
    if (ended.has(article.id)) continue;
    const fields = article.fields ?? (article as unknown as Readonly<Record<string, unknown>>);
    const outputs = { ...article.outputs, ...resume?.outputs[article.id] };
    entries.set(article.id, { article, fields, outputs, calls: 0, costNanoUsd: 0 });
  }
  // Which article and task each custom id is, and the request it carries.
  const owners = new Map<string, { readonly entry: Entry; readonly row: BatchRow }>();
  const inFlight = new Set(pending.flatMap((batch) => batch.customIds));
  const startMs = clock.now();
  let batches = 0;
  let rows = 0;
  let rowsFailed = 0;
  let rowsExpired = 0;
  let rowsRetried = 0;
  let waitingMs = 0;
  let budgetStopped = false;
  let succeeded = 0;
  let failed = 0;

  const state = (): BatchRunState => ({
    pending,
    outputs: Object.fromEntries([...entries].map(([id, entry]) => [id, entry.outputs])),
    attempts: Object.fromEntries(attempts),
    ended: [...ended],
    spentNanoUsd: spentNano,
  });
  const rowOf = (entry: Entry, task: TaskSet['tasks'][number]): BatchRow => {
    const customId = customIdOf(entry.article.id, task.name);
    const known = owners.get(customId);
    if (known !== undefined) return known.row;
    const request = requestFor(task, entry.article.id, entry.fields, entry.outputs);
    const row = { customId, request, body: api.encode(request, maxOutputTokens) };
    owners.set(customId, { entry, row });
    return row;
  };
  const finish = async (entry: Entry) => {
    entries.delete(entry.article.id);
    ended.add(entry.article.id);
    const result: ArticleResult = {
      id: entry.article.id,
      title: entry.article.title,
      status: entry.error === undefined ? 'succeeded' : 'failed',
      outputs: entry.outputs,
      attempts: entry.calls,
      elapsedMs: clock.now() - startMs,
      callMs: 0,
      ...(price === undefined ? {} : { costUsd: entry.costNanoUsd / NANO_USD }),
      ...(entry.error === undefined ? {} : { error: entry.error }),
    };
    if (entry.error === undefined) succeeded++;
    else failed++;
    await options.onResult?.(result);
  };

  // Rows of a resumed run's batches: their requests are made again from the outputs they were made from.
  for (const entry of entries.values()) {
    for (const task of tasks.tasks) {
      if (inFlight.has(customIdOf(entry.article.id, task.name))) rowOf(entry, task);
    }
  }

  while (!options.signal?.aborted) {
    // Each pass submits what has become ready — a task whose dependencies have outputs — without
    // waiting for the other batches in flight: an article's next task goes as soon as it can.
    const inFlightNow = new Set(pending.flatMap((batch) => batch.customIds));
    const ready: BatchRow[] = [];
    for (const entry of [...entries.values()]) {
      const waiting = tasks.tasks.filter((task) => !Object.hasOwn(entry.outputs, task.name));
      if (waiting.length === 0) {
        await finish(entry);
        continue;
      }
      try {
        for (const task of waiting) {
          if (!task.dependsOn.every((name) => Object.hasOwn(entry.outputs, name))) continue;
          const row = rowOf(entry, task);
          if (!inFlightNow.has(row.customId)) ready.push(row);
        }
      } catch (error) {
        if (!(error instanceof MissingFieldError)) throw error;
        entry.error = { type: error.name, message: error.message, task: error.task, field: error.field };
        await finish(entry);
      }
    }
    const allowed = affordable(ready, inFlightNow);
    // Nothing fits now, and nothing in flight will free any of the budget: the run stops here.
    if (ready.length > 0 && allowed.length === 0 && pending.length === 0) budgetStopped = true;
    for (let at = 0; at < allowed.length && !options.signal?.aborted; at += batchSize) {
      const chunk = allowed.slice(at, at + batchSize);
      const submitted = await api.submit(chunk);
      for (const row of chunk) {
        if (attempts.has(row.customId)) rowsRetried++;
        owners.get(row.customId)!.entry.calls++;
      }
      pending = [...pending, { ...submitted, customIds: chunk.map((row) => row.customId) }];
      options.onBatch?.({ type: 'submitted', batchId: submitted.batchId, atMs: clock.now(), rows: chunk.length, status: 'submitted' });
      batches++;
      rows += chunk.length;
      await options.onState?.(state());
    }
    if (pending.length === 0) break;
    const waitStart = clock.now();
    try {
      await sleep(clock, pollMs, options.signal);
    } catch {
      waitingMs += clock.now() - waitStart;
      break;
    }
    waitingMs += clock.now() - waitStart;
    const progress = await Promise.all(pending.map((batch) => api.poll(batch.batchId)));
    options.onProgress?.(progress);
    const done = pending.filter((_, index) => progress[index]!.ended);
    for (const batch of done) {
      const status = progress[pending.indexOf(batch)]!.status;
      const outcomes = new Map((await api.results(batch.batchId)).map((outcome) => [outcome.customId, outcome]));
      options.onBatch?.({ type: 'ended', batchId: batch.batchId, atMs: clock.now(), rows: batch.customIds.length, status });
      for (const customId of batch.customIds) {
        const owner = owners.get(customId);
        if (owner === undefined || !entries.has(owner.entry.article.id)) continue;
        const outcome: RowOutcome = outcomes.get(customId) ?? {
          customId,
          error: `no result for the row (the batch ended ${status})`,
          expired: status === 'expired' || status === 'cancelled',
        };
        const problem = await settle(owner.entry, owner.row, outcome);
        if (problem === undefined) continue;
        rowsFailed++;
        if ('error' in outcome && outcome.expired === true) rowsExpired++;
        owners.delete(customId);
        const tries = (attempts.get(customId) ?? 0) + 1;
        attempts.set(customId, tries);
        if (tries >= maxAttempts) {
          owner.entry.error = { ...problem, task: owner.row.request.task, message: `${problem.message} (after ${tries} attempts)` };
          await finish(owner.entry);
        }
      }
    }
    pending = pending.filter((batch) => !done.includes(batch));
    if (done.length > 0) await options.onState?.(state());
  }

  /** The first of `ready` whose worst cases, with those of the rows in flight, fit what is left of the budget. */
  function affordable(ready: readonly BatchRow[], inFlight: ReadonlySet<string>): readonly BatchRow[] {
    if (price === undefined || maxNano === Infinity) return ready;
    const worst = (row: BatchRow) => worstCaseNanoUsd(row.request, maxOutputTokens, price);
    let left = maxNano - spentNano;
    for (const customId of inFlight) {
      const owner = owners.get(customId);
      if (owner !== undefined) left -= worst(owner.row);
    }
    const allowed: BatchRow[] = [];
    for (const row of ready) {
      const cost = worst(row);
      if (cost > left) break;
      left -= cost;
      allowed.push(row);
    }
    return allowed;
  }

  function charge(entry: Entry, usage: TokenUsage | undefined): void {
    if (price === undefined || usage === undefined) return;
    const cost = usageNanoUsd(usage, price);
    entry.costNanoUsd += cost;
    spentNano += cost;
  }

  async function settle(entry: Entry, row: BatchRow, outcome: RowOutcome): Promise<Omit<ArticleError, 'task'> | undefined> {
    if (!('body' in outcome)) return { type: outcome.expired === true ? 'BatchExpiredError' : 'BatchRowError', message: outcome.error };
    try {
      const response = await api.decode(row.request, outcome.body, maxOutputTokens);
      charge(entry, response.usage);
      entry.outputs[row.request.task] = response.output;
      return undefined;
    } catch (error) {
      // An answer that does not fit its schema, or was cut off, was billed all the same.
      if (error instanceof ProviderError) charge(entry, error.usage);
      return { type: (error as Error).name, message: (error as Error).message };
    }
  }

  return {
    succeeded,
    failed,
    left: entries.size,
    batches,
    rows,
    rowsFailed,
    rowsExpired,
    rowsRetried,
    waitingMs,
    ...(price === undefined ? {} : { costUsd: spentNano / NANO_USD }),
    interrupted: options.signal?.aborted === true,
    budgetStopped,
  };
}
