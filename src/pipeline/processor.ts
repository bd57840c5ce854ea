import type { Clock } from '../clock.ts';
import type { AttemptEvent, CallGate } from '../gate/call-gate.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import { TimeoutError, type TaskName } from '../provider/provider.ts';
import { TASKS } from '../provider/provider.ts';
import { isRetryError } from '../retry/retry.ts';
import type { Article } from '../sources/article.ts';
import type { Admission } from './admission.ts';
import { DeadlineSignals } from './deadline-signals.ts';
import type { ArticleError, ArticleResult } from './result.ts';

export interface ProcessorOptions {
  /** Where each task's calls go: a gate per provider, shared by all workers. */
  readonly gates: Readonly<Record<TaskName, CallGate>>;
  /** Per-article budget in ms, bounding limiter waits and calls alike. */
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Aborted to cancel the run (Ctrl-C): the article ends `cancelled`. */
  readonly signal?: AbortSignal | undefined;
  /** Where the article's deadline signal comes from, shared by the run's articles; parented to `signal` ({@link articleDeadlines}). */
  readonly deadlines: DeadlineSignals;
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /** The pool slot running the article, passed on to the attempt events. */
  readonly workerId?: number | undefined;
  /** Told as each call starts and when the article ends, so new articles are admitted by what is still to come. */
  readonly admission?: Admission | undefined;
  /** What a call is expected to take, in ms, for ranking the article's calls by urgency. Default: nothing. */
  readonly expectedCallMs?: (() => number) | undefined;
}

/**
 * Runs an article's tasks in order — summarise, then sentiment — and always resolves with its
 * result: succeeded, failed with the reason (a dead letter), or cancelled. It never rejects.
 *
 * Each call waits for the limits ranked by the latest instant it can be granted and still leave
 * the article's remaining calls their expected time before its deadline: earliest deadline first.
 * Under load that serves work under way before articles started after it; with time to spare,
 * an article's first call goes before others' second ones, which keeps the limits busy.
 */
export async function processArticle(article: Article, options: ProcessorOptions): Promise<ArticleResult> {
  const { clock, timeoutMs, signal: runSignal } = options;
  const startMs = clock.now();
  const deadlineMs = startMs + timeoutMs;
  const deadlineSignal = options.deadlines.signalFor(deadlineMs);

  const { gates, admission } = options;
  let task: TaskName = TASKS[0]!;
  let called = 0;
  const tally = { calls: 0, latencyMs: 0 };
  const callOptions = { signal: deadlineSignal, deadlineMs, rank: 0, onAttempt: options.onAttempt, workerId: options.workerId, tally };
  const result: Mutable<ArticleResult> = {
    id: article.id,
    title: article.title,
    status: 'succeeded',
    attempts: 0,
    elapsedMs: 0,
    callMs: 0,
  };
  try {
    for (task of TASKS) {
      const request = { task, articleId: article.id, title: article.title, text: article.content };
      admission?.calling(gates[task]);
      callOptions.rank = deadlineMs - (TASKS.length - called) * (options.expectedCallMs?.() ?? 0);
      called++;
      const { response } = await gates[task].call(request, callOptions);
      const output = response.output;
      if (output.task === 'summarize') {
        result.summary = output.summary;
        result.keywords = output.keywords;
      } else {
        result.sentiment = output.sentiment;
        result.sentimentScore = output.score;
      }
    }
  } catch (error) {
    const cancelled = runSignal?.aborted === true && error === runSignal.reason;
    result.status = cancelled ? 'cancelled' : 'failed';
    result.error = describe(error, task);
  }
  admission?.finished(TASKS.slice(called).map((uncalled) => gates[uncalled]));
  result.attempts = tally.calls;
  result.callMs = tally.latencyMs;
  result.elapsedMs = clock.now() - startMs;
  return result;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The deadline signals of a run whose articles time out after `timeoutMs`. */
export function articleDeadlines(clock: Clock, timeoutMs: number, runSignal?: AbortSignal): DeadlineSignals {
  // Sharing a signal among articles started within 1 % of the timeout (at most 10 ms) of each
  // other lets a deadline fire up to that much late, never early.
  const granularityMs = Math.min(10, Math.max(timeoutMs / 100, 0.001));
  return new DeadlineSignals(
    clock,
    granularityMs,
    () => new TimeoutError(`article timed out after ${timeoutMs} ms`, { timeoutMs }),
    runSignal,
  );
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
