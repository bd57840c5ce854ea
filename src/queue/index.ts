// The article queue: a batch spread over any number of worker processes on BullMQ (news-processor/queue).
export { ArticleQueue, QUEUE_DEFAULTS } from './article-queue.ts';
export type {
  ArticleQueueOptions,
  ArticleJobData,
  QueueStatus,
  QueueWorkerInfo,
  QueueRedis,
  QueueClientOptions,
} from './article-queue.ts';
export { QueueNotFoundError, isQueueNotFoundError } from './queue-presence.ts';
export type { QueueCounts, QueueSnapshot, QueueLoss, QueuePresence } from './queue-presence.ts';
export { runQueueWorker, QUEUE_WORKER_DEFAULTS } from './queue-worker.ts';
export type { QueueWorkerOptions, QueueWorkerSummary, QueueRedisChange } from './queue-worker.ts';
export { jobIdOf, articleIdOf, checkQueueName } from './job-ids.ts';
export { queueRedisOf } from './queue-redis.ts';
