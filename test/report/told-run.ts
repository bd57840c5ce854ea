// A run told by hand, as runPipeline tells one: each step counted by the run's tally, then told to
// the stream — for the recorder and the charts, on a manual clock.
import type { Clock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import type { RunSummary } from '../../src/pipeline/metrics.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { RunEvents, type BatchEvent, type PipelineAttemptEvent, type RunObserver } from '../../src/pipeline/run-events.ts';
import { RunTally, type RunTallyOptions } from '../../src/pipeline/run-tally.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';

const REQUEST = { task: 'summarize', articleId: 'a', prompt: '', schema: { type: 'object' } } as LlmRequest;

/** Starts a run at the clock's now (or `startMs`) followed by `observers`; returns the hands that tell it. */
export function toldRun(observers: readonly RunObserver[], options: RunTallyOptions & { readonly clock: Clock }) {
  const events = new RunEvents();
  for (const observer of observers) events.observe(observer);
  const tally = new RunTally(options);
  const { clock } = options;
  events.emit('runStarted', { mode: 'live', providers: new Map(), budget: options.budget, clock, startMs: tally.startMs, counts: tally });
  return {
    events,
    tally,
    send(request: LlmRequest = REQUEST): void {
      tally.send();
      events.emit('send', request);
    },
    attempt(event: AttemptEvent): void {
      tally.attempt(event);
      events.emit('attempt', event as PipelineAttemptEvent);
    },
    result(result: ArticleResult, pathMs = 0): void {
      const end = { pathMs, savedNanoUsd: 0 };
      tally.result(result, end);
      events.emit('result', result, end);
    },
    batch(event: BatchEvent): void {
      events.emit('batch', event);
    },
    /** Ends the run: with a live run's summary, or as a batch run does, without one. */
    end(summary?: RunSummary, ending: 'finished' | 'interrupted' | 'stopped' = 'finished'): void {
      events.emit('runEnded', { ending, atMs: clock.now(), summary });
    },
  };
}
