import type { Clock } from '../clock.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { BatchEvent, RunEvents } from '../pipeline/run-events.ts';
import { RunTally } from '../pipeline/run-tally.ts';
import type { Article } from '../sources/article.ts';

/** What a batch run tells its events, each step counted first by the run's tally, as a live run's are. */
export interface BatchTelling {
  articleStarted(article: Article): void;
  result(result: ArticleResult): void;
  batch(event: BatchEvent): void;
  /** The run ended: interrupted (its signal), stopped by its budget, or finished. */
  ended(interrupted: boolean, budgetStopped: boolean): void;
}

/**
 * Tells `events` a batch run's start (its counts: articles, no calls — a row is no call), then
 * returns what tells the rest; undefined without events, which leaves the run as it was.
 */
export function batchTelling(events: RunEvents | undefined, clock: Clock): BatchTelling | undefined {
  if (events === undefined) return undefined;
  const tally = new RunTally({ clock });
  events.emit('runStarted', { mode: 'batch', providers: new Map(), budget: undefined, clock, startMs: tally.startMs, counts: tally });
  // A batch's rows have no critical path of their own, and no answer comes from the cache.
  const end = Object.freeze({ pathMs: 0, savedNanoUsd: 0 });
  return {
    articleStarted(article) {
      tally.articleStarted();
      events.emit('articleStarted', article, 0);
    },
    result(result) {
      tally.result(result, end);
      events.emit('result', result, end);
    },
    batch(event) {
      events.emit('batch', event);
    },
    ended(interrupted, budgetStopped) {
      events.emit('runEnded', {
        ending: interrupted ? 'interrupted' : budgetStopped ? 'stopped' : 'finished',
        stoppedBy: !interrupted && budgetStopped ? 'budget' : undefined,
        atMs: clock.now(),
        summary: undefined,
      });
    },
  };
}
