import type { Logger } from 'pino';
import { CircuitBreaker, type CircuitBreakerOptions } from '../breaker/circuit-breaker.ts';
import { systemClock, type Clock } from '../clock.ts';
import { AdaptiveRate, type AdaptiveTuning } from '../limits/adaptive-rate.ts';
import { CallGate, type AttemptEvent } from '../gate/call-gate.ts';
import { LocalLimits } from '../limits/local-limits.ts';
import type { LimitSpec, ProviderLimits } from '../limits/provider-limits.ts';
import { isLimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import type { Provider, TaskName } from '../provider/provider.ts';
import { BadRequestError, TASKS, stopsRun } from '../provider/provider.ts';
import type { RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import type { Article } from '../sources/article.ts';
import { checkDurationMs, checkInteger, checkNumber, expected } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import { Admission } from './admission.ts';
import { LatencyEstimate } from './latency-estimate.ts';
import { Metrics, type RunStop, type RunSummary } from './metrics.ts';
import { runPool } from './pool.ts';
import { articleDeadlines, processArticle, type ProcessorOptions } from './processor.ts';
import type { ArticleResult } from './result.ts';

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

/** A circuit breaker's options in a run, and how long the run waits for the provider to come back. */
export interface BreakerSetup extends Omit<CircuitBreakerOptions, 'clock' | 'name' | 'logger'> {
  /**
   * Once the circuit has been open this long, every probe failing, the run stops as on Ctrl-C: the
   * articles in flight end `cancelled`, the rest are not started, all left for a resume. Ms;
   * Infinity never gives up. Default {@link PIPELINE_DEFAULTS}.
   */
  readonly giveUpAfterMs?: number | undefined;
}

/** The share of an article's timeout admission keeps back for timers and calls that run late (a loaded event loop stalls for tens of ms). */
const ADMISSION_MARGIN = 0.1;

/** A provider and the client-side mechanisms in front of it. */
export interface ProviderSetup {
  readonly provider: Provider;
  /**
   * Every limit the provider sets (requests, tokens, input/output tokens; `requestLimit(rate,
   * burst)` for a request rate alone), kept in this process — or limits kept elsewhere (shared
   * through Redis), as a {@link ProviderLimits}.
   */
  readonly limits: readonly LimitSpec[] | ProviderLimits;
  /** A circuit breaker in front of the provider, with these options. Absent: none. */
  readonly breaker?: BreakerSetup | undefined;
  /** Adapt the request rate to 429s (never above the configured rate), tuned so; `{}` for the defaults. Absent: fixed rate. */
  readonly adaptive?: AdaptiveTuning | undefined;
  /** Lower the limits to what the provider's rate-limit headers say remains. Default `GATE_DEFAULTS`. */
  readonly syncHeaders?: boolean | undefined;
  /** Output tokens reserved per call before its usage is known (token limits only). Default `GATE_DEFAULTS`. */
  readonly maxOutputTokens?: number | undefined;
  /** Calls in flight at once to this provider. Default: no cap beyond the workers. */
  readonly maxConcurrent?: number | undefined;
  /**
   * How long one attempt may wait for the answer, in ms: one that outlasts it is retried within the
   * article's timeout. Default: what is left of the article's timeout (a timeout ends the article).
   */
  readonly callTimeoutMs?: number | undefined;
}

/** The run was cancelled (Ctrl-C): articles in flight end `cancelled`. */
export class CancelledError extends Error {
  override readonly name = 'CancelledError';
}

/**
 * The run stopped because a provider answered in a way no retry can mend (it refused the key, the
 * account has no credit): intake stopped and the articles in flight end `cancelled`, to be run
 * again once a person has acted. `cause` is the provider's error.
 */
export class RunStoppedError extends Error {
  override readonly name = 'RunStoppedError';

  constructor(
    /** The provider that answered so. */
    readonly provider: string,
    cause: Error,
  ) {
    super(`${provider}: ${cause.message}`, { cause });
  }
}

/** An attempt event from a pipeline run: the worker slot that made it is always known. */
export interface PipelineAttemptEvent extends AttemptEvent {
  readonly workerId: number;
}

export interface PipelineOptions {
  /** The articles: any (async) iterable; pulled one at a time as workers free up. */
  readonly source: Iterable<Article> | AsyncIterable<Article>;
  /** How many articles the source holds, when known: the summary then counts those never started. */
  readonly total?: number | undefined;
  /** One gate (limits, breaker, adaptive rate) is made per provider and shared by every worker. */
  readonly providers: readonly ProviderSetup[];
  /** Which provider (by name) serves each task. Default: the first provider serves all. */
  readonly routes?: Partial<Record<TaskName, string>> | undefined;
  /** Articles processed at once. Default {@link PIPELINE_DEFAULTS}. */
  readonly workers?: number | undefined;
  /** Per-article budget in ms for limiter waits and calls together. Default {@link PIPELINE_DEFAULTS}. */
  readonly timeoutMs?: number | undefined;
  /** Attempts per call, backoff and the retry-after cap. Default `RETRY_DEFAULTS`, full-jitter backoff. */
  readonly retry?: RetryPolicyOptions | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
  /** Abort to stop: intake stops, waits and calls in flight are aborted, those articles end `cancelled`. */
  readonly signal?: AbortSignal | undefined;
  /** Told each article's result as it ends; awaited, so a slow writer slows intake rather than buffering. */
  readonly onResult?: ((result: ArticleResult) => void | Promise<void>) | undefined;
  readonly onAttempt?: ((event: PipelineAttemptEvent) => void) | undefined;
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
  if (options.providers.length === 0) throw expected('providers', 'at least one provider', options.providers);

  const gatesByName = new Map<string, CallGate>();
  const breakers: { readonly name: string; readonly breaker: CircuitBreaker; readonly giveUpAfterMs: number }[] = [];
  for (const setup of options.providers) {
    const { name } = setup.provider;
    if (gatesByName.has(name)) throw expected('provider names', 'unique', `"${name}" twice`);
    const giveUpAfterMs = setup.breaker?.giveUpAfterMs ?? PIPELINE_DEFAULTS.giveUpAfterMs;
    checkNumber(`the breaker's giveUpAfterMs of "${name}"`, giveUpAfterMs, { min: 0, finite: false, unit: 'ms' });
    const { gate, breaker } = buildGate(setup, options, clock);
    gatesByName.set(name, gate);
    if (breaker !== undefined) breakers.push({ name, breaker, giveUpAfterMs });
  }
  const defaultProvider = options.providers[0]!.provider.name;
  const gates = Object.fromEntries(
    TASKS.map((task) => {
      const name = options.routes?.[task] ?? defaultProvider;
      const gate = gatesByName.get(name);
      if (gate === undefined) throw expected(`task "${task}"`, 'routed to a known provider', name);
      return [task, gate];
    }),
  ) as Record<TaskName, CallGate>;
  // Loaded before the first token is taken: a call must leave when its token is granted.
  await Promise.all(options.providers.map(({ provider }) => provider.ready?.()));

  const metrics = new Metrics({ startMs: clock.now(), workers, providers: [...gatesByName.keys()], total: options.total });
  const { onResult, onAttempt } = options;
  // The caller's signal, or the run's own stop: a provider that refuses the key ends intake too.
  const stop = new AbortController();
  const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
  logger.info({ workers, timeoutMs, providers: [...gatesByName.keys()] }, 'run started');
  const deadlines = articleDeadlines(clock, timeoutMs, signal);
  // An article's calls take what calls have been taking (allowing for the slow ones) — half its
  // timeout until calls have answered — and the limits may have the rest, less a margin for timers
  // that fire late.
  const latency = new LatencyEstimate(timeoutMs / 2 / TASKS.length);
  const admission = new Admission(
    TASKS.map((task) => gates[task]),
    clock,
    () => timeoutMs * (1 - ADMISSION_MARGIN) - TASKS.length * latency.highMs,
    signal,
  );
  const expectedCallMs = () => latency.meanMs;

  let stoppedBy: RunStop | undefined;
  // Limits that cannot be reached (a shared quota whose Redis is gone) stop intake only: the
  // articles in flight keep what they were granted and fail at their next limiter call.
  const intake = new AbortController();
  // Providers that have answered a call: a 404 after that is one request's, not the address's.
  const answered = new Set<string>();
  // What each provider last failed with: what a provider that stays down is said to be failing with.
  const lastFailure = new Map<string, Error>();
  const recordAttempt = (event: AttemptEvent) => {
    metrics.recordAttempt(event);
    if (event.called) latency.record(event.latencyMs);
    if (ANSWERED.has(event.outcome)) answered.add(event.provider);
    // A 404 is the route or the model: before this provider has answered anything, it is the base
    // URL or the model name that is wrong, and every call would meet it.
    const wrongAddress = isNotFound(event.error) && !answered.has(event.provider);
    if ((stopsRun(event.error) || wrongAddress) && !signal.aborted) {
      stoppedBy = { by: 'provider', provider: event.provider, type: event.error.name, message: event.error.message };
      // A warning, not an error: the run ends in order, and the caller reports why (the CLI in one line).
      logger.warn({ provider: event.provider, err: event.error }, 'run stopped: the provider refuses every call');
      stop.abort(new RunStoppedError(event.provider, event.error));
    }
    if (isLimiterUnavailableError(event.error) && !intake.signal.aborted) {
      stoppedBy ??= { by: 'limits', provider: event.provider, type: event.error.name, message: event.error.message };
      logger.warn({ provider: event.provider, err: event.error }, 'run stopped: the limits cannot be reached');
      intake.abort(event.error);
    }
    if (event.called && event.outcome !== 'ok' && event.error instanceof Error) lastFailure.set(event.provider, event.error);
    onAttempt?.(event as PipelineAttemptEvent);
  };
  const unwatch = breakers.map(({ name, breaker, giveUpAfterMs }) =>
    watchDowntime(breaker, giveUpAfterMs, (downMs) => {
      if (signal.aborted) return;
      const last = lastFailure.get(name);
      const message = `down for ${formatDuration(downMs)}, its circuit open and every probe failing${last === undefined ? '' : ` (the last: ${last.name}: ${last.message})`}`;
      stoppedBy ??= { by: 'provider-down', provider: name, type: last?.name ?? 'BrokenCircuitError', message };
      logger.warn({ provider: name, downMs, err: last }, 'run stopped: the provider stays down');
      stop.abort(new RunStoppedError(name, new Error(message)));
    }),
  );
  // One options object per worker slot, made when the slot first runs: the per-article path
  // allocates little, and slots a run never fills cost nothing.
  const processorOptions: ProcessorOptions[] = [];
  const optionsFor = (workerId: number): ProcessorOptions =>
    (processorOptions[workerId] ??= {
      gates,
      timeoutMs,
      clock,
      deadlines,
      signal,
      workerId,
      onAttempt: recordAttempt,
      admission,
      expectedCallMs,
    });

  try {
    await runPool(
      options.source,
      async (article, workerId) => {
        metrics.recordStarted();
        const result = await processArticle(article, optionsFor(workerId));
        metrics.recordResult(result);
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

  const summary = metrics.summary(
    clock.now(),
    { interrupted: options.signal?.aborted === true, stoppedBy },
    [...gatesByName.values()].map((gate) => gate.figures()),
  );
  logger.info({ succeeded: summary.succeeded, failed: summary.failed, cancelled: summary.cancelled }, 'run finished');
  return summary;
}

/** Outcomes that prove the provider's address and model right: it answered the request itself. */
const ANSWERED: ReadonlySet<AttemptEvent['outcome']> = new Set(['ok', 'rate-limited', 'truncated', 'refused', 'malformed']);

/** A 404 from a provider's HTTP API. */
const isNotFound = (error: unknown): error is BadRequestError => error instanceof BadRequestError && error.status === 404;

/**
 * Calls `onDown` when a probe fails once the circuit has been open — every probe failing since
 * it opened from closed — for `giveUpAfterMs`. Returns a function that stops watching.
 */
function watchDowntime(breaker: CircuitBreaker, giveUpAfterMs: number, onDown: (downMs: number) => void): () => void {
  let downSinceMs: number | undefined;
  return breaker.onStateChange(({ from, to, atMs }) => {
    if (to === 'closed') downSinceMs = undefined;
    else if (to === 'open' && from === 'closed') downSinceMs = atMs;
    else if (to === 'open' && downSinceMs !== undefined && atMs - downSinceMs >= giveUpAfterMs) onDown(atMs - downSinceMs);
  });
}

/** The gate for one provider: its limits, and the breaker and adaptive rate it asks for. */
function buildGate(setup: ProviderSetup, options: PipelineOptions, clock: Clock): { gate: CallGate; breaker: CircuitBreaker | undefined } {
  const { provider } = setup;
  const limits = Array.isArray(setup.limits)
    ? new LocalLimits({ limits: setup.limits as readonly LimitSpec[], clock })
    : (setup.limits as ProviderLimits);
  let adaptive: AdaptiveRate | undefined;
  if (setup.adaptive !== undefined) {
    if (!(limits.rate < Infinity)) throw expected(`the request limit of "${provider.name}"`, 'finite for the adaptive rate', limits.rate);
    adaptive = new AdaptiveRate({ ...setup.adaptive, limits, clock });
  }
  let breaker: CircuitBreaker | undefined;
  if (setup.breaker !== undefined) {
    const { giveUpAfterMs: _, ...breakerOptions } = setup.breaker;
    breaker = new CircuitBreaker({ ...breakerOptions, clock, name: provider.name, logger: options.logger });
  }
  const gate = new CallGate({
    provider,
    limits,
    breaker,
    adaptive,
    clock,
    syncHeaders: setup.syncHeaders,
    maxOutputTokens: setup.maxOutputTokens,
    maxConcurrent: setup.maxConcurrent,
    callTimeoutMs: setup.callTimeoutMs,
    retry: options.retry,
    logger: options.logger,
  });
  return { gate, breaker };
}
