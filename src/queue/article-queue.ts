import type { Queue as BullQueue, Job } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { loadOptional } from '../optional-package.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { Article } from '../sources/article.ts';
import { checkDurationMs, checkObject, checkString } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import { articleIdOf, checkQueueName, jobIdOf } from './job-ids.ts';
import { type QueueCounts, type QueueLoss, type QueuePresence, type QueueSnapshot, QueueNotFoundError } from './queue-presence.ts';

/** What the article queues do unless told otherwise. */
export const QUEUE_DEFAULTS = Object.freeze({
  /**
   * Every key of a queue begins with this and the queue's name, in braces: a Redis Cluster keeps
   * a queue's keys in one slot, as BullMQ's scripts need, and different queues on different nodes.
   */
  prefix: 'news-processor:',
  /** Articles added to Redis in one round trip by `enqueue`. */
  batchSize: 500,
  /** `open`'s check of the queue must answer within this many ms (bullmq's loading not counted), and `close` waits no longer. */
  timeoutMs: 2000,
});

/**
 * Where the queue's Redis is, as BullMQ needs it: a new client for each of its connections (a
 * worker holds a blocking one), built with the settings of the connection the limits use (URL,
 * TLS files, cluster mode) and BullMQ's own over them.
 */
export interface QueueRedis {
  /** The URL with its password hidden: for messages. */
  readonly url: string;
  /** A new client; BullMQ connects it (`lazyConnect`) and asks `maxRetriesPerRequest: null` of a worker's. */
  createClient(options: QueueClientOptions): Redis | Cluster;
}

/** The ioredis settings BullMQ's connections need. */
export interface QueueClientOptions {
  /** Always `null`: BullMQ's blocking commands must not give up after a number of retries. */
  readonly maxRetriesPerRequest: null;
  /** Whether a command waits for the connection when it is down (a worker's do, the queue's own fail fast). */
  readonly enableOfflineQueue: boolean;
}

/** What `new ArticleQueue()` takes: where the queue lives and its name. */
export interface ArticleQueueOptions {
  /** Where the queue lives, and how to make more clients to it (`queueRedisOf(connection)`). */
  readonly redis: QueueRedis;
  /** Letters, digits, `.`, `_` and `-`: it is part of every key. */
  readonly name: string;
  /** @default QUEUE_DEFAULTS.prefix */
  readonly prefix?: string | undefined;
  /** `open`'s check of the queue must answer within this many ms (bullmq's loading not counted), and `close` waits no longer. @default QUEUE_DEFAULTS.timeoutMs */
  readonly timeoutMs?: number | undefined;
}

/** A job's data: the article, and once it failed, its result (a dead letter's outputs and reason). */
export interface ArticleJobData {
  /** The article the job runs. */
  readonly article: Article;
  /** The article's result, once a worker has finished it. */
  readonly result?: ArticleResult | undefined;
}

/** A worker process connected to the queue, as `status` lists it. */
export interface QueueWorkerInfo {
  /** The name it gave (`runQueueWorker`'s `workerName`, `host:pid` by default). */
  readonly name: string;
  /**
   * When it last said it was alive, epoch ms by Redis's clock (the worker's, for a Redis user that
   * may not run TIME): a worker says so every second, whether it waits for jobs or holds as many
   * as it runs at once.
   */
  readonly lastSeenMs: number;
  /** How long ago that was, in ms, by the same clock (no skew between this machine's and the worker's). */
  readonly silentMs: number;
}

/** What `status` says of a queue. */
export interface QueueStatus extends QueueCounts {
  /** The queue's name. */
  readonly name: string;
  /**
   * Jobs taken whose lock has run out: their worker is gone (killed, or cut off from Redis), and
   * a live worker's next stalled check puts them back to waiting. Not counted in `active`.
   */
  readonly stalled: number;
  /** Jobs finished (completed or failed) in the last minute, per second. */
  readonly finishedPerSecond: number;
  /**
   * Until waiting, delayed, active and stalled are done at that rate, in ms; `null` with nothing
   * finishing, or no worker connected to do it.
   */
  readonly etaMs: number | null;
  /** Worker processes connected to the queue now, by name. */
  readonly workers: readonly QueueWorkerInfo[];
  /** Provider calls the workers made, every processing counted. */
  readonly calls: number;
  /**
   * Calls made by a processing that did not finish its article — a worker killed, or stopped past
   * its grace period — and so made again by the one that did.
   */
  readonly repeatedCalls: number;
}

/** Names of this project's keys beside BullMQ's (in the queue's slot). */
const CALLS_KEY = 'np:calls';
const STATS_KEY = 'np:stats';
/**
 * What says the queue was made: `enqueue` writes it (when it first added a job, how many it added
 * in all), and nothing else does — so a Redis that lost its data, and comes back empty, does not
 * have it, whatever a worker writes afterwards.
 */
const MADE_KEY = 'np:queue';
/** A worker's word that it found the queue gone (a JSON {@link QueueLoss}), for `status` and `collect` to say; `enqueue` clears it. */
const LOST_KEY = 'np:lost';
/** Each worker's last heartbeat (a sorted set, epoch ms by Redis's clock). */
const WORKERS_KEY = 'np:workers';
/**
 * BullMQ's keys that hold a queue's jobs: a queue enqueued before the made key was written is made
 * when one of them exists.
 */
const JOB_KEYS = ['wait', 'paused', 'prioritized', 'active', 'delayed', 'completed', 'failed'] as const;
/** How long a worker's heartbeat is kept once it stops (ms): long past the time anyone asks after a dead worker. */
const HEARTBEAT_KEPT_MS = 3_600_000;

/**
 * A worker's heartbeat: says it is alive (at Redis's TIME) if the queue is made, and returns what
 * the queue holds, or `{0, now}` when it is not made (and writes nothing then).
 * KEYS: workers, made, then {@link JOB_KEYS} in order. ARGV: the worker's name, ms to keep a
 * heartbeat, the worker's clock (epoch ms: for a Redis user that may not run TIME, which BullMQ
 * does not need).
 */
const HEARTBEAT = `
local t = redis.pcall('TIME')
local now = tonumber(ARGV[3])
if type(t) == 'table' and t[1] then now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end
if redis.call('EXISTS', unpack(KEYS, 2)) == 0 then return {0, now} end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local enqueued = tonumber(redis.call('HGET', KEYS[2], 'enqueued') or '-1')
return {1, now, enqueued,
  redis.call('LLEN', KEYS[3]) + redis.call('LLEN', KEYS[4]) + redis.call('ZCARD', KEYS[5]),
  redis.call('LLEN', KEYS[6]), redis.call('ZCARD', KEYS[7]), redis.call('ZCARD', KEYS[8]), redis.call('ZCARD', KEYS[9])}`;

/**
 * Writes a worker's word that the queue is gone, unless it is made again meanwhile or another
 * worker said so first. KEYS: lost, made, then {@link JOB_KEYS}. ARGV: the loss, as JSON.
 */
const MARK_LOST = `
if redis.call('EXISTS', unpack(KEYS, 2)) > 0 then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 end
return 0`;

/** Settles a finished job's calls: what its earlier processings spent beyond this one's is repeated. */
const SETTLE_CALLS = `
local n = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
redis.call('HDEL', KEYS[1], ARGV[1])
local repeated = n - tonumber(ARGV[2])
if repeated < 0 then repeated = 0 end
redis.call('HINCRBY', KEYS[2], 'repeatedCalls', repeated)
return repeated`;

/**
 * A batch of articles on a BullMQ queue in Redis: one job per article, its id made from the
 * article's (so enqueueing the same input twice adds nothing), processed by any number of
 * `runQueueWorker` processes, its results read back by `finished`.
 */
export class ArticleQueue {
  /** The queue's name: part of every key it writes. */
  readonly name: string;
  /** The BullMQ queue underneath, for what this class does not wrap. */
  readonly queue: BullQueue<ArticleJobData, ArticleResult>;
  /** The client the queue's own commands go through (not a worker's). */
  readonly client: Redis | Cluster;
  /** Where the queue lives, and how to make more clients to it. */
  readonly redis: QueueRedis;
  /** BullMQ's prefix for this queue: `<prefix>{<name>}`, one Redis Cluster slot per queue. */
  readonly bullPrefix: string;
  readonly #keyBase: string;
  readonly #timeoutMs: number;

  private constructor(options: ArticleQueueOptions, queue: BullQueue<ArticleJobData, ArticleResult>, client: Redis | Cluster) {
    this.name = options.name;
    this.#timeoutMs = options.timeoutMs ?? QUEUE_DEFAULTS.timeoutMs;
    this.redis = options.redis;
    this.queue = queue;
    this.client = client;
    this.bullPrefix = bullPrefixOf(options);
    this.#keyBase = `${this.bullPrefix}:${options.name}:`;
  }

  /**
   * Opens the queue and checks, with one read of its counts (a script on its keys), that the
   * Redis user may use it: `NOPERM` or a missing `+@scripting` rejects here, before any job moves.
   */
  static async open(options: ArticleQueueOptions): Promise<ArticleQueue> {
    checkObject('options', options);
    checkQueueName(options.name);
    if (options.prefix !== undefined) checkString('prefix', options.prefix, { allowEmpty: true });
    if (options.timeoutMs !== undefined) checkDurationMs('timeoutMs', options.timeoutMs, { positive: true });
    const { Queue } = await loadOptional('bullmq', 'the article queue', () => import('bullmq'));
    const client = options.redis.createClient({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    // No meta written on open: a look at a queue that was never made (a name mistyped) leaves no key behind.
    const queue = new Queue<ArticleJobData, ArticleResult>(options.name, {
      connection: client,
      prefix: bullPrefixOf(options),
      skipMetasUpdate: true,
    });
    // The queue reports a lost connection as an error event; its callers see the failed call.
    queue.on('error', () => {});
    const opened = new ArticleQueue(options, queue, client);
    const timeoutMs = options.timeoutMs ?? QUEUE_DEFAULTS.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        queue.getJobCounts('waiting'),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${formatDuration(timeoutMs)}`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      await opened.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return opened;
  }

  /** The Redis key of one of this queue's own names (`np:stats`, BullMQ's `completed`). */
  key(name: string): string {
    return `${this.#keyBase}${name}`;
  }

  /**
   * Adds a job for every article not on the queue yet (waiting, running or finished), in
   * batches; says how many were added and how many were there already. The first batch makes the
   * queue (`presence()` then says it is made); no article, no queue.
   */
  async enqueue(
    articles: Iterable<Article> | AsyncIterable<Article>,
    options: { readonly batchSize?: number; readonly onBatch?: (added: number, existing: number) => void } = {},
  ): Promise<{ added: number; existing: number }> {
    const batchSize = options.batchSize ?? QUEUE_DEFAULTS.batchSize;
    let added = 0;
    let existing = 0;
    let batch: Article[] = [];
    const flush = async () => {
      // An id twice in one batch is one job: the first is kept, as BullMQ keeps the first added.
      const unique = new Map<string, Article>();
      for (const article of batch) if (!unique.has(article.id)) unique.set(article.id, article);
      const ids = [...unique.keys()];
      const present = await Promise.all(ids.map((id) => this.client.exists(this.key(jobIdOf(id)))));
      const fresh = ids.filter((_, index) => present[index] === 0);
      if (fresh.length > 0) {
        await this.queue.addBulk(
          fresh.map((id) => ({ name: 'article', data: { article: unique.get(id)! }, opts: { jobId: jobIdOf(id), attempts: 1 } })),
        );
      }
      await this.client
        .multi()
        .hsetnx(this.key(MADE_KEY), 'madeMs', Date.now())
        .hincrby(this.key(MADE_KEY), 'enqueued', fresh.length)
        .del(this.key(LOST_KEY))
        .exec();
      added += fresh.length;
      existing += batch.length - fresh.length;
      options.onBatch?.(added, existing);
      batch = [];
    };
    for await (const article of articles) {
      batch.push(article);
      if (batch.length >= batchSize) await flush();
    }
    if (batch.length > 0) await flush();
    return { added, existing };
  }

  /**
   * Whether the queue is there: made (by `enqueue`), found gone by a worker (Redis lost it: what
   * it held then), or unknown here — never made, or gone with no worker to see it go.
   */
  async presence(): Promise<QueuePresence> {
    const [made, lost] = await Promise.all([
      this.client.exists(this.key(MADE_KEY), ...JOB_KEYS.map((name) => this.key(name))),
      this.client.get(this.key(LOST_KEY)),
    ]);
    if (made > 0) return { state: 'made' };
    if (lost !== null) return { state: 'lost', loss: JSON.parse(lost) as QueueLoss };
    return { state: 'unknown' };
  }

  /** The error that says this queue is not there, with what a worker saw of it when it went. */
  notFound(loss: QueueLoss | undefined): QueueNotFoundError {
    return new QueueNotFoundError(this.name, this.redis.url, loss);
  }

  /**
   * A worker says it is alive (`status` tells how long ago it last did). Resolves with Redis's
   * clock (epoch ms) and what the queue holds now — `snapshot` undefined, and nothing written, when
   * the queue is not made (never, or Redis lost it).
   */
  async heartbeat(workerName: string): Promise<{ readonly nowMs: number; readonly snapshot: QueueSnapshot | undefined }> {
    const keys = [this.key(WORKERS_KEY), this.key(MADE_KEY), ...JOB_KEYS.map((name) => this.key(name))];
    const reply = (await this.client.eval(HEARTBEAT, keys.length, ...keys, workerName, HEARTBEAT_KEPT_MS, Date.now())) as number[];
    const [made, nowMs, enqueued, waiting, active, delayed, completed, failed] = reply as [number, number, ...number[]];
    if (made === 0) return { nowMs, snapshot: undefined };
    return {
      nowMs,
      snapshot: {
        waiting: waiting!,
        active: active!,
        delayed: delayed!,
        completed: completed!,
        failed: failed!,
        enqueued: enqueued! < 0 ? undefined : enqueued,
        atMs: nowMs,
      },
    };
  }

  /** Leaves a worker's word that the queue is gone, for `status` and `collect`: the first worker's stands; `enqueue` clears it. */
  async markLost(loss: QueueLoss): Promise<void> {
    const keys = [this.key(LOST_KEY), this.key(MADE_KEY), ...JOB_KEYS.map((name) => this.key(name))];
    await this.client.eval(MARK_LOST, keys.length, ...keys, JSON.stringify(loss));
  }

  /** How many jobs are waiting, active, delayed, completed and failed, now. */
  async counts(): Promise<QueueCounts> {
    const counts = await this.queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed');
    return {
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      completed: counts.completed ?? 0,
      failed: counts.failed ?? 0,
    };
  }

  /** The counts, the jobs stalled, the rate of the last minute, an ETA, the workers connected and the calls. */
  async status(nowMs = Date.now()): Promise<QueueStatus> {
    const sinceMs = nowMs - 60_000;
    const [counts, stalled, completedLastMinute, failedLastMinute, firstCompleted, firstFailed, workers, stats, heartbeats, time] =
      await Promise.all([
        this.counts(),
        this.#stalled(),
        this.client.zcount(this.key('completed'), sinceMs, '+inf'),
        this.client.zcount(this.key('failed'), sinceMs, '+inf'),
        this.client.zrangebyscore(this.key('completed'), sinceMs, '+inf', 'WITHSCORES', 'LIMIT', 0, 1),
        this.client.zrangebyscore(this.key('failed'), sinceMs, '+inf', 'WITHSCORES', 'LIMIT', 0, 1),
        this.queue.getWorkers().catch(() => [] as { [index: string]: string }[]),
        this.client.hgetall(this.key(STATS_KEY)),
        this.client.zrange(this.key(WORKERS_KEY), '0', '-1', 'WITHSCORES'),
        // Refused to a user that may not run TIME: this machine's clock then.
        this.client.time().catch(() => undefined),
      ]);
    const redisNowMs = time === undefined ? Date.now() : Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const lastAlive = new Map<string, number>();
    for (let i = 0; i < heartbeats.length; i += 2) lastAlive.set(heartbeats[i]!, Number(heartbeats[i + 1]));
    // Over the last minute, or since the first finish in it when the batch began less than a minute ago.
    const firstMs = Math.min(Number(firstCompleted[1] ?? Infinity), Number(firstFailed[1] ?? Infinity));
    const windowMs = Math.max(1000, nowMs - Math.max(sinceMs, Number.isFinite(firstMs) ? firstMs : nowMs));
    const finishedPerSecond = ((completedLastMinute + failedLastMinute) * 1000) / windowMs;
    const repeatedCalls = Number(stats.repeatedCalls ?? 0) + (await this.#unsettledRepeats());
    const active = Math.max(0, counts.active - stalled);
    const left = counts.waiting + counts.delayed + counts.active;
    return {
      name: this.name,
      ...counts,
      active,
      stalled,
      finishedPerSecond,
      etaMs: left === 0 ? 0 : finishedPerSecond > 0 && workers.length > 0 ? (left / finishedPerSecond) * 1000 : null,
      workers: workers
        .map((client) => workerInfo(client, `${this.bullPrefix}:${Buffer.from(this.name).toString('base64')}:w:`, lastAlive, redisNowMs))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      calls: Number(stats.calls ?? 0),
      repeatedCalls,
    };
  }

  /**
   * The active jobs whose lock has run out. A job is locked while it is taken, the lock renewed by
   * its worker; one without is held by no one until a stalled check puts it back.
   */
  async #stalled(): Promise<number> {
    const ids = await this.client.lrange(this.key('active'), 0, -1);
    const locked = await Promise.all(ids.map((id) => this.client.exists(this.key(`${id}:lock`))));
    return locked.filter((exists) => exists === 0).length;
  }

  /**
   * The repeats of finished jobs whose calls were never settled (their worker died between
   * finishing them and settling): the calls counted for each beyond its result's. Jobs under way
   * are not counted; the hash holds only those, so this reads a few entries.
   */
  async #unsettledRepeats(): Promise<number> {
    const counted = await this.client.hgetall(this.key(CALLS_KEY));
    const ids = Object.keys(counted);
    if (ids.length === 0) return 0;
    const jobs = await Promise.all(ids.map((id) => this.queue.getJob(id)));
    let repeated = 0;
    for (const [index, job] of jobs.entries()) {
      if (job === undefined || job.finishedOn === undefined) continue;
      const attempts = job.returnvalue?.attempts ?? job.data?.result?.attempts ?? 0;
      repeated += Math.max(0, Number(counted[ids[index]!]) - attempts);
    }
    return repeated;
  }

  /** Whether nothing is left to do: no job waiting, delayed or running. */
  async drained(): Promise<boolean> {
    const { waiting, delayed, active } = await this.counts();
    return waiting + delayed + active === 0;
  }

  /**
   * Every finished article's result — succeeded (`completed`), or failed with its reason — in the
   * order they finished, from `afterMs` on (a job's finish instant, ms: pass the last one seen to
   * go on). Each result comes with the instant it finished.
   */
  async *finished(
    options: { readonly states?: readonly ('completed' | 'failed')[]; readonly afterMs?: number; readonly pageSize?: number } = {},
  ): AsyncIterable<{ readonly result: ArticleResult; readonly finishedOn: number }> {
    const { states = ['completed', 'failed'], afterMs = 0, pageSize = 500 } = options;
    for (const state of states) {
      const fromMs = afterMs;
      let offset = 0;
      for (;;) {
        const page = await this.client.zrangebyscore(this.key(state), fromMs, '+inf', 'WITHSCORES', 'LIMIT', offset, pageSize);
        if (page.length === 0) break;
        const ids: string[] = [];
        const scores: number[] = [];
        for (let i = 0; i < page.length; i += 2) {
          ids.push(page[i]!);
          scores.push(Number(page[i + 1]));
        }
        const jobs = await Promise.all(ids.map((id) => this.queue.getJob(id)));
        for (let i = 0; i < ids.length; i++) {
          const job = jobs[i];
          if (job === undefined) continue;
          const result = resultOf(job, state);
          if (result !== undefined) yield { result, finishedOn: scores[i]! };
        }
        offset += ids.length;
        if (ids.length < pageSize) break;
      }
    }
  }

  /** Puts every failed job (dead letter) back on the queue; resolves with how many. */
  async retryFailed(): Promise<number> {
    const { failed } = await this.counts();
    if (failed > 0) await this.queue.retryJobs({ state: 'failed', count: 1000 });
    return failed;
  }

  /** Removes every job not yet started (waiting and delayed); running and finished ones stay. */
  async drain(): Promise<number> {
    const { waiting, delayed } = await this.counts();
    await this.queue.drain(true);
    return waiting + delayed;
  }

  /** Removes the queue and everything in it, results included — and a worker's word that it was lost. Refused while jobs run, unless `force`. */
  async obliterate(force = false): Promise<void> {
    await this.queue.obliterate({ force });
    await this.client.del(...[CALLS_KEY, STATS_KEY, MADE_KEY, LOST_KEY, WORKERS_KEY].map((name) => this.key(name)));
  }

  /** A worker made a call for this job (counted so that a repeated one can be told). */
  countCall(jobId: string): void {
    this.#fire(this.client.multi().hincrby(this.key(CALLS_KEY), jobId, 1).hincrby(this.key(STATS_KEY), 'calls', 1).exec());
  }

  /** The job finished after `attempts` calls of its last processing: the rest of its calls were repeats. */
  async settleCalls(jobId: string, attempts: number): Promise<void> {
    await this.client.eval(SETTLE_CALLS, 2, this.key(CALLS_KEY), this.key(STATS_KEY), jobId, attempts);
  }

  /** Closes the queue's client: at once if Redis does not answer (what it had not sent is dropped). */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.queue.close().catch(() => {}),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.client.status === 'ready' ? this.#timeoutMs : 0))),
    ]);
    clearTimeout(timer);
    this.client.disconnect();
  }

  #fire(pending: Promise<unknown>): void {
    pending.catch(() => {});
  }
}

/**
 * A worker's entry of `CLIENT LIST`, as BullMQ returns it: `name` is the queue's, `rawname` the
 * connection's — `named` (`<prefix>:<queue in base64>:w:`) and the worker's name; `idle` is in
 * seconds. The connection is the one the worker waits for jobs on, idle while it holds all it can
 * run: its last heartbeat says when it was alive, the idle time only for a worker that sends none.
 */
function workerInfo(
  client: { readonly [field: string]: string },
  named: string,
  lastAlive: ReadonlyMap<string, number>,
  nowMs: number,
): QueueWorkerInfo {
  const raw = client.rawname ?? '';
  const name = raw.startsWith(named) ? raw.slice(named.length) : (client.addr ?? '?');
  const lastSeenMs = Math.min(nowMs, lastAlive.get(name) ?? nowMs - Number(client.idle ?? 0) * 1000);
  return { name, lastSeenMs, silentMs: nowMs - lastSeenMs };
}

function bullPrefixOf(options: ArticleQueueOptions): string {
  return `${options.prefix ?? QUEUE_DEFAULTS.prefix}{${options.name}}`;
}

/** A finished job's result: a completed one's return value, a failed one's recorded result or its reason. */
function resultOf(job: Job<ArticleJobData, ArticleResult>, state: 'completed' | 'failed'): ArticleResult | undefined {
  if (state === 'completed') return job.returnvalue ?? undefined;
  if (job.data?.result !== undefined) return job.data.result;
  // Failed by BullMQ itself (stalled too often: the worker died each time it held it).
  const article = job.data?.article;
  const id = article?.id ?? articleIdOf(job.id ?? '') ?? job.id ?? '?';
  return {
    id,
    title: article?.title ?? '',
    status: 'failed',
    outputs: {},
    attempts: 0,
    elapsedMs: 0,
    callMs: 0,
    error: { type: 'QueueError', message: job.failedReason || 'failed in the queue' },
  };
}
