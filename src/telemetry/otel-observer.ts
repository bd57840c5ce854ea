import type { Attributes, Context, Histogram, Span, Tracer } from '@opentelemetry/api';
import { isMissingPackageError, loadOptional } from '../optional-package.ts';
import type { LlmResponse, ProviderTarget, TokenUsage } from '../provider/provider.ts';
import type { ArticleResult } from '../pipeline/result.ts';
import type { PipelineAttemptEvent, RunObserver, RunStart } from '../pipeline/run-events.ts';
import type { RunCounts } from '../pipeline/run-tally.ts';
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
 * A run observer (`events.observe(observer)` on the run's `RunEvents`) that reports through
 * `@opentelemetry/api`, after the GenAI semantic conventions — to whatever SDK the application
 * registered (the command's `--otel` starts one): a CLIENT span per attempt that reached the
 * provider, named `chat {model}`, under an INTERNAL span per article (under the span active when
 * the run started, if any); the histograms `gen_ai.client.token.usage` and
 * `gen_ai.client.operation.duration` with the conventions' bucket boundaries (as advice: a view may
 * override them), each call's measurements as it ends; our own limiter wait histogram; and, read
 * from the run's tally as the metrics are collected, the 429 counter and the budget gauge.
 * Resolves to an observer that does nothing when `@opentelemetry/api` is not installed: a library
 * reports to tracing only where the application set tracing up.
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
interface WatchedRun extends RunStart {
  /** Added to a clock reading, the Unix epoch ms OpenTelemetry takes. */
  readonly epochOffsetMs: number;
  /** What the article spans are children of: the context active as the run started. */
  readonly parent: Context;
}

/** An article under way: its span, and the context its calls' spans are children of. */
interface WatchedArticle {
  readonly span: Span;
  readonly context: Context;
}

/**
 * What every call to one provider for one task shares, made at its first call and kept: a run
 * makes thousands of calls a second where nothing waits, and building these per call was most of
 * the observer's own cost.
 */
interface CallProfile {
  readonly spanName: string;
  /** The conventions' attributes for a span's start, where samplers see them. */
  readonly startAttributes: Attributes;
  /** The metrics' attributes by the answer's model and the error's type (`responseModel|errorType`). */
  readonly metrics: Map<string, MetricAttributes>;
}

/** One call's metric attributes, and the token usage's for each type. */
interface MetricAttributes {
  readonly call: Attributes;
  readonly input: Attributes;
  readonly output: Attributes;
}

class OtelObserver implements RunObserver {
  readonly #api: OtelApi;
  readonly #tracer: Tracer;
  readonly #tokenUsage: Histogram;
  readonly #duration: Histogram;
  readonly #limiterWait: Histogram;
  #run: WatchedRun | undefined;
  /** The counts of the run under way; undefined between runs (its counts are then in the earlier ones). */
  #tally: RunCounts | undefined;
  /** 429s by provider of the runs observed before this one: the counter goes on from them. */
  readonly #earlierRateLimited = new Map<string, number>();
  /** The articles under way, by id. */
  readonly #articles = new Map<string, WatchedArticle>();
  /** By provider, then task. */
  readonly #profiles = new Map<string, Map<string, CallProfile>>();
  /** `news_processor.provider` alone, by provider: the limiter wait's and the 429 counter's attributes. */
  readonly #providerAttributes = new Map<string, Attributes>();

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
    // Counted by the run's tally, read as the metrics are collected: a count made once, not again here.
    meter
      .createObservableCounter(METRICS.rateLimited, {
        description: 'Calls the provider answered 429 (too many requests).',
        unit: '{call}',
      })
      .addCallback((result) => {
        const seen = new Set<string>();
        for (const provider of this.#tally?.providers.values() ?? []) {
          seen.add(provider.name);
          result.observe(provider.rateLimited + (this.#earlierRateLimited.get(provider.name) ?? 0), this.#attributesOf(provider.name));
        }
        for (const [name, count] of this.#earlierRateLimited) if (!seen.has(name)) result.observe(count, this.#attributesOf(name));
      });
    // Read as the metrics are collected, where a gauge recorded at each priced call did the
    // SDK's work on every one for the last value alone.
    meter
      .createObservableGauge(METRICS.budgetRemaining, {
        description: "What is left of the run's budget, neither spent nor kept for calls of unknown fate.",
        unit: '{USD}',
      })
      .addCallback((result) => {
        const budget = this.#run?.budget;
        if (budget !== undefined) result.observe(Math.max(0, budget.maxUsd - budget.spentUsd - (budget.unknownUsd ?? 0)));
      });
  }

  runStarted(run: RunStart): void {
    this.#run = { ...run, epochOffsetMs: Date.now() - run.clock.now(), parent: this.#api.context.active() };
    this.#tally = run.counts;
  }

  articleStarted(article: Article, workerId: number): void {
    const run = this.#run!;
    const span = this.#tracer.startSpan(
      'process article',
      { kind: this.#api.SpanKind.INTERNAL, startTime: this.#time(run.clock.now()) },
      run.parent,
    );
    // An unsampled span keeps nothing: no attribute is worth making for it.
    if (span.isRecording()) span.setAttribute(OURS.articleId, article.id).setAttribute(OURS.worker, workerId);
    this.#articles.set(article.id, { span, context: this.#api.trace.setSpan(run.parent, span) });
  }

  attempt(event: PipelineAttemptEvent): void {
    const run = this.#run!;
    const article = this.#articles.get(event.articleId);
    const provider = this.#attributesOf(event.provider);
    if (!event.called) {
      // No call, no chat span: the article's span says why the attempt went no further.
      if (article?.span.isRecording() === true) {
        article.span.addEvent(
          'news_processor.attempt.not_sent',
          { [OURS.task]: event.task, [OURS.attempt]: event.attempt, [OURS.outcome]: event.outcome, [OURS.limiterWaitMs]: event.waitMs },
          this.#time(event.atMs),
        );
      }
      return;
    }
    this.#limiterWait.record(event.waitMs / 1000, provider);
    const profile = this.#profileOf(event.provider, event.task);
    const span = this.#tracer.startSpan(
      profile.spanName,
      { kind: this.#api.SpanKind.CLIENT, startTime: this.#time(event.sentAtMs!), attributes: profile.startAttributes },
      article?.context ?? run.parent,
    );
    const response = event.response;
    const usage = event.usage ?? (event.error as { usage?: TokenUsage } | undefined)?.usage;
    const type = event.outcome === 'ok' ? undefined : errorType(event.error);
    if (span.isRecording()) {
      span
        .setAttribute(OURS.provider, event.provider)
        .setAttribute(OURS.task, event.task)
        .setAttribute(OURS.articleId, event.articleId)
        .setAttribute(OURS.attempt, event.attempt)
        .setAttribute(OURS.limiterWaitMs, event.waitMs)
        .setAttribute(OURS.outcome, event.outcome)
        .setAttribute(GEN_AI.outputType, 'json');
      if (response !== undefined) setAnswered(span, response);
      if (usage !== undefined) setUsage(span, usage);
      if (event.retryInMs !== undefined) span.setAttribute(OURS.retryDelayMs, event.retryInMs);
      if (event.costUsd !== undefined) span.setAttribute(OURS.costUsd, event.costUsd);
      if (event.unknownCostUsd !== undefined && event.unknownCostUsd > 0) span.setAttribute(OURS.unknownCostUsd, event.unknownCostUsd);
      if (type !== undefined) {
        span.setAttribute(GEN_AI.errorType, type);
        span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: (event.error as Error | undefined)?.message ?? event.outcome });
      }
      span.end(this.#time(event.atMs));
    }
    const metric = metricAttributesOf(profile, response?.model, type);
    this.#duration.record(event.latencyMs / 1000, metric.call);
    if (usage !== undefined) {
      this.#tokenUsage.record(usage.inputTokens, metric.input);
      this.#tokenUsage.record(usage.outputTokens, metric.output);
    }
  }

  result(result: ArticleResult): void {
    const article = this.#articles.get(result.id);
    if (article === undefined) return;
    this.#articles.delete(result.id);
    const span = article.span;
    if (!span.isRecording()) return;
    span.setAttribute(OURS.articleStatus, result.status).setAttribute(OURS.attempts, result.attempts);
    if (result.costUsd !== undefined) span.setAttribute(OURS.costUsd, result.costUsd);
    if (result.unknownCostUsd !== undefined) span.setAttribute(OURS.unknownCostUsd, result.unknownCostUsd);
    if (result.error !== undefined) {
      span.setAttribute(GEN_AI.errorType, result.error.type);
      // A cancelled article was stopped, not failed: its span says so without an error.
      if (result.status === 'failed') span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: result.error.message });
    }
    span.end(this.#time(this.#run!.clock.now()));
  }

  runEnded(): void {
    // Every article ends with a result; a span left here would be one the pipeline never ended.
    for (const article of this.#articles.values()) article.span.end();
    this.#articles.clear();
    // The next run's tally starts from nothing: the counter goes on from this one's.
    for (const provider of this.#tally?.providers.values() ?? []) {
      this.#earlierRateLimited.set(provider.name, (this.#earlierRateLimited.get(provider.name) ?? 0) + provider.rateLimited);
    }
    this.#tally = undefined;
  }

  #attributesOf(provider: string): Attributes {
    let attributes = this.#providerAttributes.get(provider);
    if (attributes === undefined) {
      attributes = Object.freeze({ [OURS.provider]: provider });
      this.#providerAttributes.set(provider, attributes);
    }
    return attributes;
  }

  #profileOf(provider: string, task: string): CallProfile {
    let byTask = this.#profiles.get(provider);
    if (byTask === undefined) {
      byTask = new Map();
      this.#profiles.set(provider, byTask);
    }
    let profile = byTask.get(task);
    if (profile === undefined) {
      const target = this.#run!.providers.get(provider)?.target;
      profile = {
        spanName: `${CHAT} ${target?.model ?? provider}`,
        startAttributes: calledAttributes(target),
        metrics: new Map(),
      };
      byTask.set(task, profile);
    }
    return profile;
  }

  /** A clock reading as OpenTelemetry takes a time: Unix epoch ms. */
  #time(clockMs: number): number {
    return this.#run!.epochOffsetMs + clockMs;
  }
}

/** What every call to `target` is, on its span (at its start: the conventions want these where samplers see them) and its metrics alike. */
function calledAttributes(target: ProviderTarget | undefined): Attributes {
  const attributes: Attributes = { [GEN_AI.operationName]: CHAT };
  if (target !== undefined) {
    attributes[GEN_AI.providerName] = target.vendor;
    attributes[GEN_AI.requestModel] = target.model;
    if (target.serverAddress !== undefined) attributes[GEN_AI.serverAddress] = target.serverAddress;
    if (target.serverPort !== undefined) attributes[GEN_AI.serverPort] = target.serverPort;
  }
  return Object.freeze(attributes);
}

/** The metrics' attributes for a call that `responseModel` answered, or that failed with `errorType`: made once for each. */
function metricAttributesOf(profile: CallProfile, responseModel: string | undefined, errorType: string | undefined): MetricAttributes {
  const key = `${responseModel ?? ''}|${errorType ?? ''}`;
  let found = profile.metrics.get(key);
  if (found === undefined) {
    const call: Attributes = { ...profile.startAttributes };
    if (responseModel !== undefined) call[GEN_AI.responseModel] = responseModel;
    if (errorType !== undefined) call[GEN_AI.errorType] = errorType;
    found = {
      call: Object.freeze(call),
      input: Object.freeze({ ...call, [GEN_AI.tokenType]: 'input' }),
      output: Object.freeze({ ...call, [GEN_AI.tokenType]: 'output' }),
    };
    profile.metrics.set(key, found);
  }
  return found;
}

/** What the answer says of itself, when the provider said. */
function setAnswered(span: Span, response: LlmResponse): void {
  if (response.model !== undefined) span.setAttribute(GEN_AI.responseModel, response.model);
  if (response.id !== undefined) span.setAttribute(GEN_AI.responseId, response.id);
  // Not copied: nothing changes an answer's array once it is made.
  if (response.finishReasons !== undefined) span.setAttribute(GEN_AI.finishReasons, response.finishReasons as string[]);
}

/** The tokens as the conventions count them: the input tokens include those the prompt cache served or stored. */
function setUsage(span: Span, usage: TokenUsage): void {
  span.setAttribute(GEN_AI.inputTokens, usage.inputTokens).setAttribute(GEN_AI.outputTokens, usage.outputTokens);
  if (usage.cacheReadTokens !== undefined || usage.cacheWriteTokens !== undefined) {
    span
      .setAttribute(GEN_AI.cacheReadInputTokens, usage.cacheReadTokens ?? 0)
      .setAttribute(GEN_AI.cacheCreationInputTokens, usage.cacheWriteTokens ?? 0);
  }
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
