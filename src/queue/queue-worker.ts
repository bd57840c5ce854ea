import { hostname } from 'node:os';
import type { Job, Worker as BullWorker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { isLimiterUnavailableError, LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { loadOptional } from '../optional-package.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import { PIPELINE_DEFAULTS, runPipeline, type PipelineOptions } from '../pipeline/run.ts';
import { RunEvents } from '../pipeline/run-events.ts';
import type { RunStop, RunSummary } from '../pipeline/metrics.ts';
import type { Article } from '../sources/article.ts';
import { checkDurationMs, checkObject } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import type { ArticleJobData, ArticleQueue } from './article-queue.ts';
import { jobIdOf } from './job-ids.ts';
import type { QueueLoss, QueueSnapshot } from './queue-presence.ts';

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
  /**
   * How long the worker waits for a lost Redis to answer again — holding its jobs, starting none —
   * before it stops, in ms: what a run gives a provider that stays down (`PIPELINE_DEFAULTS.giveUpAfterMs`),
   * long enough for a restart or a failover, short enough that a Redis gone for good ends the worker.
   */
  redisGiveUpMs: PIPELINE_DEFAULTS.giveUpAfterMs,
});

/**
 * How often a worker says it is alive, in ms — what `status`'s "seen 1s ago" reads — and, in the
 * same script, asks whether its queue is still there: a Redis that lost the queue's data (flushed,
 * or restarted without it) is found within this.
 */
const HEARTBEAT_EVERY_MS = 1000;
/** While Redis is lost, how often the worker asks whether it answers again, in ms. */
const PROBE_EVERY_MS = 250;
/** How long one of those questions may go unanswered, in ms. */
const PROBE_TIMEOUT_MS = 2000;
/**
 * After its grace period, how long a stopping worker may still wait for Redis to take its last
 * writes (jobs put back, completed), in ms: a Redis that is gone must not hold the process.
 */
const CLOSE_MARGIN_MS = 500;

/** What `runQueueWorker()` takes: the queue to take jobs from, and the pipeline options its runs use. */
export interface QueueWorkerOptions extends Omit<PipelineOptions, 'source' | 'total' | 'limitsLost'> {
  /** The queue whose jobs the worker runs. */
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
  /** @default QUEUE_WORKER_DEFAULTS.redisGiveUpMs */
  readonly redisGiveUpMs?: number | undefined;
  /** The name `status` lists the worker by. @default `host:pid` */
  readonly workerName?: string | undefined;
  /** Told when the queue's Redis stops answering (the worker holds its jobs) and when it answers again (it goes on). @default none */
  readonly onRedisChange?: ((change: QueueRedisChange) => void) | undefined;
}

/** The queue's Redis stopped answering, or answers again. */
export interface QueueRedisChange {
  /** `false`: Redis stopped answering; `true`: it answers again. */
  readonly available: boolean;
  /** What happened, in a sentence: for a log or a person. */
  readonly message: string;
}

/** A worker's run: the pipeline's figures for the articles it took, and what it gave back. */
export interface QueueWorkerSummary extends RunSummary {
  /** Jobs put back on the queue unfinished (a stop, cut at the end of the grace period, or Redis lost under their calls). */
  readonly returned: number;
  /**
   * Jobs the worker held when it ended that Redis did not take back (it was not answering): they
   * stay locked until their lock runs out, then a worker's stalled check puts them back.
   */
  readonly leftLocked: number;
  /** Times the queue's Redis stopped answering while the worker ran, and how long it was away in all (ms). */
  readonly redisOutages: { readonly count: number; readonly totalMs: number };
  /**
   * The queue went from Redis under the worker (restarted without its data, flushed, removed):
   * what it held when last seen. The worker stopped at once (`stoppedBy.type` is
   * `QueueNotFoundError`); its jobs and their results are gone, so none was put back or left locked.
   */
  readonly queueLost: QueueLoss | undefined;
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
 * A Redis that stops answering is waited for, up to `redisGiveUpMs`: the worker starts nothing,
 * keeps the jobs it holds, and puts back those whose calls met the lost limits (they end
 * `cancelled`, never dead letters); once Redis answers it goes on. Past the bound it stops as a
 * run does (`stoppedBy.by` is `"limits"`). Once stopped, it ends within its grace period and a
 * moment more whatever Redis does: what Redis has not taken back by then stays locked, and comes
 * back when the lock runs out.
 *
 * A worker that dies (`kill -9`) leaves its jobs locked until the lock runs out; another worker's
 * stalled check then puts them back, and the calls the dead one had made for them are counted as
 * `repeatedCalls`.
 *
 * The queue must be made (`enqueue`): a queue never made rejects with a `QueueNotFoundError`
 * before any job is taken. Every second the worker says it is alive and asks whether the queue is
 * still there — and once more whenever Redis answers again after an outage: a queue gone (Redis
 * restarted without its data) stops the worker at once, `queueLost` saying what it held.
 */
export async function runQueueWorker(options: QueueWorkerOptions): Promise<QueueWorkerSummary> {
  checkObject('options', options);
  const { queue, exitWhenDrained = false, stopSignal } = options;
  const graceMs = options.graceMs ?? QUEUE_WORKER_DEFAULTS.graceMs;
  const lockDurationMs = options.lockDurationMs ?? QUEUE_WORKER_DEFAULTS.lockDurationMs;
  const stalledIntervalMs = options.stalledIntervalMs ?? QUEUE_WORKER_DEFAULTS.stalledIntervalMs;
  const redisGiveUpMs = options.redisGiveUpMs ?? QUEUE_WORKER_DEFAULTS.redisGiveUpMs;
  checkDurationMs('graceMs', graceMs, { positive: false });
  checkDurationMs('lockDurationMs', lockDurationMs, { positive: true });
  checkDurationMs('stalledIntervalMs', stalledIntervalMs, { positive: true });
  checkDurationMs('redisGiveUpMs', redisGiveUpMs, { positive: false });
  const workers = options.workers ?? PIPELINE_DEFAULTS.workers;
  const workerName = options.workerName ?? `${hostname()}:${process.pid}`;
  const { Worker, WaitingError, UnrecoverableError } = await loadOptional('bullmq', 'the article queue', () => import('bullmq'));
  // What the queue held, as last seen: what a loss is told with.
  let lastSeen: QueueSnapshot | undefined = (await queue.heartbeat(workerName)).snapshot;
  if (lastSeen === undefined) {
    const presence = await queue.presence();
    throw queue.notFound(presence.state === 'lost' ? presence.loss : undefined);
  }

  // By article id: a job whose lock ran out while Redis was away may be handed over again while
  // this worker still holds it; one processing of the article then settles both.
  const taken = new Map<string, Taken[]>();
  const settleTaken = (id: string, result: ArticleResult | undefined) => {
    for (const { settle } of taken.get(id) ?? []) settle(result);
    taken.delete(id);
  };
  /** Jobs handed to this worker that Redis has not yet seen finished or put back. */
  const held = new Set<string>();
  const inbox = new Inbox<Article>();
  let returned = 0;
  // Stopping: no more jobs; those not started go back at once, those under way get the grace period.
  const cut = new AbortController();
  const pipelineSignal = options.signal === undefined ? cut.signal : AbortSignal.any([options.signal, cut.signal]);
  let stopping = false;
  let stoppedAtMs = 0;
  let closing = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let worker: BullWorker<ArticleJobData, ArticleResult> | undefined;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    stoppedAtMs = performance.now();
    void worker?.pause(true).catch(() => {});
    for (const article of inbox.drain()) settleTaken(article.id, undefined);
    inbox.close();
    if (taken.size > 0 && graceMs < Infinity) graceTimer = setTimeout(() => cut.abort(new Error('the grace period ran out')), graceMs);
  };
  stopSignal?.addEventListener('abort', stop, { once: true });
  if (stopSignal?.aborted) stop();

  const client = queue.redis.createClient({ maxRetriesPerRequest: null, enableOfflineQueue: true });

  // A lost Redis: nothing starts, the jobs held are kept, and it is asked every moment whether it is back.
  let outage: { readonly sinceMs: number; readonly giveUp: NodeJS.Timeout } | undefined;
  const outages = { count: 0, totalMs: 0 };
  let gaveUp: RunStop | undefined;
  // The queue gone from Redis: its jobs and results with it, so nothing is worth finishing.
  let queueLost: QueueLoss | undefined;
  const gone = (foundMs: number) => {
    if (queueLost !== undefined || closing) return;
    queueLost = { foundMs, foundBy: workerName, lastSeen };
    const error = queue.notFound(queueLost);
    gaveUp = { by: 'source', type: error.name, message: error.message };
    stop();
    // Stopped first: the outage ends without a word of going on.
    if (outage !== undefined) back();
    cut.abort(error);
    // Said where status and collect look; a Redis that went again takes it or not: nothing waits on it.
    void queue.markLost(queueLost).catch(() => {});
  };
  /**
   * Says the worker is alive and looks at the queue: its snapshot kept, or the queue found gone.
   * Resolves with whether Redis answered (within {@link PROBE_TIMEOUT_MS}).
   */
  const look = async (): Promise<boolean> => {
    let beat: Awaited<ReturnType<ArticleQueue['heartbeat']>> | undefined;
    await within(
      queue.heartbeat(workerName).then((answer) => {
        beat = answer;
      }),
      PROBE_TIMEOUT_MS,
    );
    if (beat === undefined) return false;
    if (beat.snapshot !== undefined) lastSeen = beat.snapshot;
    else gone(beat.nowMs);
    return true;
  };
  const lost = (why: string) => {
    if (outage !== undefined || stopping || closing) return;
    inbox.pause();
    const giveUp = setTimeout(() => {
      const message = `Redis at ${queue.redis.url} did not answer for ${formatDuration(redisGiveUpMs)} (${why})`;
      gaveUp = { by: 'limits', type: 'LimiterUnavailableError', message };
      stop();
      // Nothing under way can finish without Redis: no grace.
      cut.abort(new LimiterUnavailableError(message));
    }, redisGiveUpMs);
    outage = { sinceMs: performance.now(), giveUp };
    outages.count++;
    options.onRedisChange?.({
      available: false,
      message:
        `${why}: holding ${taken.size === 1 ? '1 job' : `${taken.size} jobs`}, starting none; ` +
        `waiting up to ${formatDuration(redisGiveUpMs)} for it to answer again`,
    });
    void watchOutage();
  };
  const back = () => {
    if (outage === undefined) return;
    clearTimeout(outage.giveUp);
    const downMs = performance.now() - outage.sinceMs;
    outages.totalMs += downMs;
    outage = undefined;
    if (stopping) return;
    inbox.resume();
    options.onRedisChange?.({
      available: true,
      message: `Redis at ${queue.redis.url} answers again after ${formatDuration(Math.max(1, Math.round(downMs)))}: going on`,
    });
  };
  const watchOutage = async () => {
    while (outage !== undefined && !closing) {
      await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
      // Back only if the queue is: a Redis that restarted without its data answers too.
      if (outage !== undefined && !closing && (await answers(client)) && (await look()) && queueLost === undefined) back();
    }
  };
  let beating = true;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  const heartbeat = async () => {
    if (outage === undefined && queue.client.status === 'ready') await look();
    if (beating && queueLost === undefined) heartbeatTimer = setTimeout(heartbeat, HEARTBEAT_EVERY_MS).unref();
  };
  heartbeatTimer = setTimeout(heartbeat, HEARTBEAT_EVERY_MS).unref();
  client.on('close', () => lost(`the connection to Redis at ${queue.redis.url} was lost`));

  worker = new Worker<ArticleJobData, ArticleResult>(
    queue.name,
    async (job, token) => {
      const article = job.data.article;
      if (job.id !== undefined) held.add(job.id);
      const result = await new Promise<ArticleResult | undefined>((settle) => {
        const holding = taken.get(article.id);
        if (holding !== undefined) holding.push({ job, settle });
        else taken.set(article.id, [{ job, settle }]);
        if (stopping) settle(undefined);
        else if (holding === undefined) inbox.push(article);
      });
      if (result !== undefined && result.status !== 'cancelled') {
        // Its calls are settled once BullMQ has it finished (the 'completed' and 'failed' events):
        // a worker dying before then leaves the job to run again, its calls still counted.
        if (result.status === 'succeeded') return result;
        await job.updateData({ ...job.data, result });
        throw new UnrecoverableError(`${result.error?.type ?? 'Error'}: ${result.error?.message ?? 'failed'}`);
      }
      // Not started, cut short, or its limits lost: back on the queue. Had Redis no answer, the
      // job stays locked until its lock runs out; thrown on, the error would fail it.
      try {
        await job.moveToWait(token);
        returned++;
        if (job.id !== undefined) held.delete(job.id);
      } catch {}
      throw new WaitingError();
    },
    {
      connection: client,
      prefix: queue.bullPrefix,
      concurrency: workers,
      lockDuration: lockDurationMs,
      stalledInterval: stalledIntervalMs,
      name: workerName,
      autorun: false,
    },
  );
  // A lost connection shows as error events while the client reconnects (said once, by `lost`).
  worker.on('error', () => {});
  const settle = (job: Job<ArticleJobData, ArticleResult> | undefined, result: ArticleResult | undefined) => {
    if (job?.id !== undefined) held.delete(job.id);
    if (job?.id !== undefined && result !== undefined) void queue.settleCalls(job.id, result.attempts).catch(() => {});
  };
  worker.on('completed', (job, result) => settle(job, result));
  // A dead letter's result was put in its data before it failed (a put-back job is not 'failed').
  worker.on('failed', (job) => settle(job, job?.data.result));

  let drainTimer: NodeJS.Timeout | undefined;
  if (exitWhenDrained) {
    const check = async () => {
      // A queue Redis lost reads as drained: only one still there is done.
      if (!stopping && outage === undefined && taken.size === 0 && (await queue.drained().catch(() => false)) && (await look())) {
        if (queueLost === undefined) stop();
      }
      if (!stopping) drainTimer = setTimeout(check, QUEUE_WORKER_DEFAULTS.drainCheckMs);
    };
    drainTimer = setTimeout(check, QUEUE_WORKER_DEFAULTS.drainCheckMs);
  }

  const running = worker.run();
  const events = options.events ?? new RunEvents();
  const stopListening = events.observe({
    // Counted as it is sent, not when it answers: a worker killed mid-call has paid for it.
    send: (request) => queue.countCall(jobIdOf(request.articleId)),
    attempt: (event) => {
      // The limits may see a Redis that stopped answering before the worker's own connection does.
      if (isLimiterUnavailableError(event.error) && outage === undefined) {
        const why = event.error.message;
        void answers(client).then((yes) => yes || lost(why));
      }
    },
  });
  let summary: RunSummary;
  try {
    summary = await runPipeline({
      ...options,
      source: inbox,
      signal: pipelineSignal,
      limitsLost: 'cancel',
      events,
      onResult: async (result) => {
        await options.onResult?.(result);
        settleTaken(result.id, result);
      },
    });
  } finally {
    // The pipeline ended on its own (a stop rule, the caller's signal): nothing more is taken.
    stopListening();
    stop();
    clearTimeout(graceTimer);
    clearTimeout(drainTimer);
    beating = false;
    clearTimeout(heartbeatTimer);
    stopSignal?.removeEventListener('abort', stop);
    for (const id of [...taken.keys()]) settleTaken(id, undefined);
    // Redis has until the end of the grace period (none once given up on) to take the last writes.
    const waitMs = gaveUp !== undefined ? 0 : Math.max(0, stoppedAtMs + graceMs - performance.now());
    const closed = await within(
      worker.close().then(() => running),
      waitMs + CLOSE_MARGIN_MS,
    );
    closing = true;
    if (outage !== undefined) back();
    if (!closed) void worker.disconnect().catch(() => {});
    // BullMQ leaves a client it was given open (it may be shared): this one is the worker's own.
    client.disconnect();
  }
  return {
    ...summary,
    // A lost queue says why the rest failed (their limits' keys went with it too).
    stoppedBy: queueLost !== undefined ? gaveUp : (summary.stoppedBy ?? gaveUp),
    returned,
    leftLocked: queueLost === undefined ? held.size : 0,
    redisOutages: outages,
    queueLost,
  };
}

/** Whether `client` is connected and answers a PING within {@link PROBE_TIMEOUT_MS}. */
async function answers(client: Redis | Cluster): Promise<boolean> {
  if (client.status !== 'ready') return false;
  return within(client.ping(), PROBE_TIMEOUT_MS);
}

/** Whether `pending` settles within `ms` (Infinity: waits for it); its failure counts as settled. */
async function within(pending: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = pending.then(
    () => true,
    () => true,
  );
  if (ms === Infinity) return settled;
  try {
    return await Promise.race([settled, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The articles of the jobs taken, in the order taken, as the pipeline's source: ends once closed and empty. */
class Inbox<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  #paused = false;

  /** Hands nothing over until `resume`: what it holds stays. */
  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#wake?.();
  }

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
    this.#paused = false;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#paused ? undefined : this.#items.shift();
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
