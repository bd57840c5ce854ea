import { brandedGuard } from '../error-brand.ts';
import { formatDuration } from '../validation/duration.ts';

/** How many jobs are in each state. */
export interface QueueCounts {
  /** Jobs no worker has taken yet. */
  readonly waiting: number;
  /** Jobs a worker is running now. */
  readonly active: number;
  /** Jobs waiting for their retry time. */
  readonly delayed: number;
  /** Jobs that finished, succeeded or not (the result says). */
  readonly completed: number;
  /** Jobs a worker gave up on (their attempts spent). */
  readonly failed: number;
}

/** What a queue held at one instant, as a worker's heartbeat read it. */
export interface QueueSnapshot extends QueueCounts {
  /** Articles enqueued on it in all, as `enqueue` counted them; undefined for a queue enqueued before that count was kept. */
  readonly enqueued: number | undefined;
  /** When it was read, epoch ms by Redis's clock. */
  readonly atMs: number;
}

/** A queue a worker found gone from its Redis, and what it held when last seen. */
export interface QueueLoss {
  /** When the worker found it gone, epoch ms by Redis's clock. */
  readonly foundMs: number;
  /** The worker that found it (its `workerName`). */
  readonly foundBy: string;
  /** What it held when last seen; undefined when the worker never saw it whole. */
  readonly lastSeen: QueueSnapshot | undefined;
}

/**
 * Whether a queue is there: `made` by `enqueue`; `lost` — gone from Redis, a worker saw it go and
 * says what it held; `unknown` here — never made, or gone with no worker to see it go.
 */
export type QueuePresence =
  | { readonly state: 'made' }
  | { readonly state: 'lost'; readonly loss: QueueLoss }
  | { readonly state: 'unknown' };

/**
 * The queue is not in its Redis: nothing was ever enqueued on it (a name mistyped, another
 * prefix), or Redis lost it — restarted without its data, failed over to a replica that lacked
 * it, or the queue was removed. `loss` says what it held when a worker found it gone.
 */
export class QueueNotFoundError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'QueueNotFoundError';
  /** The queue's name. */
  readonly queue: string;
  /** Where it was looked for (the URL, its password hidden). */
  readonly url: string;
  /** What a worker saw of it before it went; undefined when no worker saw it go (or it was never made). */
  readonly loss: QueueLoss | undefined;

  constructor(queue: string, url: string, loss: QueueLoss | undefined) {
    super(
      loss === undefined
        ? `no queue ${queue} at ${url}: nothing was enqueued on it (a name or --redis-prefix mistyped?), ` +
            'or Redis lost it unseen (restarted without its data, or the queue was removed)'
        : `queue ${queue} is gone from Redis at ${url} (restarted without its data, or the queue was removed): ${describeLoss(loss)}`,
    );
    this.queue = queue;
    this.url = url;
    this.loss = loss;
  }
}

/** Whether `error` is a {@link QueueNotFoundError}, from this copy of the package or another one loaded beside it. */
export const isQueueNotFoundError = brandedGuard(QueueNotFoundError, 'QueueNotFoundError');

/**
 * What a lost queue held and when it went, in a phrase: `it held 500 articles — 70 finished, 430
 * not — when last seen, 1.2s before worker-a found it gone (2025-01-01T10:00:00.000Z); its jobs
 * and their results went with it`.
 */
export function describeLoss(loss: QueueLoss): string {
  const found = `${loss.foundBy} found it gone (${new Date(loss.foundMs).toISOString()})`;
  const seen = loss.lastSeen;
  if (seen === undefined) return `${found}; its jobs and their results went with it`;
  const finished = seen.completed + seen.failed;
  const open = seen.waiting + seen.active + seen.delayed;
  const held = seen.enqueued ?? finished + open;
  const beforeMs = Math.max(0, loss.foundMs - seen.atMs);
  return (
    `it held ${held === 1 ? '1 article' : `${held} articles`} — ${finished} finished, ${open} not — when last seen, ` +
    `${formatDuration(beforeMs < 1000 ? Math.round(beforeMs) : Math.round(beforeMs / 100) * 100)} before ${found}; ` +
    'its jobs and their results went with it'
  );
}
