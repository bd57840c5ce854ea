import type { Clock } from '../clock.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import type { CallDeadline } from '../gate/call-deadline.ts';
import { isBudgetExhaustedError, NANO_USD } from '../quota/budget.ts';
import { isLimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import { TimeoutError, type LlmRequest } from '../provider/provider.ts';
import { isRetryError } from '../retry/retry.ts';
import type { Article } from '../sources/article.ts';
import { requestFor, type Task, type TaskSet } from '../tasks/task-set.ts';
import { missingInput, MissingFieldError } from '../tasks/template.ts';
import type { CallLoop } from '../route/call-loop.ts';
import type { Route, RouteCallOptions } from '../route/route.ts';
import type { Admission } from './admission.ts';
import { DeadlineSignals } from './deadline-signals.ts';
import type { ArticleError, ArticleResult } from './result.ts';

export interface ProcessorOptions {
  /** Every article's tasks. */
  readonly tasks: TaskSet;
  /** Where each task's calls go (task name → route), shared by all workers. */
  readonly routes: ReadonlyMap<string, Route>;
  /** The loop every call goes through, whatever its route: the run's retries, repairs and answer cache. */
  readonly loop: CallLoop;
  /** Each task's fingerprint (`taskFingerprints`), which the result records. @default none (the result records none) */
  readonly fingerprints?: Readonly<Record<string, string>> | undefined;
  /** Per-article budget in ms, bounding limiter waits and calls alike. */
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Aborted to cancel the run (Ctrl-C): the article ends `cancelled`. @default none */
  readonly signal?: AbortSignal | undefined;
  /** Where the article's deadline signal comes from, shared by the run's articles; parented to `signal` ({@link articleDeadlines}). */
  readonly deadlines: DeadlineSignals;
  /** Told after every attempt of the article's calls. @default none */
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /** Told as each attempt goes to the provider (see `RouteCallOptions.onSend`). @default none */
  readonly onSend?: ((request: LlmRequest) => void) | undefined;
  /** The pool slot running the article, passed on to the attempt events. @default none */
  readonly workerId?: number | undefined;
  /**
   * Told as each call starts and when the article ends, so new articles are admitted by what is still to come.
   * @default none
   */
  readonly admission?: Admission | undefined;
  /**
   * What a call is expected to take, in ms, for ranking the article's calls by urgency.
   * @default none (nothing: the calls are ranked by the article's deadline alone)
   */
  readonly expectedCallMs?: (() => number) | undefined;
  /** Whether any provider has a price: the result then says what the article cost. @default false */
  readonly priced?: boolean | undefined;
  /**
   * On limits that start an article's deadline at its first grant (shared with other processes: see
   * `ProviderLimits.shared`), the longest wait for that grant worth taking — what admission would
   * allow an article's waits in all. @default Infinity (any wait)
   */
  readonly firstGrantWithinMs?: (() => number) | undefined;
  /** Whether an article whose limits could not be reached ends `cancelled` (to be run again) rather than failed. @default false */
  readonly cancelOnLostLimits?: boolean | undefined;
}

/** An article's result, and the least time its calls alone kept it: what the run's lower bounds are made of. */
export interface ProcessedArticle {
  readonly result: ArticleResult;
  /**
   * The longest chain of its calls' answer times through the task graph — a task's calls one
   * after another, after those of the tasks it depends on — in ms: the article took no less.
   */
  readonly pathMs: number;
  /** What its answers from the cache saved, at the providers' prices, in whole nano-dollars. */
  readonly savedNanoUsd: number;
}

/**
 * Runs an article's tasks — each once the tasks it depends on are done, independent ones at once —
 * and always resolves with its result (and its calls' longest chain): succeeded with every task's
 * output, failed with the reason (a dead letter) and the outputs it had, or cancelled. It never rejects. Outputs an earlier run
 * left (`article.outputs`) are kept, their tasks not run again. A field the input line lacks fails
 * the article before any call.
 *
 * Each call waits for the limits ranked by the latest instant it can be granted and still leave
 * the calls after it their expected time before the article's deadline: earliest deadline first.
 * Under load that serves work under way before articles started after it; with time to spare,
 * an article's first call goes before others' later ones, which keeps the limits busy.
 */
export async function processArticle(article: Article, options: ProcessorOptions): Promise<ProcessedArticle> {
  const { clock, timeoutMs, signal: runSignal, routes, loop, admission } = options;
  const startMs = clock.now();
  // Shared by the article's calls: the first call's route starts it (see `CallDeadline`).
  const deadline = new ArticleDeadline(startMs, timeoutMs, options.deadlines, runSignal, options.firstGrantWithinMs);
  const fields = article.fields ?? (article as unknown as Readonly<Record<string, unknown>>);
  const { tasks } = options;
  const outputs: Record<string, unknown> = {};
  if (article.outputs !== undefined) {
    for (const task of tasks.tasks) if (Object.hasOwn(article.outputs, task.name)) outputs[task.name] = article.outputs[task.name];
  }
  const tally = { calls: 0, latencyMs: 0, costNanoUsd: 0, unknownNanoUsd: 0, repairs: 0 };
  // Which provider answered each task, where its route chose among several (a pool).
  const servedBy: Record<string, string> = {};
  // When each task's calls could have ended at the soonest, counting only call time: its own calls
  // in series after the longest chain of the tasks it depends on (0 for those done before).
  const pathEndMs = new Map<string, number>();
  const started: Task[] = [];
  let failure: { task: string; error: unknown } | undefined;
  let cached: string[] | undefined;
  let savedNanoUsd = 0;
  const { onAttempt, workerId, expectedCallMs } = options;

  const run = async (task: Task): Promise<void> => {
    started.push(task);
    const route = routes.get(task.name)!;
    admission?.calling(route);
    const own = { calls: 0, latencyMs: 0, costNanoUsd: 0, unknownNanoUsd: 0, repairs: 0 };
    try {
      const request = requestFor(task, article.id, fields, outputs);
      const callOptions: RouteCallOptions = {
        deadline,
        // Ranked by the latest instant it can be granted and leave the calls after it their time.
        keepBeforeDeadlineMs: task.height * (expectedCallMs?.() ?? 0),
        onAttempt,
        onSend: options.onSend,
        workerId,
        maxOutputTokens: task.maxOutputTokens,
        tally: own,
      };
      const answer = await loop.call(route, request, callOptions);
      outputs[task.name] = answer.response.output;
      if (answer.cached === true) {
        cached ??= [];
        cached.push(task.name);
        savedNanoUsd += answer.savedNanoUsd ?? 0;
      }
      if (answer.servedBy !== undefined) servedBy[task.name] = answer.servedBy;
    } catch (error) {
      failure ??= { task: task.name, error };
    } finally {
      tally.calls += own.calls;
      tally.latencyMs += own.latencyMs;
      tally.costNanoUsd += own.costNanoUsd;
      tally.unknownNanoUsd += own.unknownNanoUsd;
      tally.repairs += own.repairs;
      const afterMs = task.dependsOn.reduce((longest, name) => Math.max(longest, pathEndMs.get(name) ?? 0), 0);
      pathEndMs.set(task.name, afterMs + own.latencyMs);
    }
  };
  const pending = article.outputs === undefined ? tasks.tasks : tasks.tasks.filter((task) => !Object.hasOwn(outputs, task.name));
  const lacking = lackingField(pending, fields);
  if (lacking !== undefined) failure = { task: lacking.task, error: lacking };
  else if (tasks.serial) {
    // One call after another, as a chain of tasks makes them: no graph to walk.
    for (const task of pending) {
      await run(task);
      if (failure !== undefined) break;
    }
  } else await runGraph(pending, outputs, run, () => failure !== undefined);

  admission?.finished(uncalledRoutes(tasks, outputs, started, routes));
  const result: Mutable<ArticleResult> = {
    id: article.id,
    title: article.title,
    status: 'succeeded',
    outputs,
    attempts: tally.calls,
    elapsedMs: clock.now() - startMs,
    callMs: tally.latencyMs,
  };
  if (tally.repairs > 0) result.repairs = tally.repairs;
  if (options.priced) result.costUsd = tally.costNanoUsd / NANO_USD;
  if (tally.unknownNanoUsd > 0) result.unknownCostUsd = tally.unknownNanoUsd / NANO_USD;
  if (cached !== undefined) result.cached = cached;
  if (Object.keys(servedBy).length > 0) result.servedBy = servedBy;
  if (options.fingerprints !== undefined) result.fingerprints = options.fingerprints;
  const pathMs = pathEndMs.size === 0 ? 0 : Math.max(...pathEndMs.values());
  if (failure !== undefined) {
    const { error } = failure;
    const lastError = isRetryError(error) ? error.lastError : error;
    const cancelled =
      (runSignal?.aborted === true && error === runSignal.reason) ||
      isBudgetExhaustedError(lastError) ||
      (options.cancelOnLostLimits === true && isLimiterUnavailableError(lastError));
    result.status = cancelled ? 'cancelled' : 'failed';
    result.error = describe(error, failure.task);
  }
  return { result, pathMs, savedNanoUsd };
}

/**
 * Runs `pending` (in an order that puts each after its dependencies), each once every task it
 * depends on has its output, those ready together at once; starts nothing more once `stopped()`.
 */
async function runGraph(
  pending: readonly Task[],
  outputs: Readonly<Record<string, unknown>>,
  run: (task: Task) => Promise<void>,
  stopped: () => boolean,
): Promise<void> {
  const waiting = [...pending];
  const running = new Set<Promise<void>>();
  while (waiting.length > 0 && !stopped()) {
    const ready = waiting.filter((task) => task.dependsOn.every((name) => Object.hasOwn(outputs, name)));
    // Nothing ready and nothing running: what is left waits on a task that failed.
    if (ready.length === 0 && running.size === 0) return;
    for (const task of ready) {
      waiting.splice(waiting.indexOf(task), 1);
      const call = run(task).then(() => {
        running.delete(call);
      });
      running.add(call);
    }
    await Promise.race(running);
  }
  await Promise.all(running);
}

/** The first field a pending task's prompt reads that the input line lacks, as the error the article fails with. */
function lackingField(pending: readonly Task[], fields: Readonly<Record<string, unknown>>): MissingFieldError | undefined {
  for (const task of pending) {
    const placeholder = missingInput(task.template.placeholders, fields);
    if (placeholder !== undefined) return new MissingFieldError(placeholder.text, task.name);
  }
  return undefined;
}

/** The routes of the tasks that will make no call: neither started nor done before. */
function uncalledRoutes(
  tasks: TaskSet,
  outputs: Readonly<Record<string, unknown>>,
  started: readonly Task[],
  routes: ReadonlyMap<string, Route>,
): Route[] {
  const left: Route[] = [];
  // Every task started or done: the usual end of an article, with nothing to give back.
  if (started.length === tasks.tasks.length) return left;
  for (const task of tasks.tasks) if (!started.includes(task) && !Object.hasOwn(outputs, task.name)) left.push(routes.get(task.name)!);
  return left;
}

/**
 * An article's deadline: `timeoutMs` from when it starts counting — the article's start, or its
 * first call's grant on limits that say so — with the signal that fires then.
 */
class ArticleDeadline implements CallDeadline {
  atMs = Infinity;
  signal: AbortSignal | undefined;
  readonly fromMs: number;
  readonly #timeoutMs: number;
  readonly #deadlines: DeadlineSignals;
  readonly #firstGrantWithinMs: (() => number) | undefined;

  constructor(
    fromMs: number,
    timeoutMs: number,
    deadlines: DeadlineSignals,
    runSignal: AbortSignal | undefined,
    firstGrantWithinMs: (() => number) | undefined,
  ) {
    this.fromMs = fromMs;
    this.#timeoutMs = timeoutMs;
    this.#deadlines = deadlines;
    this.signal = runSignal;
    this.#firstGrantWithinMs = firstGrantWithinMs;
  }

  get started(): boolean {
    return this.atMs !== Infinity;
  }

  firstGrantWithinMs(): number {
    return this.#firstGrantWithinMs?.() ?? Infinity;
  }

  start(atMs: number): void {
    if (this.started) return;
    this.atMs = atMs + this.#timeoutMs;
    this.signal = this.#deadlines.signalFor(this.atMs);
  }
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
export function describe(error: unknown, task: string): ArticleError {
  if (isRetryError(error)) {
    const last = error.lastError;
    if (isMaxWaitExceededError(last)) {
      return { type: last.name, message: `rate limiter could not grant a token before the article's deadline (${last.message})`, task };
    }
    if (isBudgetExhaustedError(last)) return { type: last.name, message: last.message, task };
    return { type: last instanceof Error ? last.name : 'Error', message: error.message, task };
  }
  if (error instanceof MissingFieldError) return { type: error.name, message: error.message, task, field: error.field };
  if (error instanceof Error) return { type: error.name, message: error.message, task };
  return { type: 'Error', message: String(error), task };
}
