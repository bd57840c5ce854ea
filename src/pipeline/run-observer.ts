import type { Clock } from '../clock.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import type { Budget } from '../quota/budget.ts';
import type { Provider } from '../provider/provider.ts';
import type { Article } from '../sources/article.ts';
import type { RunSummary } from './metrics.ts';
import type { ArticleResult } from './result.ts';

/** An attempt event from a pipeline run: the worker slot that made it is always known. */
export interface PipelineAttemptEvent extends AttemptEvent {
  /** The worker slot that made the attempt, from 1. */
  readonly workerId: number;
}

/** What an observer is told as a run begins. */
export interface ObservedRun {
  /** Every provider of the run, by its name as the attempt events give it. */
  readonly providers: ReadonlyMap<string, Provider>;
  /** The run's money, when it has a budget. */
  readonly budget: Budget | undefined;
  /** The clock the run's instants are read on (`AttemptEvent.sentAtMs`, `atMs`). */
  readonly clock: Clock;
}

/**
 * Something that watches a run go — tracing, a report, a live page — told of each step and
 * acting on none: the pipeline calls every method it has, in order, and knows nothing more of it.
 * A method must not throw; none is awaited.
 */
export interface RunObserver {
  /** Before the first article. */
  runStarted?(run: ObservedRun): void;
  /** As an article starts, on the worker slot that runs it. */
  articleStarted?(article: Article, workerId: number): void;
  /** After every attempt of an article's calls, sent or not. */
  attempt?(event: PipelineAttemptEvent): void;
  /** As an article ends, with its result: after its last attempt. */
  articleEnded?(result: ArticleResult): void;
  /** After the last article, with the run's figures. */
  runEnded?(summary: RunSummary): void;
}
