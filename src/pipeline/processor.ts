import type { Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import { TimeoutError, type TaskName } from '../provider/provider.ts';
import { TASKS } from '../provider/provider.ts';
import { isRetryError } from '../retry/retry.ts';
import type { Article } from './article.ts';
import type { AttemptEvent, CallGate } from './call-gate.ts';
import type { ArticleError, ArticleResult } from './result.ts';

export interface ProcessorOptions {
  /** Where each task's calls go: a gate per provider, shared by all workers. */
  readonly gates: Readonly<Record<TaskName, CallGate>>;
  /** Per-article budget in ms, bounding limiter waits and calls alike. */
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Aborted to cancel the run (Ctrl-C): the article ends `cancelled`. */
  readonly signal?: AbortSignal;
  readonly onAttempt?: (event: AttemptEvent) => void;
}

/**
 * Runs an article's tasks in order — summarise, then sentiment — and always resolves with its
 * result: succeeded, failed with the reason (a dead letter), or cancelled. It never rejects.
 */
export async function processArticle(article: Article, options: ProcessorOptions): Promise<ArticleResult> {
  const { clock, timeoutMs, signal: runSignal } = options;
  const startMs = clock.now();
  const deadlineMs = startMs + timeoutMs;
  const controller = new AbortController();
  const onRunAbort = () => controller.abort(runSignal!.reason);
  runSignal?.addEventListener('abort', onRunAbort, { once: true });
  if (runSignal?.aborted) onRunAbort();
  const cancelDeadline = clock.setTimer(timeoutMs, () =>
    controller.abort(new TimeoutError(`article timed out after ${timeoutMs} ms`, { timeoutMs })),
  );

  let attempts = 0;
  let task: TaskName = TASKS[0]!;
  const onAttempt = (event: AttemptEvent) => {
    if (event.called) attempts++;
    options.onAttempt?.(event);
  };
  let result: Omit<ArticleResult, 'status' | 'attempts' | 'elapsedMs' | 'error'> = { id: article.id, title: article.title };
  try {
    for (task of TASKS) {
      const request = { task, articleId: article.id, title: article.title, text: article.content };
      const { response } = await options.gates[task].call(request, { signal: controller.signal, deadlineMs, onAttempt });
      const output = response.output;
      if (output.task === 'summarize') result = { ...result, summary: output.summary, keywords: output.keywords };
      else result = { ...result, sentiment: output.sentiment, sentimentScore: output.score };
    }
    return { ...result, status: 'succeeded', attempts, elapsedMs: clock.now() - startMs };
  } catch (error) {
    const cancelled = runSignal?.aborted === true && error === runSignal.reason;
    return {
      ...result,
      status: cancelled ? 'cancelled' : 'failed',
      attempts,
      elapsedMs: clock.now() - startMs,
      error: describe(error, task),
    };
  } finally {
    cancelDeadline();
    runSignal?.removeEventListener('abort', onRunAbort);
  }
}

/** A dead letter's reason: the underlying failure's type, and a message that says what happened. */
function describe(error: unknown, task: TaskName): ArticleError {
  if (isRetryError(error)) {
    const last = error.lastError;
    if (isMaxWaitExceededError(last)) {
      return { type: last.name, message: `rate limiter could not grant a token before the article's deadline (${last.message})`, task };
    }
    return { type: last instanceof Error ? last.name : 'Error', message: error.message, task };
  }
  if (error instanceof Error) return { type: error.name, message: error.message, task };
  return { type: 'Error', message: String(error), task };
}
