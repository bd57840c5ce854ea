// What every queue command shares: --queue and the Redis it is on, opening the queue, the examples.
import { type Command, Option } from 'commander';
import { MissingPackageError } from '../src/index.ts';
import { ArticleQueue, checkQueueName, isQueueNotFoundError, type QueuePresence, queueRedisOf } from '../src/queue/index.ts';
import type { RedisConnection } from '../src/redis/index.ts';
import { addRedisConnectionOptions, checkRedisUrl, connectFlags, type RedisConnectionFlags } from './redis-options.ts';
import { UsageError } from './usage-error.ts';

/** Flags every queue command takes: where the queue is. */
export interface QueueFlags extends RedisConnectionFlags {
  queue: string;
  /** Where --redis's value came from, as a message names it: `--redis`, or `REDIS_URL` when the variable stood in. */
  redisFrom?: string;
}

/** Adds --queue and the Redis flags of a command that only talks to the queue (REDIS_URL stands in for --redis). */
export function addQueueOptions(command: Command): Command {
  command.addOption(new Option('--queue <name>', 'the queue: letters, digits, ., _ or -').makeOptionMandatory());
  command.hook('preAction', (self) => {
    if (self.getOptionValueSource('redis') === 'env') self.setOptionValue('redisFrom', 'REDIS_URL');
  });
  return addRedisConnectionOptions(command, 'the Redis that holds the queue', { readsEnv: true });
}

/** Checks --queue and --redis: one line and exit 2 for a bad name or a missing or malformed URL. */
export function checkQueueFlags(flags: QueueFlags): asserts flags is QueueFlags & { redis: string } {
  try {
    checkQueueName(flags.queue);
  } catch {
    throw new UsageError(`--queue ${JSON.stringify(flags.queue)}: expected 1 to 100 letters, digits, '.', '_' or '-'`);
  }
  if (flags.redis === undefined) throw new UsageError('--redis (or REDIS_URL) is needed: the Redis that holds the queue');
  checkRedisUrl(flags.redis, flags.redisFrom ?? '--redis');
}

/** A queue and the connection its clients were made from: closed together. */
interface OpenQueue {
  readonly queue: ArticleQueue;
  close(): Promise<void>;
}

/**
 * Connects and opens the queue: one line and exit 2 for a bad name, an unreachable Redis or a
 * refusing user — and for a queue whose presence is not one of `accept`: by default a queue that
 * is not made (never enqueued on, or lost with Redis's data) is an error that names it.
 */
export async function openQueue(flags: QueueFlags, accept: readonly QueuePresence['state'][] = ['made']): Promise<OpenQueue> {
  checkQueueFlags(flags);
  const connection = await connectFlags(flags, undefined, flags.redisFrom);
  try {
    const queue = await openQueueOn(connection, flags, accept);
    return {
      queue,
      close: async () => {
        await queue.close();
        await connection.close();
      },
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/**
 * Opens the queue on an open connection's Redis, within --redis-timeout; a refusing user is one
 * line, and so is a queue whose presence is not one of `accept` (see {@link openQueue}).
 */
export async function openQueueOn(
  connection: RedisConnection,
  flags: QueueFlags,
  accept: readonly QueuePresence['state'][] = ['made'],
): Promise<ArticleQueue> {
  const redis = queueRedisOf(connection);
  let queue: ArticleQueue | undefined;
  try {
    queue = await ArticleQueue.open({ redis, name: flags.queue, prefix: flags.redisPrefix, timeoutMs: flags.redisTimeout });
    const presence = await queue.presence();
    if (!accept.includes(presence.state)) throw queue.notFound(presence.state === 'lost' ? presence.loss : undefined);
    return queue;
  } catch (error) {
    await queue?.close();
    if (error instanceof MissingPackageError) throw error;
    if (isQueueNotFoundError(error)) throw notFoundUsage(error);
    const message = (error as Error).message;
    if (/NOPERM|no permissions/i.test(message)) {
      throw new UsageError(`--redis ${redis.url}: the Redis user may not use the queue's keys or run scripts: ${message.split('\n')[0]}`);
    }
    throw new UsageError(`--redis: cannot use the queue at ${redis.url}: ${message.split('\n')[0]}`);
  }
}

/** A queue that is not there, as the one line a command ends with: what it was, what to do. */
export function notFoundUsage(error: Error & { readonly loss?: unknown }): UsageError {
  return new UsageError(
    `--queue: ${error.message}${error.loss === undefined ? '' : ': enqueue the input again to run it (obliterate --yes forgets it)'}`,
  );
}

/** Throws the one-line UsageError of a queue that is not there (any more): Redis lost it while a command watched it. */
export async function stillThere(queue: ArticleQueue): Promise<void> {
  const presence = await queue.presence();
  if (presence.state !== 'made') throw notFoundUsage(queue.notFound(presence.state === 'lost' ? presence.loss : undefined));
}

/**
 * Whether the queue is drained — and a UsageError if it is not there: a queue Redis lost reads
 * as drained, and must not end a --follow as if it were done.
 */
export async function drainedOrGone(queue: ArticleQueue): Promise<boolean> {
  if (!(await queue.drained())) return false;
  await stillThere(queue);
  return true;
}

export const EXAMPLES = `
A batch over many processes: enqueue the articles once, start workers anywhere (each shares the
provider's quota through the same Redis), collect the results.

Examples (from a clone, put \`npm start --\` where \`news-processor\` stands):
  $ news-processor enqueue --queue batch1 --redis redis://127.0.0.1:6379 --input fixtures/articles.jsonl
  $ news-processor worker --queue batch1 --redis redis://127.0.0.1:6379 --rate=10 --workers=10 --exit-when-drained
  $ news-processor status --queue batch1 --redis redis://127.0.0.1:6379
  $ news-processor collect --queue batch1 --redis redis://127.0.0.1:6379 --output results.jsonl --follow
  $ news-processor retry-failed --queue batch1 --redis redis://127.0.0.1:6379
  $ news-processor obliterate --queue batch1 --redis redis://127.0.0.1:6379 --yes

REDIS_URL stands in for --redis in the queue commands (enqueue, worker, status, collect, retry-failed,
drain, obliterate), which need a Redis; a run reads no REDIS_URL. See docs/queue.md.`;

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
