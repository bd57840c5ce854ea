import { systemClock, sleep } from '../clock.ts';
import { usageNanoUsd, withCachePrices, worstCaseNanoUsd } from '../gate/call-cost.ts';
import type { ProviderPrice } from '../gate/provider-options.ts';
import { NANO_USD } from '../quota/budget.ts';
import { describe as deadLetterOf } from '../pipeline/processor.ts';
import type { ArticleError, ArticleResult } from '../pipeline/result.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, ProviderError, type TokenUsage } from '../provider/provider.ts';
import { estimateInputTokens } from '../provider/token-estimate.ts';
import { isRetryError, RETRY_DEFAULTS } from '../retry/retry.ts';
import type { Article } from '../sources/article.ts';
import { requestFor, type TaskSet } from '../tasks/task-set.ts';
import { MissingFieldError } from '../tasks/template.ts';
import { checkDurationMs, checkInteger, checkNumber } from '../validation/checks.ts';
import { isBatchQueueFullError, type BatchApi, type BatchRow, type RowOutcome } from './batch-api.ts';
import { batchTelling } from './batch-telling.ts';
import { nextBatch, ROW_FRAMING_BYTES, type RowSize } from './batch-cut.ts';
import { customIdOf } from './custom-id.ts';
import { BudgetRounds, type BudgetStop } from './budget-rounds.ts';
import { QueueRoom, type QueuedAt } from './queue-room.ts';
import { changedTasks } from '../tasks/task-fingerprint.ts';
import { checkPlan, planRun } from '../pipeline/run-plan.ts';
import { callLive } from './live-fallback.ts';
import { bodyJsonOf } from '../vendors/shared-part.ts';

export { BATCH_DEFAULTS } from './batch-run-options.ts';
export type { PendingBatch, BatchRunState, BatchRunOptions, BatchRunSummary } from './batch-run-options.ts';
import { BATCH_DEFAULTS, type BatchRunOptions, type BatchRunState, type BatchRunSummary, type PendingBatch } from './batch-run-options.ts';

interface Entry {
  readonly article: Article;
  readonly fields: Readonly<Record<string, unknown>>;
  readonly outputs: Record<string, unknown>;
  /** Its rows' custom ids by task, made once: each pass asks for them again. */
  readonly customIds: Record<string, string>;
  calls: number;
  callMs: number;
  costNanoUsd: number;
  /** The tasks answered through the live path, by the provider that answered. */
  servedBy?: Record<string, string>;
  error?: ArticleError;
}

/**
 * A row as the run holds it: what it sends (its body's JSON too between sizing and submitting,
 * then no longer held), its article, its size once asked, and the batch it is in while in flight —
 * one record a row, so that following a row through a batch looks up its custom id once, when its
 * result comes back.
 */
type HeldRow = { -readonly [K in keyof BatchRow]: BatchRow[K] } & {
  readonly entry: Entry;
  size?: RowSize;
  /** The batch the row is in, from its submitting (or a resumed state) until its result is read. */
  batchId?: string | undefined;
};

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
  const maxOutputTokens = options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const maxAttempts = options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts;
  const maxRows = api.maxRows ?? Number.MAX_SAFE_INTEGER;
  const maxBytes = api.maxBytes ?? Infinity;
  const batchSize = options.batchSize ?? maxRows;
  const { queueTokens, fallback } = options;
  const estimate = options.estimateInputTokens ?? estimateInputTokens;
  const fallbackConcurrency = options.fallbackConcurrency ?? BATCH_DEFAULTS.fallbackConcurrency;
  const pollMs = options.pollMs ?? BATCH_DEFAULTS.pollMs;
  const discount = options.batchDiscount ?? BATCH_DEFAULTS.batchDiscount;
  checkInteger('maxOutputTokens', maxOutputTokens, 1);
  checkInteger('maxAttempts', maxAttempts, 1);
  checkInteger('batchSize', batchSize, 1, maxRows);
  if (queueTokens !== undefined) checkInteger('queueTokens', queueTokens, 1);
  checkInteger('fallbackConcurrency', fallbackConcurrency, 1);
  checkDurationMs('pollMs', pollMs, { positive: true });
  checkNumber('batchDiscount', discount, { min: 0, max: 1 });
  if (options.maxCostUsd !== undefined && options.price === undefined) throw new TypeError('maxCostUsd needs a price');
  // The prompt cache's prices, stated or at the vendor's ratios, take the batch discount like the rest.
  const livePrice = options.price === undefined ? undefined : withCachePrices(options.price, options.api.promptCacheRatios);
  const price =
    livePrice === undefined
      ? undefined
      : {
          inputPerMTok: livePrice.inputPerMTok * discount,
          outputPerMTok: livePrice.outputPerMTok * discount,
          cachedInputPerMTok: livePrice.cachedInputPerMTok! * discount,
          cacheWritePerMTok: livePrice.cacheWritePerMTok! * discount,
        };
  const maxNano = options.maxCostUsd === undefined ? Infinity : Math.floor(options.maxCostUsd * NANO_USD + 1e-6);
  // No budget to keep: nothing is held against one.
  const unbudgeted = price === undefined || maxNano === Infinity;

  const batch = { name: api.name, model: api.model, maxOutputTokens };
  const plan = options.plan ?? planRun({ tasks: options.tasks, providers: [], batch });
  checkPlan(plan, { tasks: options.tasks, batch });
  const { tasks, fingerprints } = plan;
  const resume = options.resume;
  const ended = new Set(resume?.ended ?? []);
  const attempts = new Map(Object.entries(resume?.attempts ?? {}));
  let pending = [...(resume?.pending ?? [])];
  const inFlightBefore = new Set(pending.flatMap((batch) => batch.customIds));
  // Rows of a changed task (or of one that depends on one) still in flight: not read back, asked again.
  const stale = new Set<string>();
  let spentNano = resume?.spentNanoUsd ?? 0;
  const entries = new Map<string, Entry>();
  // The articles whose next rows may have become ready: each pass looks at these only, not at every article.
  const toScan = new Set<Entry>();
  const holdArticles = options.holdArticles ?? BATCH_DEFAULTS.holdArticles;
  checkInteger('holdArticles', holdArticles, 1);
  const source = Symbol.asyncIterator in options.source ? options.source[Symbol.asyncIterator]() : options.source[Symbol.iterator]();
  let sourceDone = false;
  // The articles a resumed state holds open (their outputs, their rows in flight): read however many that takes.
  const mustOpen = new Set(Object.keys(resume?.outputs ?? {}));
  /** Reads articles until `holdArticles` are in progress (or the source ends): the run holds no more than that. */
  const readMore = async (): Promise<void> => {
    while (!sourceDone && (entries.size < holdArticles || mustOpen.size > 0)) {
      const next = await source.next();
      if (next.done === true) {
        sourceDone = true;
        return;
      }
      const article = next.value;
      mustOpen.delete(article.id);
      if (ended.has(article.id)) continue;
      const fields = article.fields ?? (article as unknown as Readonly<Record<string, unknown>>);
      const outputs: Record<string, unknown> = { ...article.outputs, ...resume?.outputs[article.id] };
      if (resume?.fingerprints !== undefined) {
        // What the state holds of the article — its outputs, its rows in flight — was made by the tasks as the state says.
        const asked = tasks.tasks.filter((task) => inFlightBefore.has(customIdOf(article.id, task.name)));
        const made = { ...resume.outputs[article.id], ...Object.fromEntries(asked.map((task) => [task.name, true])) };
        for (const task of changedTasks(tasks, fingerprints, resume.fingerprints, made)) {
          delete outputs[task];
          stale.add(customIdOf(article.id, task));
        }
      }
      const entry: Entry = { article, fields, outputs, customIds: {}, calls: 0, callMs: 0, costNanoUsd: 0 };
      entries.set(article.id, entry);
      told?.articleStarted(article);
      toScan.add(entry);
    }
  };
  /** Whether the source was not read to its end; if so, it is let go (its file closed). */
  const closeSource = async (): Promise<boolean> => {
    if (sourceDone) return false;
    await source.return?.();
    return true;
  };
  const told = batchTelling(options.events, clock);
  // Everything a resumed state holds is read first: its rows in flight are read back into their articles.
  await readMore();
  if (stale.size > 0) {
    pending = pending
      .map((batch) => ({ ...batch, customIds: batch.customIds.filter((customId) => !stale.has(customId)) }))
      .filter((batch) => batch.customIds.length > 0);
  }
  // The rows of the batches read back in a pass that go through the live path, and the budget left for them.
  let live: { readonly row: HeldRow; readonly problem: Omit<ArticleError, 'task'> }[] = [];
  let liveLeft = Infinity;
  // The rows made and not yet answered or failed, by custom id: which article and task each is, and what it sends.
  const heldRows = new Map<string, HeldRow>();
  // The JSON of the parts the rows' bodies share (a task's response format), made once this run.
  const partsJson = new Map<object, string>();
  const startMs = clock.now();
  let batches = 0;
  let rows = 0;
  let rowsFailed = 0;
  let rowsExpired = 0;
  let rowsRetried = 0;
  let batchesRefused = 0;
  let rowsLive = 0;
  // Rows per batch at most: halved each time the provider refuses a batch of ours for its queue with
  // nothing else of ours in it, when the queue's tokens are not counted (else the queue's room shrinks).
  let rowCap = batchSize;
  const queue = new QueueRoom(queueTokens);
  const rounds = new BudgetRounds();
  let waitingMs = 0;
  let budgetStopped = false;
  let budgetStop: BudgetStop | undefined;
  let succeeded = 0;
  let failed = 0;

  const state = (): BatchRunState => ({
    pending,
    outputs: Object.fromEntries([...entries].map(([id, entry]) => [id, entry.outputs])),
    attempts: Object.fromEntries(attempts),
    ended: [...ended],
    spentNanoUsd: spentNano,
    fingerprints,
  });
  const rowOf = (entry: Entry, task: TaskSet['tasks'][number]): HeldRow => {
    entry.customIds[task.name] ??= customIdOf(entry.article.id, task.name);
    const customId = entry.customIds[task.name]!;
    const known = heldRows.get(customId);
    if (known !== undefined) return known;
    const request = requestFor(task, entry.article.id, entry.fields, entry.outputs);
    const row: HeldRow = {
      customId,
      request,
      body: api.encode(request, maxOutputTokens),
      bodyJson: undefined,
      entry,
      size: undefined,
      batchId: undefined,
    };
    heldRows.set(customId, row);
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
      callMs: entry.callMs,
      ...(price === undefined ? {} : { costUsd: entry.costNanoUsd / NANO_USD }),
      fingerprints,
      ...(entry.servedBy === undefined ? {} : { servedBy: entry.servedBy }),
      ...(entry.error === undefined ? {} : { error: entry.error }),
    };
    if (entry.error === undefined) succeeded++;
    else failed++;
    told?.result(result);
    await options.onResult?.(result);
  };

  // Rows of a resumed run's batches: their requests are made again from the outputs they were made from.
  const resumedIn = new Map(pending.flatMap((batch) => batch.customIds.map((customId) => [customId, batch.batchId] as const)));
  for (const entry of entries.values()) {
    for (const task of tasks.tasks) {
      const batchId = resumedIn.get(customIdOf(entry.article.id, task.name));
      if (batchId !== undefined) rowOf(entry, task).batchId = batchId;
    }
  }

  while (!options.signal?.aborted) {
    // Each pass submits what has become ready — a task whose dependencies have outputs — without
    // waiting for the other batches in flight: an article's next task goes as soon as it can; and
    // reads as many articles as have ended since the last.
    const ready: HeldRow[] = [];
    // Articles that end here make room for more, read and looked at in the same pass, until the
    // source is done or the run holds all it may.
    do {
      await readMore();
      const scanning = [...toScan];
      toScan.clear();
      for (const entry of scanning) {
        if (!entries.has(entry.article.id)) continue;
        const waiting = tasks.tasks.filter((task) => !Object.hasOwn(entry.outputs, task.name));
        if (waiting.length === 0) {
          await finish(entry);
          continue;
        }
        try {
          for (const task of waiting) {
            if (!task.dependsOn.every((name) => Object.hasOwn(entry.outputs, name))) continue;
            const row = rowOf(entry, task);
            if (row.batchId === undefined) ready.push(row);
          }
        } catch (error) {
          if (!(error instanceof MissingFieldError)) throw error;
          entry.error = { type: error.name, message: error.message, task: error.task, field: error.field };
          await finish(entry);
        }
      }
    } while ((toScan.size > 0 || (entries.size < holdArticles && !sourceDone)) && !options.signal?.aborted);
    const fits = affordable(ready);
    let allowed = await sized(fits);
    // A round the budget cuts short goes while it is not tiny beside the first (budget-rounds.ts); when
    // it does not, batches in flight will free what they hold, and with none the run stops here.
    const cutShort = fits.length < ready.length;
    if (cutShort && !rounds.allows(allowed.length)) {
      if (pending.length === 0) {
        budgetStopped = true;
        budgetStop = rounds.stop(allowed.length, (maxNano - spentNano) / NANO_USD);
      }
      allowed = [];
    }
    const sizes = allowed.map((row) => row.size!);
    // Refused since a batch of ours last ended: one batch goes into the queue, then none until one ends.
    const probing = queue.refusedLately;
    const canSubmit = !(probing && pending.length > 0);
    let tokensRoom = queue.room(enqueuedTokens());
    const rowsBefore = rows;
    for (let at = 0; canSubmit && at < allowed.length && !options.signal?.aborted; ) {
      let cut = nextBatch(sizes, at, { maxRows: rowCap, maxBytes, tokensRoom });
      // With nothing of ours in the queue a row goes whatever the room: the provider says whether it fits.
      if (cut.end === at && pending.length === 0) cut = nextBatch(sizes, at, { maxRows: 1, maxBytes, tokensRoom: Infinity });
      // The queue has no room for the next row until a batch in flight ends.
      if (cut.end === at) break;
      const chunk = allowed.slice(at, cut.end);
      at = cut.end;
      const enqueued = enqueuedTokens();
      let batch: Awaited<ReturnType<BatchApi['submit']>>;
      try {
        batch = await api.submit(chunk);
      } catch (error) {
        if (!isBatchQueueFullError(error)) throw error;
        await refused(chunk, error.message, pending.length === 0, { tokens: cut.tokens, enqueued });
        break;
      }
      queue.submitted(batch.batchId, enqueued);
      for (const row of chunk) {
        if (attempts.has(row.customId)) rowsRetried++;
        row.entry.calls++;
        row.batchId = batch.batchId;
        row.bodyJson = undefined;
      }
      pending = [...pending, { ...batch, customIds: chunk.map((row) => row.customId), inputTokens: cut.tokens }];
      tokensRoom -= cut.tokens;
      told?.batch({ type: 'submitted', batchId: batch.batchId, atMs: clock.now(), rows: chunk.length, status: 'submitted' });
      batches++;
      rows += chunk.length;
      await options.onState?.(state());
      if (probing) break;
    }
    if (cutShort && rows > rowsBefore) rounds.went(rows - rowsBefore);
    // Rows held back (the budget, the queue, a signal) — ready ones still in no batch — are looked at
    // again next pass.
    for (const row of ready) {
      // A row no longer held failed on its way (refused alone): its article was put back already.
      if (heldRows.get(row.customId) === row && row.batchId === undefined) toScan.add(row.entry);
    }
    // Nothing in flight: done, stopped by the budget, or — refused lately — ready rows go a poll later.
    if (pending.length === 0 && (budgetStopped || !queue.refusedLately || ready.length === 0)) break;
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
    const polled = pending;
    const done = polled.filter((_, index) => progress[index]!.ended);
    live = [];
    liveLeft = unbudgeted ? Infinity : budgetLeft(pending.filter((batch) => !done.includes(batch)));
    // A batch of ours that ended has made room in the provider's queue (before the refusals this poll read).
    for (const [index, batch] of polled.entries())
      if (progress[index]!.ended && progress[index]!.queueFull !== true) queue.ended(batch.batchId);
    for (const batch of done) {
      const { status, queueFull } = progress[polled.indexOf(batch)]!;
      told?.batch({ type: 'ended', batchId: batch.batchId, atMs: clock.now(), rows: batch.customIds.length, status });
      if (queueFull === true) {
        const chunk = batch.customIds.flatMap((customId) => heldRows.get(customId) ?? []);
        batches--;
        rows -= chunk.length;
        for (const row of chunk) {
          row.entry.calls--;
          row.batchId = undefined;
        }
        const alone = polled.every((other) => other === batch || done.includes(other));
        const queued = { tokens: batch.inputTokens ?? 0, enqueued: queue.before(batch.batchId), batchId: batch.batchId };
        await refused(chunk, 'the batch failed: token_limit_exceeded', alone, queued);
        continue;
      }
      // Read as they come (a batch's results may be larger than is worth holding), then the rows they
      // said nothing of: a row's result is read once, while its record says it is in this batch.
      const expired = status === 'expired' || status === 'cancelled';
      for await (const outcome of await api.results(batch.batchId)) {
        const row = heldRows.get(outcome.customId);
        if (row?.batchId === batch.batchId) await rowEnded(row, outcome);
      }
      for (const customId of batch.customIds) {
        const row = heldRows.get(customId);
        if (row?.batchId === batch.batchId) {
          await rowEnded(row, { customId, error: `no result for the row (the batch ended ${status})`, expired });
        }
      }
    }
    pending = polled.filter((batch) => !done.includes(batch));
    if (live.length > 0) await goLive(live);
    if (done.length > 0) await options.onState?.(state());
  }

  /** A row's outcome read: its answer kept, or the row goes live, again in a later batch, or fails its article. */
  async function rowEnded(row: HeldRow, outcome: RowOutcome): Promise<void> {
    row.batchId = undefined;
    if (!entries.has(row.entry.article.id)) return;
    toScan.add(row.entry);
    const problem = await settle(row.entry, row, outcome);
    // Answered: its task has an output, so no row of it is made again; held no longer, its request and body go.
    if (problem === undefined) {
      heldRows.delete(outcome.customId);
      return;
    }
    rowsFailed++;
    if ('error' in outcome && outcome.expired === true) rowsExpired++;
    if (fallback !== undefined && (livePrice === undefined || maxNano === Infinity)) {
      live.push({ row, problem });
      return;
    }
    if (fallback !== undefined && livePrice !== undefined) {
      const worst = worstCaseNanoUsd(row.request, maxOutputTokens, livePrice);
      if (worst <= liveLeft) {
        liveLeft -= worst;
        live.push({ row, problem });
        return;
      }
    }
    await failedRow(row, problem);
  }

  /** A row that came back without an answer: again in a later batch, or its article fails once it has had its attempts. */
  async function failedRow(row: HeldRow, problem: Omit<ArticleError, 'task'>): Promise<void> {
    const { customId } = row;
    heldRows.delete(customId);
    const tries = (attempts.get(customId) ?? 0) + 1;
    attempts.set(customId, tries);
    if (tries >= maxAttempts) {
      row.entry.error = { ...problem, task: row.request.task, message: `${problem.message} (after ${tries} attempts)` };
      await finish(row.entry);
    }
  }

  /**
   * Rows the provider refused for its queue: they go again later, not as failed rows, and the
   * queue's room is counted by what the refusal proves (queue-room.ts). Refused with nothing else
   * of ours in the queue, the batch was too large for it: where the queue's tokens are not counted,
   * the next are half the size; a single row refused so is a failed row (the queue cannot take it),
   * so that it ends.
   */
  async function refused(chunk: readonly HeldRow[], reason: string, alone: boolean, queued: QueuedAt): Promise<void> {
    batchesRefused++;
    for (const row of chunk) toScan.add(row.entry);
    const learned = queue.refused(queued);
    if (!alone) return;
    if (chunk.length > 1) {
      if (!learned) rowCap = Math.max(1, Math.floor(chunk.length / 2));
      return;
    }
    rowsFailed++;
    await failedRow(chunk[0]!, { type: 'BatchQueueFullError', message: `${reason}: refused alone, the queue cannot take it` });
  }

  /** The rows' sizes, asked once each (the token estimate only when the queue is counted); a row too large for any batch fails its article. */
  async function sized(candidates: readonly HeldRow[]): Promise<HeldRow[]> {
    const fit: HeldRow[] = [];
    for (const row of candidates) {
      if (row.size === undefined) {
        // Made once: its bytes counted here, sent as it is.
        const bodyJson = maxBytes === Infinity ? undefined : bodyJsonOf(row.body, partsJson);
        const bytes = bodyJson === undefined ? 0 : Buffer.byteLength(bodyJson) + ROW_FRAMING_BYTES;
        const tokens = queueTokens === undefined ? 0 : await estimate(row.request);
        row.size = { bytes, tokens };
        row.bodyJson = bodyJson;
      }
      const { bytes, tokens } = row.size;
      const tooLarge =
        bytes > maxBytes
          ? `its ${bytes} bytes pass the ${maxBytes} a batch takes`
          : queueTokens !== undefined && tokens > queueTokens
            ? `its ${tokens} estimated input tokens pass the queue's ${queueTokens}`
            : undefined;
      if (tooLarge === undefined) fit.push(row);
      else if (row.entry.error === undefined) {
        row.entry.error = { type: 'BatchRowTooLargeError', task: row.request.task, message: `the row cannot go in a batch: ${tooLarge}` };
        await finish(row.entry);
      }
    }
    // An article failed above has no rows left to send.
    return fit.filter((row) => row.entry.error === undefined);
  }

  /** The estimated input tokens of our batches in flight. */
  function enqueuedTokens(): number {
    return pending.reduce((sum, batch) => sum + (batch.inputTokens ?? 0), 0);
  }

  /** Rows that failed in a batch, through the live path: answered there, or their article fails with the reason. */
  async function goLive(items: readonly { readonly row: HeldRow; readonly problem: Omit<ArticleError, 'task'> }[]): Promise<void> {
    rowsLive += items.length;
    const outcomes = await callLive(fallback!, items, (item) => item.row.request, {
      concurrency: fallbackConcurrency,
      maxOutputTokens,
      clock,
      signal: options.signal,
    });
    for (const { item, callMs, ...outcome } of outcomes) {
      const { row } = item;
      const { entry } = row;
      heldRows.delete(row.customId);
      entry.callMs += callMs;
      if (!entries.has(entry.article.id)) continue;
      if ('answer' in outcome) {
        entry.calls += outcome.answer.attempts;
        chargeLive(entry, outcome.answer.response.usage);
        entry.outputs[row.request.task] = outcome.answer.response.output;
        entry.servedBy = { ...entry.servedBy, [row.request.task]: outcome.answer.servedBy ?? fallback!.name };
        continue;
      }
      // Stopped by the signal: the row goes again on a resume.
      if (options.signal?.aborted) continue;
      const last = isRetryError(outcome.error) ? outcome.error.lastError : outcome.error;
      if (last instanceof ProviderError) chargeLive(entry, last.usage);
      entry.calls++;
      // The reason as a live run's dead letter gives it, and what the batch said first.
      const reason = deadLetterOf(outcome.error, row.request.task);
      entry.error = { ...reason, message: `${reason.message} (live, after the batch's ${item.problem.type}: ${item.problem.message})` };
      await finish(entry);
    }
  }

  /** What is left of the budget once the worst cases of the rows in the batches `inFlight` are held. */
  function budgetLeft(inFlight: readonly PendingBatch[] = pending): number {
    if (unbudgeted) return Infinity;
    let left = maxNano - spentNano;
    for (const batch of inFlight) {
      for (const customId of batch.customIds) {
        const row = heldRows.get(customId);
        if (row !== undefined) left -= worstCaseNanoUsd(row.request, maxOutputTokens, price);
      }
    }
    return left;
  }

  /** The first of `ready` (articles furthest on first) whose worst cases, with those in flight, fit what is left of the budget. */
  function affordable(ready: readonly HeldRow[]): readonly HeldRow[] {
    if (unbudgeted) return ready;
    const worst = (row: BatchRow) => worstCaseNanoUsd(row.request, maxOutputTokens, price);
    let left = budgetLeft();
    const allowed: HeldRow[] = [];
    // The rows of the articles furthest on first: a budget ends articles before it starts others.
    const done = (row: HeldRow) => Object.keys(row.entry.outputs).length;
    for (const row of [...ready].sort((a, b) => done(b) - done(a))) {
      const cost = worst(row);
      if (cost > left) break;
      left -= cost;
      allowed.push(row);
    }
    return allowed;
  }

  function charge(entry: Entry, usage: TokenUsage | undefined, at: ProviderPrice | undefined = price): void {
    if (at === undefined || usage === undefined) return;
    const cost = usageNanoUsd(usage, at);
    entry.costNanoUsd += cost;
    spentNano += cost;
  }

  /** A live answer costs the live price. */
  function chargeLive(entry: Entry, usage: TokenUsage | undefined): void {
    charge(entry, usage, livePrice);
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

  told?.ended(options.signal?.aborted === true, budgetStopped);
  return {
    succeeded,
    failed,
    left: entries.size,
    unread: await closeSource(),
    batches,
    rows,
    rowsFailed,
    rowsExpired,
    rowsRetried,
    batchesRefused,
    rowsLive,
    waitingMs,
    ...(price === undefined ? {} : { costUsd: spentNano / NANO_USD }),
    interrupted: options.signal?.aborted === true,
    budgetStopped,
    ...(budgetStop === undefined ? {} : { budgetStop }),
  };
}
