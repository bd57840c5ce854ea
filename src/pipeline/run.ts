import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import { CallGate } from '../gate/call-gate.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import type { ProviderSetup } from '../gate/provider-options.ts';
import type { Budget } from '../quota/budget.ts';
import type { AnswerCache } from '../cache/answer-cache.ts';
import type { LlmRequest } from '../provider/provider.ts';
import type { Route } from '../route/route.ts';
import { CallLoop } from '../route/call-loop.ts';
import { ProviderRoute } from '../route/provider-route.ts';
import { RoutePool, type PoolMemberChange } from '../route/pool.ts';
import { poolSetupProblem, type PoolSetup } from '../route/pool-setup.ts';
import type { TaskSet } from '../tasks/task-set.ts';
import type { RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import type { Article } from '../sources/article.ts';
import { checkDurationMs, checkInteger, checkNumber, checkOneOf, expected } from '../validation/checks.ts';
import { Admission } from './admission.ts';
import { LatencyEstimate } from './latency-estimate.ts';
import { summarizeRun, type RunStop, type RunSummary } from './metrics.ts';
import { ownRoutes } from './own-routes.ts';
import { runPool } from './pool.ts';
import { articleDeadlines, processArticle, type ProcessorOptions } from './processor.ts';
import { limitsUnreachable, STOP_RULES, type WatchedRun } from './stop-rules.ts';
import { checkPlan, planRun, type RunPlan } from './run-plan.ts';
import type { ArticleResult } from './result.ts';
import { budgetTelling } from './budget-events.ts';
import { RunEvents, type PipelineAttemptEvent } from './run-events.ts';
import { RunTally } from './run-tally.ts';

/** What a run does unless told otherwise. */
export const PIPELINE_DEFAULTS = Object.freeze({
  /** Articles processed at once. */
  workers: 5,
  /** Per-article budget for limiter waits and calls together, in ms. */
  timeoutMs: 5000,
  /**
   * How long a provider may stay down — its circuit open, every probe failing — before the run
   * stops, in ms: long enough to ride out a restart or a short outage, short enough that a dead
   * server ends the run rather than parking it.
   */
  giveUpAfterMs: 30_000,
});

/** The share of an article's timeout admission keeps back for timers and calls that run late (a loaded event loop stalls for tens of ms). */
const ADMISSION_MARGIN = 0.1;

/** The run was cancelled (Ctrl-C): articles in flight end `cancelled`. */
export class CancelledError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'CancelledError';
}

/**
 * The run stopped because a provider answered in a way no retry can mend (it refused the key, the
 * account has no credit): intake stopped and the articles in flight end `cancelled`, to be run
 * again once a person has acted. `cause` is the provider's error.
 */
export class RunStoppedError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RunStoppedError';

  constructor(
    /** The provider that answered so. */
    readonly provider: string,
    cause: Error,
  ) {
    super(`${provider}: ${cause.message}`, { cause });
  }
}

/** What `runPipeline()` takes: the articles, the providers and their limits, the tasks, and how to run them. */
export interface PipelineOptions {
  /** The articles: any (async) iterable; pulled one at a time as workers free up. */
  readonly source: Iterable<Article> | AsyncIterable<Article>;
  /**
   * How many articles the source holds, when known: the summary then counts those never started.
   * @default none (the summary's `notStarted` is null)
   */
  readonly total?: number | undefined;
  /** One gate (limits, breaker, adaptive rate) is made per provider and shared by every worker. */
  readonly providers: readonly ProviderSetup[];
  /** Every article's tasks (`defineTasks`, `loadTasksFile`). @default the built-in summarize, then sentiment */
  readonly tasks?: TaskSet | undefined;
  /**
   * Where the calls of each task that names no provider itself go (task name → route): a provider's
   * or a pool's name, or a `Route` of one's own — a choice among gates of one's own making
   * (`CallGate`s: made with the run's `budget` when there is one), through the run's call loop, its
   * retries, repairs and cache, as any route's. Its name must be none of the run's providers' or
   * pools', and its gates' names none of the providers'.
   * @default the first provider serves them
   */
  readonly routes?: Readonly<Record<string, string | Route>> | undefined;
  /**
   * Pools of providers (keys, deployments, vendors of one model), each a route a task or `routes`
   * may name as it names a provider: each call goes where it is granted soonest, with fallbacks.
   * @default none
   */
  readonly pools?: readonly PoolSetup[] | undefined;
  /**
   * The run worked out ahead (`planRun` of these providers, tasks, routes and pools), when the
   * caller has made it for its own checks: each task's route and fingerprint are read from it
   * rather than worked out again. @default planned from these options
   */
  readonly plan?: RunPlan | undefined;
  /**
   * The run's money: every call holds its worst case at its provider's `price` first, so the run
   * never spends more; when the next call cannot be covered, intake stops (`stoppedBy.by` is
   * `"budget"`). Every provider needs a `price`. @default none
   */
  readonly budget?: Budget | undefined;
  /**
   * Answers kept across runs and processes (`LmdbAnswerCache.open`, `RedisAnswerCache` of `news-processor/redis`): a task
   * whose request was answered before takes its answer from here — no call, nothing from the
   * limits or the budget — and identical requests under way at once are made once. The caller
   * opens and closes it. @default none (every call made)
   */
  readonly cache?: AnswerCache | undefined;
  /** Articles processed at once. @default PIPELINE_DEFAULTS.workers */
  readonly workers?: number | undefined;
  /** Per-article budget in ms for limiter waits and calls together. @default PIPELINE_DEFAULTS.timeoutMs */
  readonly timeoutMs?: number | undefined;
  /** Attempts per call, backoff and the retry-after cap. @default RETRY_DEFAULTS, full-jitter backoff */
  readonly retry?: RetryPolicyOptions | undefined;
  /**
   * Repairs per call of an answer that does not parse or fit its schema — asked again with the
   * answer and its problems — apart from the retries. @default GATE_DEFAULTS.maxRepairs (1)
   */
  readonly maxRepairs?: number | undefined;
  /** Time source of the limits, deadlines and backoffs. @default systemClock */
  readonly clock?: Clock | undefined;
  /** Told the run's start and end, its failed articles and stops; each gate logs through it too. @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
  /** Abort to stop: intake stops, waits and calls in flight are aborted, those articles end `cancelled`. @default none */
  readonly signal?: AbortSignal | undefined;
  /** Told each article's result as it ends; awaited, so a slow writer slows intake rather than buffering. @default none */
  readonly onResult?: ((result: ArticleResult) => void | Promise<void>) | undefined;
  /**
   * Where the run tells each of its steps — its start with its counts, each article's start and
   * result, each send and attempt, pool changes, the budget's moves, its end — for a progress line,
   * a report, tracing, or anything else that watches and acts on nothing. @default none
   */
  readonly events?: RunEvents | undefined;
  /**
   * What the run does when its limits cannot be reached (a shared quota's Redis went away):
   * `"stop"` — intake stops (`stoppedBy.by` is `"limits"`) and the articles in flight fail with
   * `LimiterUnavailableError`; `"cancel"` — intake goes on, and the articles that met it end
   * `cancelled`, to be run again: for a source that holds its articles back until Redis answers
   * again, as the queue worker does.
   * @default "stop"
   */
  readonly limitsLost?: 'stop' | 'cancel' | undefined;
}

/**
 * Pushes every article of `source` through its tasks under the providers' limits, and returns the
 * figures. Every article pulled from the source ends as exactly one result passed to `onResult`.
 * When the source fails (a bad line in a stream) or a provider refuses every call, intake stops,
 * the articles in flight end, and the summary says what stopped the run (`stoppedBy`). Rejects
 * only when `onResult` throws (after the articles in flight finish); never for an article's own
 * failure, which becomes its result.
 */
export async function runPipeline(options: PipelineOptions): Promise<RunSummary> {
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child({ component: 'pipeline' });
  const { workers = PIPELINE_DEFAULTS.workers, timeoutMs = PIPELINE_DEFAULTS.timeoutMs } = options;
  checkInteger('workers', workers, 1);
  checkDurationMs('timeoutMs', timeoutMs, { positive: true });
  const limitsLost = options.limitsLost ?? 'stop';
  checkOneOf('limitsLost', limitsLost, ['stop', 'cancel'] as const);
  if (options.providers.length === 0) throw expected('providers', 'at least one provider', options.providers);

  const events = options.events ?? new RunEvents();
  // Told through the stream only when something listens: a run's every call holds and settles.
  const budget = options.budget !== undefined && events.listens('budget') ? budgetTelling(options.budget, events, clock) : options.budget;
  const gatesByName = new Map<string, CallGate>();
  const watchedGates: { gate: CallGate; giveUpAfterMs: number }[] = [];
  for (const setup of options.providers) {
    const { name } = setup.provider;
    if (gatesByName.has(name)) throw expected('provider names', 'unique', `"${name}" twice`);
    const giveUpAfterMs = setup.breaker?.giveUpAfterMs ?? PIPELINE_DEFAULTS.giveUpAfterMs;
    checkNumber(`the breaker's giveUpAfterMs of "${name}"`, giveUpAfterMs, { min: 0, finite: false, unit: 'ms' });
    const gate = new CallGate({ ...setup, budget, clock, logger: options.logger });
    gatesByName.set(name, gate);
    watchedGates.push({ gate, giveUpAfterMs });
  }
  const routesByName = poolRoutes(options, gatesByName, clock, (change) => {
    const told = { ...change, atMs: clock.now() };
    tally.poolChange(told);
    events.emit('poolChange', told);
  });
  const plan = options.plan ?? planRun(options);
  checkPlan(plan, options);
  const { tasks, fingerprints } = plan;
  const own = ownRoutes(options.routes, new Set(routesByName.keys()), options.budget);
  for (const gate of own.gates) gatesByName.set(gate.name, gate);
  // A provider's route, a pool, or a route of the caller's own is a task's route.
  const routes = new Map<string, Route>([...plan.routes].map(([task, name]) => [task, routesByName.get(name) ?? own.byName.get(name)!]));
  const pools = [...(options.pools ?? []), ...own.pools];
  // A pool member's outage is the pool's to ride out: the run gives up on a provider only where a task calls it directly.
  const direct = new Set([...routes.values()].map((route) => (route instanceof ProviderRoute ? route.gate : undefined)));
  const members = new Set((options.pools ?? []).flatMap((pool) => pool.members));
  watchedGates.splice(0, watchedGates.length, ...watchedGates.filter(({ gate }) => direct.has(gate) || !members.has(gate.name)));
  // Loaded before the first token is taken: a call must leave when its token is granted.
  await Promise.all([...gatesByName.values()].map(({ provider }) => provider.ready?.()));
  const loop = new CallLoop({ retry: options.retry, maxRepairs: options.maxRepairs, cache: options.cache, clock, logger: options.logger });

  const pricedNames = [...gatesByName.values()].filter((gate) => gate.price !== undefined).map((gate) => gate.name);
  const priced = pricedNames.length > 0;
  for (const pool of pools) if (pool.members.some((member) => pricedNames.includes(member))) pricedNames.push(pool.name);
  const startMs = clock.now();
  const tally = new RunTally({
    clock,
    startMs,
    workers,
    providers: [...gatesByName.keys()],
    tasks: tasks.tasks.map((task) => ({ name: task.name, route: routes.get(task.name)!.name })),
    priced: pricedNames,
    pools: pools.map(({ name, members }) => ({ name, members })),
    total: options.total,
    budget: options.budget,
    cached: options.cache !== undefined,
  });
  const { onResult } = options;
  events.emit('runStarted', {
    mode: 'live',
    providers: new Map([...gatesByName.values()].map(({ provider }) => [provider.name, provider])),
    budget: options.budget,
    clock,
    startMs,
    counts: tally,
  });
  // The caller's signal, or the run's own stop: a provider that refuses the key ends intake too.
  const stop = new AbortController();
  const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
  // Every call waiting for its first grant on shared limits listens to it (its deadline not yet
  // begun): many more than Node's default of 10 is the point, not a leak.
  setMaxListeners(0, signal);
  logger.info({ workers, timeoutMs, providers: [...gatesByName.keys()] }, 'run started');
  const deadlines = articleDeadlines(clock, timeoutMs, signal);
  // An article's calls take what calls have been taking (allowing for the slow ones) — half its
  // timeout until calls have answered — and the limits may have the rest, less a margin for timers
  // that fire late.
  const latency = new LatencyEstimate(timeoutMs / 2 / tasks.depth);
  const waitBudgetMs = () => timeoutMs * (1 - ADMISSION_MARGIN) - tasks.depth * latency.highMs;
  const admission = new Admission(
    tasks.tasks.map((task) => routes.get(task.name)!),
    clock,
    waitBudgetMs,
    signal,
  );
  const expectedCallMs = () => latency.meanMs;
  // Limits that start an article's deadline at its first grant (shared ones: see CallDeadline)
  // take that grant only when no further off than the article's share of what admission allows
  // its waits: the queue its later calls will meet is then about as long, and they fit.
  const firstGrantWithinMs = () => Math.max(0, waitBudgetMs() / tasks.depth);

  let stoppedBy: RunStop | undefined;
  // A stop that halts intake only (limits out of reach): the articles in flight keep what they were granted.
  const intake = new AbortController();
  const attemptListeners: ((event: AttemptEvent) => void)[] = [];
  const watched: WatchedRun = {
    gates: watchedGates,
    onAttempt(listener) {
      attemptListeners.push(listener);
      return () => attemptListeners.splice(attemptListeners.indexOf(listener), 1);
    },
  };
  const rules = limitsLost === 'stop' ? STOP_RULES : STOP_RULES.filter((rule) => rule !== limitsUnreachable);
  const unwatch = rules.map((rule) =>
    rule.watch(watched, (found) => {
      const halted = rule.halts === 'run' ? stop : intake;
      // A stop of the whole run says more than an earlier stop of intake; nothing says more than the first.
      if (signal.aborted || (halted === intake && intake.signal.aborted)) return;
      stoppedBy = { by: rule.by, provider: found.provider, type: found.type, message: found.message };
      // A warning, not an error: the run ends in order, and the caller reports why (the CLI in one line).
      logger.warn({ provider: found.provider, by: rule.by, err: found.cause }, 'run stopped');
      if (rule.halts === 'run') stop.abort(new RunStoppedError(found.provider ?? 'run', found.cause));
      else intake.abort(found.cause);
    }),
  );
  // Found once: every attempt of the run is told through these.
  const tellAttempt = events.teller('attempt');
  const tellSend = events.teller('send');
  const tellArticleStarted = events.teller('articleStarted');
  const tellResult = events.teller('result');
  const recordAttempt = (event: AttemptEvent) => {
    tally.attempt(event);
    if (event.called) latency.record(event.latencyMs);
    for (const listener of attemptListeners) listener(event);
    tellAttempt(event as PipelineAttemptEvent);
  };
  const recordSend = (request: LlmRequest) => {
    tally.send();
    tellSend(request);
  };
  // One options object per worker slot, made when the slot first runs: the per-article path
  // allocates little, and slots a run never fills cost nothing.
  const processorOptions: ProcessorOptions[] = [];
  const optionsFor = (workerId: number): ProcessorOptions =>
    (processorOptions[workerId] ??= {
      tasks,
      routes,
      loop,
      fingerprints,
      priced,
      timeoutMs,
      clock,
      deadlines,
      signal,
      workerId,
      onAttempt: recordAttempt,
      onSend: recordSend,
      admission,
      expectedCallMs,
      firstGrantWithinMs,
      cancelOnLostLimits: limitsLost === 'cancel',
    });

  try {
    await runPool(
      options.source,
      async (article, workerId) => {
        tally.articleStarted();
        tellArticleStarted(article, workerId);
        const { result, pathMs, savedNanoUsd } = await processArticle(article, optionsFor(workerId));
        const end = { pathMs, savedNanoUsd };
        tally.result(result, end);
        tellResult(result, end);
        if (result.status === 'failed') logger.warn({ id: result.id, error: result.error }, 'article failed');
        await onResult?.(result);
      },
      {
        concurrency: workers,
        signal: AbortSignal.any([signal, intake.signal]),
        admit: () => admission.admit(),
        onSourceError: (error) => {
          stoppedBy ??= { by: 'source', type: (error as Error).name ?? 'Error', message: (error as Error).message ?? String(error) };
          logger.warn({ err: error }, 'run stopped: the source failed');
        },
      },
    );
  } finally {
    for (const stopWatching of unwatch) stopWatching();
    admission.dispose();
    deadlines.dispose();
  }

  const endMs = clock.now();
  const interrupted = options.signal?.aborted === true;
  const summary = summarizeRun(
    tally,
    endMs,
    { interrupted, stoppedBy },
    [...gatesByName.values()].map((gate) => gate.figures()),
  );
  logger.info({ succeeded: summary.succeeded, failed: summary.failed, cancelled: summary.cancelled }, 'run finished');
  events.emit('runEnded', {
    ending: stoppedBy !== undefined ? 'stopped' : interrupted ? 'interrupted' : 'finished',
    stoppedBy: stoppedBy?.by,
    atMs: endMs,
    summary,
  });
  return summary;
}

/**
 * Every route a task may name: each provider's, over its gate, and each pool (its fallbacks built
 * first). Throws a `TypeError` naming the field for pools that cannot work ({@link poolSetupProblem}).
 */
function poolRoutes(
  options: PipelineOptions,
  gates: ReadonlyMap<string, CallGate>,
  clock: Clock,
  onMemberChange: (change: PoolMemberChange) => void,
): Map<string, Route> {
  const pools = options.pools ?? [];
  const problem = poolSetupProblem(pools, [...gates.keys()]);
  if (problem !== undefined) throw expected(problem.field, problem.expected, problem.value);
  const routes = new Map<string, Route>([...gates].map(([name, gate]) => [name, new ProviderRoute(gate)]));
  const byName = new Map(pools.map((pool) => [pool.name, pool]));
  const build = (name: string): Route => {
    const built = routes.get(name);
    if (built !== undefined) return built;
    const setup = byName.get(name)!;
    const pool = new RoutePool({
      name,
      members: setup.members.map((member) => gates.get(member)!),
      strategy: setup.strategy,
      weights: setup.weights,
      fallback: (setup.fallback ?? []).map(build),
      clock,
      logger: options.logger,
      onMemberChange,
    });
    routes.set(name, pool);
    return pool;
  };
  for (const pool of pools) build(pool.name);
  return routes;
}
