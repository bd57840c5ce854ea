// `news-processor/telemetry`: following a run beyond its events — tracing through
// `@opentelemetry/api` after the GenAI conventions (an observer of the run's events; a no-op when the
// package is not installed), and the parts of the run's counts (`RunCounts`, the root's) that an
// observer of one's own reads. Importing it has no side effects.
export { createOtelObserver, OTEL_OBSERVER_DEFAULTS } from './otel-observer.ts';
export type { OtelObserverOptions } from './otel-observer.ts';
// The run's counts in detail: calls by how they ended, per provider, task, pool and pool member, articles.
export type {
  CallTally,
  CallColumn,
  ProviderTally,
  TaskTally,
  PoolTally,
  PoolMemberTally,
  ArticleTally,
  TallyWatcher,
} from '../pipeline/run-tally.ts';
