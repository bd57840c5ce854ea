import { hostname } from 'node:os';
import type { Job, Worker as BullWorker } from 'bullmq';
import { loadOptional } from '../optional-package.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import { runPipeline, type PipelineOptions } from '../pipeline/run.ts';
import type { RunSummary } from '../pipeline/metrics.ts';
import type { Article } from '../sources/article.ts';
import { checkDurationMs, checkObject } from '../validation/checks.ts';
import type { ArticleJobData, ArticleQueue } from './article-queue.ts';
import { jobIdOf } from './job-ids.ts';

/** What a queue worker does unless told otherwise. */
export const QUEUE_WORKER_DEFAULTS = Object.freeze({
  /**
   * How long a job's lock lasts unless renewed (it is, every half of it, while the worker lives):
   * a killed worker's jobs wait this long before they can be taken again. BullMQ's default.
   */
  lockDurationMs: 30_000,
  /**
   * How often a worker looks for jobs whose lock has run out (their worker died) and puts them
   * back: a killed worker's jobs are taken again within lockDuration + stalledInterval. Each look
   * is one script on the queue's keys. BullMQ's default.
   */
  stalledIntervalMs: 30_000,
  /** After a stop (SIGTERM), how long the calls under way may go on before they are cut and their jobs put back. */
  graceMs: 10_000,
  /** With `exitWhenDrained`: how often an idle worker asks whether the queue is done. */
  drainCheckMs: 500,
});

export interface QueueWorkerOptions extends Omit<PipelineOptions, 'source' | 'total'> {
  readonly queue: ArticleQueue;
  /** End once nothing is left on the queue (waiting, delayed or running anywhere). @default false: wait for more */
  readonly exitWhenDrained?: boolean | undefined;
  /** Aborting it stops taking jobs and lets the calls under way finish within `graceMs`. @default none */
  readonly stopSignal?: AbortSignal | undefined;
  /** @default QUEUE_WORKER_DEFAULTS.graceMs */
  readonly graceMs?: number | undefined;
  /** @default QUEUE_WORKER_DEFAULTS.lockDurationMs */
  readonly lockDurationMs?: number | undefined;
  /** @default QUEUE_WORKER_DEFAULTS.stalledIntervalMs */
  readonly stalledIntervalMs?: number | undefined;
  /** The name `status` lists the worker by. @default `host:pid` */
  readonly workerName?: string | undefined;
}

/** A worker's run: the pipeline's figures for the articles it took, and what it gave back. */
export interface QueueWorkerSummary extends RunSummary {
  /** Jobs put back on the queue unfinished (a stop, or cut at the end of the grace period). */
  readonly returned: number;
}

/** A job taken, waiting for its article's result. */
interface Taken {
  readonly job: Job<ArticleJobData, ArticleResult>;
  readonly settle: (result: ArticleResult | undefined) => void;
}

/**
 * Takes the queue's jobs and runs their articles through the same pipeline as a local run — the
 * same admission, limits, retries, breaker and budget — `workers` at a time, until stopped or,
 * with `exitWhenDrained`, until the queue is done. A succeeded article completes its job with
 * the result; a dead letter fails it, keeping the result (its outputs and reason) for `collect`;
 * an article cut short (a stop) puts its job back for another worker. Any number of workers, on
 * any number of machines, share one queue and — through `RedisLimits` — one quota.
 *
 * A worker that dies (`kill -9`) leaves its jobs locked until the lock runs out; another worker's
 * stalled check then puts them back, and the calls the dead one had made for them are counted as
 * `repeatedCalls`.
 */
export async function runQueueWorker(options: QueueWorkerOptions): Promise<QueueWorkerSummary> {
  checkObject('options', options);
  const { queue, exitWhenDrained = false, stopSignal } = options;
  const graceMs = options.graceMs ?? QUEUE_WORKER_DEFAULTS.graceMs;
  const lockDurationMs = options.lockDurationMs ?? QUEUE_WORKER_DEFAULTS.lockDurationMs;
  const stalledIntervalMs = options.stalledIntervalMs ?? QUEUE_WORKER_DEFAULTS.stalledIntervalMs;
  checkDurationMs('graceMs', graceMs, { positive: false });
  checkDurationMs('lockDurationMs', lockDurationMs, { positive: true });
  checkDurationMs('stalledIntervalMs', stalledIntervalMs, { positive: true });
  const workers = options.workers ?? 5;
  const { Worker, WaitingError, UnrecoverableError } = await loadOptional('bullmq', 'the article queue', () => import('bullmq'));

  const taken = new Map<string, Taken>();
  const inbox = new Inbox<Article>();
  let returned = 0;
  // Stopping: no more jobs; those not started go back at once, those under way get the grace period.
  const cut = new AbortController();
  const pipelineSignal = options.signal === undefined ? cut.signal : AbortSignal.any([options.signal, cut.signal]);
  let stopping = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let worker: BullWorker<ArticleJobData, ArticleResult> | undefined;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void worker?.pause(true).catch(() => {});
    for (const article of inbox.drain()) taken.get(article.id)?.settle(undefined);
    inbox.close();
    if (taken.size > 0 && graceMs < Infinity) graceTimer = setTimeout(() => cut.abort(new Error('the grace period ran out')), graceMs);
  };
  stopSignal?.addEventListener('abort', stop, { once: true });
  if (stopSignal?.aborted) stop();

  const client = queue.redis.createClient({ maxRetriesPerRequest: null, enableOfflineQueue: true });
  worker = new Worker<ArticleJobData, ArticleResult>(
    queue.name,
    async (job, token) => {
      const article = job.data.article;
      const result = await new Promise<ArticleResult | undefined>((settle) => {
        taken.set(article.id, { job, settle });
        if (stopping) settle(undefined);
        else inbox.push(article);
      });
      taken.delete(article.id);
      if (result !== undefined && result.status !== 'cancelled') {
        // Its calls are settled once BullMQ has it finished (the 'completed' and 'failed' events):
        // a worker dying before then leaves the job to run again, its calls still counted.
        if (result.status === 'succeeded') return result;
        await job.updateData({ ...job.data, result });
        throw new UnrecoverableError(`${result.error?.type ?? 'Error'}: ${result.error?.message ?? 'failed'}`);
      }
      // Not started, or cut short: back on the queue for another worker.
      returned++;
      await job.moveToWait(token);
      throw new WaitingError();
    },
    {
      connection: client,
      prefix: queue.bullPrefix,
      concurrency: workers,
      lockDuration: lockDurationMs,
      stalledInterval: stalledIntervalMs,
      name: options.workerName ?? `${hostname()}:${process.pid}`,
      autorun: false,
    },
  );
  // A lost connection shows as error events while the client reconnects; the jobs it held come back by the stalled check.
  worker.on('error', () => {});
  const settle = (job: Job<ArticleJobData, ArticleResult> | undefined, result: ArticleResult | undefined) => {
    if (job?.id !== undefined && result !== undefined) void queue.settleCalls(job.id, result.attempts).catch(() => {});
  };
  worker.on('completed', (job, result) => settle(job, result));
  // A dead letter's result was put in its data before it failed (a put-back job is not 'failed').
  worker.on('failed', (job) => settle(job, job?.data.result));

  let drainTimer: NodeJS.Timeout | undefined;
  if (exitWhenDrained) {
    const check = async () => {
      if (!stopping && taken.size === 0 && (await queue.drained().catch(() => false))) stop();
      if (!stopping) drainTimer = setTimeout(check, QUEUE_WORKER_DEFAULTS.drainCheckMs);
    };
    drainTimer = setTimeout(check, QUEUE_WORKER_DEFAULTS.drainCheckMs);
  }

  const onAttempt = options.onAttempt;
  const running = worker.run();
  let summary: RunSummary;
  try {
    summary = await runPipeline({
      ...options,
      source: inbox,
      signal: pipelineSignal,
      // Counted as it is sent, not when it answers: a worker killed mid-call has paid for it.
      onSend: (request) => {
        queue.countCall(jobIdOf(request.articleId));
        options.onSend?.(request);
      },
      onAttempt,
      onResult: async (result) => {
        await options.onResult?.(result);
        taken.get(result.id)?.settle(result);
      },
    });
  } finally {
    // The pipeline ended on its own (a stop rule, the caller's signal): nothing more is taken.
    stop();
    clearTimeout(graceTimer);
    clearTimeout(drainTimer);
    stopSignal?.removeEventListener('abort', stop);
    for (const { settle } of taken.values()) settle(undefined);
    await worker.close().catch(() => {});
    await running.catch(() => {});
    // BullMQ leaves a client it was given open (it may be shared): this one is the worker's own.
    client.disconnect();
  }
  return { ...summary, returned };
}

/** The articles of the jobs taken, in the order taken, as the pipeline's source: ends once closed and empty. */
class Inbox<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #closed = false;

  push(item: T): void {
    this.#items.push(item);
    this.#wake?.();
  }

  /** Takes out everything not yet handed over. */
  drain(): T[] {
    return this.#items.splice(0);
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}
