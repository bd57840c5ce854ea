import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import { CircuitBreaker, type CircuitBreakerOptions } from '../breaker/circuit-breaker.ts';
import { AdaptiveRate, type AdaptiveRateOptions } from '../limiter/adaptive-rate.ts';
import { ProviderLimits, type LimitSpec } from '../limiter/provider-limits.ts';
import type { Provider, TaskName } from '../provider/provider.ts';
import { TASKS } from '../provider/provider.ts';
import type { Backoff } from '../retry/backoff.ts';
import type { Article } from './article.ts';
import { CallGate, type AttemptEvent } from './call-gate.ts';
import { Metrics, type RunSummary } from './metrics.ts';
import { runPool } from './pool.ts';
import { articleDeadlines, processArticle } from './processor.ts';
import type { ArticleResult } from './result.ts';
import { silentLogger } from './silent-logger.ts';

/** A provider and the client-side mechanisms in front of it. */
export interface ProviderSetup {
  readonly provider: Provider;
  /** Calls per second allowed to this provider (`Infinity` for no limit), when `limits` is not given. */
  readonly rate?: number;
  /** Calls that may go at once after a quiet spell, when `limits` is not given. Default 1. */
  readonly burst?: number;
  /** Every limit the provider sets (requests, tokens, input/output tokens), in units per second. */
  readonly limits?: readonly LimitSpec[];
  /** A circuit breaker in front of the provider; omitted or `false` for none. */
  readonly breaker?: false | Omit<CircuitBreakerOptions, 'clock' | 'name' | 'logger'>;
  /** Adapt the request rate to 429s (never above the configured rate); `true` for the defaults. */
  readonly adaptive?: boolean | Omit<AdaptiveRateOptions, 'bucket' | 'maxRate' | 'clock'>;
  /** Lower the buckets to what the provider's rate-limit headers say remains. Default false. */
  readonly syncHeaders?: boolean;
  /** Output tokens reserved per call before its usage is known (token limits only). Default 256. */
  readonly maxOutputTokens?: number;
}

/** The run was cancelled (Ctrl-C): articles in flight end `cancelled`. */
export class CancelledError extends Error {
  override readonly name = 'CancelledError';
}

/** An attempt event from a pipeline run: the worker slot that made it is always known. */
export interface PipelineAttemptEvent extends AttemptEvent {
  readonly workerId: number;
}

export interface PipelineOptions {
  /** The articles: any (async) iterable; pulled one at a time as workers free up. */
  readonly source: Iterable<Article> | AsyncIterable<Article>;
  /** One limiter and gate is made per provider and shared by every worker. */
  readonly providers: readonly ProviderSetup[];
  /** Which provider (by name) serves each task. Default: the first provider serves all. */
  readonly routes?: Partial<Record<TaskName, string>>;
  /** Articles processed at once. Default 5. */
  readonly workers?: number;
  /** Per-article budget in ms for limiter waits and calls together. Default 5000. */
  readonly timeoutMs?: number;
  /** Attempts per call, the first included. Default 3. */
  readonly maxAttempts?: number;
  readonly backoff?: Backoff;
  /** A provider's retry-after is obeyed up to this many ms. Default 60 000. */
  readonly maxRetryAfterMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Abort to stop: intake stops, waits and calls in flight are aborted, those articles end `cancelled`. */
  readonly signal?: AbortSignal;
  /** Told each article's result as it ends; awaited, so a slow writer slows intake rather than buffering. */
  readonly onResult?: (result: ArticleResult) => void | Promise<void>;
  readonly onAttempt?: (event: PipelineAttemptEvent) => void;
}

/**
 * Pushes every article of `source` through its tasks under the providers' limits, and returns the
 * figures. Every article pulled from the source ends as exactly one result passed to `onResult`.
 * Rejects when the source fails or `onResult` throws (intake stops and the articles in flight
 * finish first); never for an article's own failure, which becomes its result.
 */
export async function runPipeline(options: PipelineOptions): Promise<RunSummary> {
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child({ component: 'pipeline' });
  const workers = options.workers ?? 5;
  const timeoutMs = options.timeoutMs ?? 5000;
  checkPositiveInteger('workers', workers);
  if (!(timeoutMs > 0)) throw new TypeError(`Expected timeoutMs to be a number > 0, got ${String(timeoutMs)}`);
  if (options.providers.length === 0) throw new TypeError('Expected at least one provider, got none');

  const gatesByName = new Map<string, CallGate>();
  for (const setup of options.providers) {
    const { provider } = setup;
    if (gatesByName.has(provider.name)) throw new TypeError(`Expected unique provider names, got "${provider.name}" twice`);
    gatesByName.set(provider.name, buildGate(setup, { ...options, clock }));
  }
  const defaultProvider = options.providers[0]!.provider.name;
  const gates = Object.fromEntries(
    TASKS.map((task) => {
      const name = options.routes?.[task] ?? defaultProvider;
      const gate = gatesByName.get(name);
      if (gate === undefined) throw new TypeError(`Expected task "${task}" to be routed to a known provider, got "${name}"`);
      return [task, gate];
    }),
  ) as Record<TaskName, CallGate>;

  const metrics = new Metrics({
    startMs: clock.now(),
    workers,
    providers: [...gatesByName.values()].map((gate) => {
      const requests = gate.limits.bucket('requests');
      return { name: gate.provider.name, rate: requests?.rate ?? Infinity, burst: requests?.burst ?? 0, gate };
    }),
  });
  const { signal, onResult, onAttempt } = options;
  logger.info({ workers, timeoutMs, providers: [...gatesByName.keys()] }, 'run started');
  const deadlines = articleDeadlines(clock, timeoutMs, signal);

  const recordAttempt = (event: AttemptEvent) => {
    metrics.recordAttempt(event);
    onAttempt?.(event as PipelineAttemptEvent);
  };
  // One options object per worker slot, made once: the per-article path allocates little.
  const processorOptions = Array.from({ length: workers }, (_, workerId) => ({
    gates,
    timeoutMs,
    clock,
    deadlines,
    signal,
    workerId,
    onAttempt: recordAttempt,
  }));

  try {
    await runPool(
      options.source,
      async (article, workerId) => {
        metrics.recordStarted();
        const result = await processArticle(article, processorOptions[workerId]!);
        metrics.recordResult(result);
        if (result.status === 'failed') logger.warn({ id: result.id, error: result.error }, 'article failed');
        await onResult?.(result);
      },
      { concurrency: workers, ...(signal === undefined ? {} : { signal }) },
    );
  } finally {
    deadlines.dispose();
  }

  const summary = metrics.summary(clock.now(), signal?.aborted === true);
  logger.info({ succeeded: summary.succeeded, failed: summary.failed, cancelled: summary.cancelled }, 'run finished');
  return summary;
}

/** The gate for one provider: its limits, and the breaker and adaptive rate it asks for. */
function buildGate(setup: ProviderSetup, options: PipelineOptions & { clock: Clock }): CallGate {
  const { provider } = setup;
  const { clock } = options;
  const specs: readonly LimitSpec[] = setup.limits ?? [{ kind: 'requests', rate: setup.rate ?? Infinity, burst: setup.burst ?? 1 }];
  const limits = new ProviderLimits(specs, clock);
  const requests = limits.bucket('requests');
  let adaptive: AdaptiveRate | undefined;
  if (setup.adaptive !== undefined && setup.adaptive !== false) {
    if (requests === undefined || requests.rate === Infinity) {
      throw new TypeError(`Expected a finite request limit for the adaptive rate of "${provider.name}", got none`);
    }
    adaptive = new AdaptiveRate({ ...(setup.adaptive === true ? {} : setup.adaptive), bucket: requests, maxRate: requests.rate, clock });
  }
  const breaker =
    setup.breaker === undefined || setup.breaker === false
      ? undefined
      : new CircuitBreaker({
          ...setup.breaker,
          clock,
          name: provider.name,
          ...(options.logger === undefined ? {} : { logger: options.logger }),
        });
  return new CallGate({
    provider,
    limits,
    breaker,
    adaptive,
    clock,
    syncHeaders: setup.syncHeaders ?? false,
    logger: options.logger ?? silentLogger,
    ...(setup.maxOutputTokens === undefined ? {} : { maxOutputTokens: setup.maxOutputTokens }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
    ...(options.maxRetryAfterMs === undefined ? {} : { maxRetryAfterMs: options.maxRetryAfterMs }),
  });
}

function checkPositiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`Expected ${name} to be an integer >= 1, got ${String(value)}`);
}
