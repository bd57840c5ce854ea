import type { Attributes, Context, Counter, Gauge, Histogram, Span, Tracer } from '@opentelemetry/api';
import { isMissingPackageError, loadOptional } from '../optional-package.ts';
import type { Budget } from '../quota/budget.ts';
import type { LlmResponse, ProviderTarget, TokenUsage } from '../provider/provider.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { ObservedRun, PipelineAttemptEvent, RunObserver } from '../pipeline/run-observer.ts';
import type { Article } from '../sources/article.ts';
import {
  CHAT,
  GEN_AI,
  LIMITER_WAIT_BUCKETS_S,
  METRICS,
  OPERATION_DURATION_BUCKETS_S,
  OURS,
  TOKEN_USAGE_BUCKETS,
} from './gen-ai-conventions.ts';

type OtelApi = typeof import('@opentelemetry/api');

/** What the OpenTelemetry observer is unless told otherwise. */
export const OTEL_OBSERVER_DEFAULTS = Object.freeze({
  /** The instrumentation scope its tracer and meter are named by. */
  scope: 'news-processor',
});

/** How {@link createOtelObserver} names what it reports. */
export interface OtelObserverOptions {
  /** The instrumentation scope its tracer and meter are named by. @default OTEL_OBSERVER_DEFAULTS.scope */
  readonly scope?: string | undefined;
}

/**
 * A run observer (`PipelineOptions.observers`) that reports through `@opentelemetry/api`, after the
 * GenAI semantic conventions — to whatever SDK the application registered (the command's `--otel`
 * starts one): a CLIENT span per attempt that reached the provider, named `chat {model}`, under an
 * INTERNAL span per article (under the span active when the run started, if any); the histograms
 * `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` with the conventions' bucket
 * boundaries (as advice: a view may override them); and our own limiter wait histogram, 429
 * counter and budget gauge. Resolves to an observer that does nothing when `@opentelemetry/api`
 * is not installed: a library reports to tracing only where the application set tracing up.
 */
export async function createOtelObserver(options: OtelObserverOptions = {}): Promise<RunObserver> {
  let api: OtelApi;
  try {
    api = await loadOptional('@opentelemetry/api', 'OpenTelemetry', () => import('@opentelemetry/api'));
  } catch (error) {
    if (isMissingPackageError(error)) return {};
    throw error;
  }
  return new OtelObserver(api, options.scope ?? OTEL_OBSERVER_DEFAULTS.scope);
}

/** A run as the observer keeps it. */
interface WatchedRun extends ObservedRun {
  /** Added to a clock reading, the Unix epoch ms OpenTelemetry takes. */
  readonly epochOffsetMs: number;
  /** What the article spans are children of: the context active as the run started. */
  readonly parent: Context;
}

class OtelObserver implements RunObserver {
  readonly #api: OtelApi;
  readonly #tracer: Tracer;
  readonly #tokenUsage: Histogram;
  readonly #duration: Histogram;
  readonly #limiterWait: Histogram;
  readonly #rateLimited: Counter;
  readonly #budgetRemaining: Gauge;
  #run: WatchedRun | undefined;
  /** The spans of the articles under way, by id. */
  readonly #articles = new Map<string, Span>();

  constructor(api: OtelApi, scope: string) {
    this.#api = api;
    this.#tracer = api.trace.getTracer(scope);
    const meter = api.metrics.getMeter(scope);
    this.#tokenUsage = meter.createHistogram(METRICS.tokenUsage, {
      description: 'Number of input and output tokens used.',
      unit: '{token}',
      advice: { explicitBucketBoundaries: [...TOKEN_USAGE_BUCKETS] },
    });
    this.#duration = meter.createHistogram(METRICS.operationDuration, {
      description: 'GenAI operation duration.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...OPERATION_DURATION_BUCKETS_S] },
    });
    this.#limiterWait = meter.createHistogram(METRICS.limiterWait, {
      description: 'Time a call waited for the rate limits before it was sent.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...LIMITER_WAIT_BUCKETS_S] },
    });
    this.#rateLimited = meter.createCounter(METRICS.rateLimited, {
      description: 'Calls the provider answered 429 (too many requests).',
      unit: '{call}',
    });
    this.#budgetRemaining = meter.createGauge(METRICS.budgetRemaining, {
      description: "What is left of the run's budget, neither spent nor held.",
      unit: '{USD}',
    });
  }

  runStarted(run: ObservedRun): void {
    this.#run = { ...run, epochOffsetMs: Date.now() - run.clock.now(), parent: this.#api.context.active() };
    this.#recordBudget(run.budget);
  }

  articleStarted(article: Article, workerId: number): void {
    const run = this.#run!;
    const span = this.#tracer.startSpan(
      'process article',
      {
        kind: this.#api.SpanKind.INTERNAL,
        startTime: this.#time(run.clock.now()),
        attributes: { [OURS.articleId]: article.id, [OURS.worker]: workerId },
      },
      run.parent,
    );
    this.#articles.set(article.id, span);
  }

  attempt(event: PipelineAttemptEvent): void {
    const run = this.#run!;
    const article = this.#articles.get(event.articleId);
    const ours = { [OURS.provider]: event.provider };
    if (event.outcome === 'rate-limited') this.#rateLimited.add(1, ours);
    if (event.costUsd !== undefined) this.#recordBudget(run.budget);
    if (!event.called) {
      // No call, no chat span: the article's span says why the attempt went no further.
      article?.addEvent(
        'news_processor.attempt.not_sent',
        { [OURS.task]: event.task, [OURS.attempt]: event.attempt, [OURS.outcome]: event.outcome, [OURS.limiterWaitMs]: event.waitMs },
        this.#time(event.atMs),
      );
      return;
    }
    this.#limiterWait.record(event.waitMs / 1000, ours);
    const target = run.providers.get(event.provider)?.target;
    const called = calledAttributes(target);
    const parent = article === undefined ? run.parent : this.#api.trace.setSpan(run.parent, article);
    const span = this.#tracer.startSpan(
      `${CHAT} ${target?.model ?? event.provider}`,
      {
        kind: this.#api.SpanKind.CLIENT,
        startTime: this.#time(event.sentAtMs!),
        // The conventions want these at the span's start, where samplers see them.
        attributes: {
          ...called,
          [GEN_AI.outputType]: 'json',
          ...ours,
          [OURS.task]: event.task,
          [OURS.articleId]: event.articleId,
          [OURS.attempt]: event.attempt,
          [OURS.limiterWaitMs]: event.waitMs,
        },
      },
      parent,
    );
    const answered = answeredAttributes(event.response);
    const usage = event.usage ?? (event.error as { usage?: TokenUsage } | undefined)?.usage;
    const tokens = usageAttributes(usage);
    span.setAttributes({ ...answered, ...tokens, [OURS.outcome]: event.outcome });
    if (event.retryInMs !== undefined) span.setAttribute(OURS.retryDelayMs, event.retryInMs);
    if (event.costUsd !== undefined) span.setAttribute(OURS.costUsd, event.costUsd);
    const metric: Attributes = { ...called, [GEN_AI.responseModel]: answered[GEN_AI.responseModel] };
    if (event.outcome !== 'ok') {
      const type = errorType(event.error);
      span.setAttribute(GEN_AI.errorType, type);
      span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: (event.error as Error | undefined)?.message ?? event.outcome });
      metric[GEN_AI.errorType] = type;
    }
    span.end(this.#time(event.atMs));
    this.#duration.record(event.latencyMs / 1000, metric);
    if (tokens[GEN_AI.inputTokens] !== undefined) {
      this.#tokenUsage.record(tokens[GEN_AI.inputTokens], { ...metric, [GEN_AI.tokenType]: 'input' });
      this.#tokenUsage.record(tokens[GEN_AI.outputTokens]!, { ...metric, [GEN_AI.tokenType]: 'output' });
    }
  }

  articleEnded(result: ArticleResult): void {
    const span = this.#articles.get(result.id);
    if (span === undefined) return;
    this.#articles.delete(result.id);
    span.setAttributes({ [OURS.articleStatus]: result.status, [OURS.attempts]: result.attempts });
    if (result.costUsd !== undefined) span.setAttribute(OURS.costUsd, result.costUsd);
    if (result.error !== undefined) {
      span.setAttribute(GEN_AI.errorType, result.error.type);
      // A cancelled article was stopped, not failed: its span says so without an error.
      if (result.status === 'failed') span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: result.error.message });
    }
    span.end(this.#time(this.#run!.clock.now()));
  }

  runEnded(): void {
    // Every article ends with a result; a span left here would be one the pipeline never ended.
    for (const span of this.#articles.values()) span.end();
    this.#articles.clear();
    this.#recordBudget(this.#run?.budget);
  }

  #recordBudget(budget: Budget | undefined): void {
    if (budget !== undefined) this.#budgetRemaining.record(Math.max(0, budget.maxUsd - budget.spentUsd));
  }

  /** A clock reading as OpenTelemetry takes a time: Unix epoch ms. */
  #time(clockMs: number): number {
    return this.#run!.epochOffsetMs + clockMs;
  }
}

/** What every call to `target` is, on its span and its metrics alike. */
function calledAttributes(target: ProviderTarget | undefined): Attributes {
  const attributes: Attributes = { [GEN_AI.operationName]: CHAT };
  if (target === undefined) return attributes;
  attributes[GEN_AI.providerName] = target.vendor;
  attributes[GEN_AI.requestModel] = target.model;
  if (target.serverAddress !== undefined) attributes[GEN_AI.serverAddress] = target.serverAddress;
  if (target.serverPort !== undefined) attributes[GEN_AI.serverPort] = target.serverPort;
  return attributes;
}

/** What the answer says of itself, when the provider said. */
function answeredAttributes(response: LlmResponse | undefined): Attributes {
  const attributes: Attributes = {};
  if (response?.model !== undefined) attributes[GEN_AI.responseModel] = response.model;
  if (response?.id !== undefined) attributes[GEN_AI.responseId] = response.id;
  if (response?.finishReasons !== undefined) attributes[GEN_AI.finishReasons] = [...response.finishReasons];
  return attributes;
}

/** The tokens as the conventions count them: the input tokens include those the prompt cache served or stored. */
function usageAttributes(usage: TokenUsage | undefined): Record<string, number> {
  if (usage === undefined) return {};
  const attributes: Record<string, number> = {
    [GEN_AI.inputTokens]: usage.inputTokens,
    [GEN_AI.outputTokens]: usage.outputTokens,
  };
  if (usage.cacheReadTokens !== undefined || usage.cacheWriteTokens !== undefined) {
    attributes[GEN_AI.cacheReadInputTokens] = usage.cacheReadTokens ?? 0;
    attributes[GEN_AI.cacheCreationInputTokens] = usage.cacheWriteTokens ?? 0;
  }
  return attributes;
}

/**
 * `error.type`, low in cardinality as the conventions ask: the HTTP status the provider answered
 * with (`429`, `503`), else the error's class (`TimeoutError`, `MalformedOutputError`), else
 * `_OTHER`.
 */
export function errorType(error: unknown): string {
  const { status, name } = (error ?? {}) as { status?: unknown; name?: unknown };
  if (typeof status === 'number') return String(status);
  return typeof name === 'string' && name !== '' ? name : '_OTHER';
}
