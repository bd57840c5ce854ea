import { expected } from '../validation/checks.ts';

/**
 * Job ids from article ids. BullMQ refuses a custom id that reads as an integer (`"1"`) or holds a
 * `:`; an article id may be either. Every job id is `a-` and the article id with `%` and `:`
 * percent-encoded, so the mapping is one to one and reversible, and one input enqueued twice maps
 * to the same jobs.
 */
export function jobIdOf(articleId: string): string {
  return `a-${articleId.replace(/[%:]/g, (c) => (c === '%' ? '%25' : '%3A'))}`;
}

/** The article id a job id was made from ({@link jobIdOf}); `undefined` for a job this queue did not make. */
export function articleIdOf(jobId: string): string | undefined {
  if (!jobId.startsWith('a-')) return undefined;
  return jobId.slice(2).replace(/%3A|%25/g, (c) => (c === '%25' ? '%' : ':'));
}

/** The longest queue name taken: it is part of every key of the queue. */
const MAX_QUEUE_NAME = 100;

/**
 * Throws a TypeError naming what is wrong with a queue name: empty, too long, or holding what
 * BullMQ (`:`) or a Redis Cluster hash tag (`{`, `}`) refuses, a space or a control character.
 */
export function checkQueueName(name: unknown): asserts name is string {
  const rule = `a name of 1 to ${MAX_QUEUE_NAME} letters, digits, '.', '_' or '-'`;
  if (typeof name !== 'string' || name === '' || name.length > MAX_QUEUE_NAME || !/^[A-Za-z0-9._-]+$/.test(name)) {
    throw expected('the queue name', rule, name);
  }
}
