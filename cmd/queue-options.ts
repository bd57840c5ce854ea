// What every queue command shares: --queue and the Redis it is on, opening the queue, the examples.
import { type Command, Option } from 'commander';
import { MissingPackageError } from '../src/index.ts';
import { ArticleQueue, checkQueueName, queueRedisOf } from '../src/queue/index.ts';
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

/** Connects and opens the queue: one line and exit 2 for a bad name, an unreachable Redis or a refusing user. */
export async function openQueue(flags: QueueFlags): Promise<OpenQueue> {
  checkQueueFlags(flags);
  const connection = await connectFlags(flags, undefined, flags.redisFrom);
  try {
    const queue = await openQueueOn(connection, flags);
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

/** Opens the queue on an open connection's Redis, within --redis-timeout; a refusing user is one line. */
export async function openQueueOn(connection: RedisConnection, flags: QueueFlags): Promise<ArticleQueue> {
  const redis = queueRedisOf(connection);
  try {
    return await ArticleQueue.open({ redis, name: flags.queue, prefix: flags.redisPrefix, timeoutMs: flags.redisTimeout });
  } catch (error) {
    if (error instanceof MissingPackageError) throw error;
    const message = (error as Error).message;
    if (/NOPERM|no permissions/i.test(message)) {
      throw new UsageError(`--redis ${redis.url}: the Redis user may not use the queue's keys or run scripts: ${message.split('\n')[0]}`);
    }
    throw new UsageError(`--redis: cannot use the queue at ${redis.url}: ${message.split('\n')[0]}`);
  }
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
