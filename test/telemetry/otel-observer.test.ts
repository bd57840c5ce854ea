import { metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { RunEvents } from '../../src/pipeline/run-events.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { OPERATION_DURATION_BUCKETS_S, TOKEN_USAGE_BUCKETS } from '../../src/telemetry/gen-ai-conventions.ts';
import { createOtelObserver, errorType } from '../../src/telemetry/otel-observer.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

// One SDK for the file, registered as an application would: the observer finds it through the API's globals.
const spans = new InMemorySpanExporter();
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
let meterProvider: MeterProvider;
let reader: PeriodicExportingMetricReader;

beforeAll(() => {
  trace.setGlobalTracerProvider(tracerProvider);
});

beforeEach(() => {
  // A meter provider per test: its instruments start from nothing.
  reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 1e9 });
  meterProvider = new MeterProvider({ readers: [reader] });
  metrics.disable();
  metrics.setGlobalMeterProvider(meterProvider);
  spans.reset();
  metricExporter.reset();
});

afterAll(async () => {
  trace.disable();
  metrics.disable();
  await tracerProvider.shutdown();
});

/** The metrics exported so far, by name. */
async function exportedMetrics(): Promise<Map<string, MetricData>> {
  await reader.forceFlush();
  const found = new Map<string, MetricData>();
  for (const resource of metricExporter.getMetrics()) {
    for (const scope of resource.scopeMetrics) for (const metric of scope.metrics) found.set(metric.descriptor.name, metric);
  }
  return found;
}

const ms = ([seconds, nanos]: [number, number]) => seconds * 1000 + nanos / 1e6;
const durationMs = (span: ReadableSpan) => ms(span.duration);

/** A run on manual time: `articles` articles, the simulation answering each call in exactly 100 ms. */
async function observedRun(options: { articles: number; quota?: { rate: number; burst: number }; priced?: boolean }) {
  const clock = new ManualClock();
  const provider = new SimulatedProvider({ clock, minLatencyMs: 100, maxLatencyMs: 100, quota: options.quota });
  const events = new RunEvents();
  events.observe(await createOtelObserver());
  const results: ArticleResult[] = [];
  const budget = options.priced ? new LocalBudget({ maxUsd: 1 }) : undefined;
  const price = options.priced ? { inputPerMTok: 100, outputPerMTok: 100 } : undefined;
  const summary = await drive(
    clock,
    runPipeline({
      source: generateArticles(options.articles),
      providers: [{ provider, limits: requestLimit(10, 2), price }],
      budget,
      workers: 2,
      timeoutMs: 60_000,
      retry: { maxAttempts: 10 },
      clock,
      events,
      onResult: (result) => {
        results.push(result);
      },
    }),
  );
  return { summary, results, provider, budget, finished: spans.getFinishedSpans() };
}

describe('createOtelObserver()', () => {
  it('makes a CLIENT span `chat {model}` per call under its article span, with the GenAI attributes and the usage', async () => {
    const { summary, finished } = await observedRun({ articles: 2 });
    expect(summary.succeeded).toBe(2);
    const articles = finished.filter((span) => span.name === 'process article');
    const chats = finished.filter((span) => span.name === 'chat simulated');
    expect(articles).toHaveLength(2);
    expect(chats).toHaveLength(4);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      const parent = articles.find((article) => article.spanContext().spanId === chat.parentSpanContext?.spanId);
      expect(parent?.attributes['news_processor.article.id']).toBe(chat.attributes['news_processor.article.id']);
      expect(chat.spanContext().traceId).toBe(parent!.spanContext().traceId);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'news_processor.simulator',
        'gen_ai.request.model': 'simulated',
        'gen_ai.response.model': 'simulated',
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.output.type': 'json',
        'news_processor.provider': 'simulated',
        'news_processor.attempt': 1,
        'news_processor.attempt.outcome': 'ok',
      });
      expect(chat.attributes['gen_ai.response.id']).toMatch(/^simulated-\d+$/);
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['error.type']).toBeUndefined();
      expect(chat.status.code).toBe(SpanStatusCode.UNSET);
      // The span is the call: from its send to its answer, on the run's clock, exactly.
      expect(durationMs(chat)).toBeCloseTo(100, 6);
    }
    // Each article: its two calls in series, 100 ms each, the second sent as the first answered.
    for (const article of articles) {
      expect(article.kind).toBe(SpanKind.INTERNAL);
      expect(article.parentSpanContext).toBeUndefined();
      expect(article.attributes).toMatchObject({ 'news_processor.article.status': 'succeeded', 'news_processor.article.attempts': 2 });
    }
    expect(chats.map((chat) => chat.attributes['news_processor.task']).sort()).toEqual([
      'sentiment',
      'sentiment',
      'summarize',
      'summarize',
    ]);
  });

  it('records the two GenAI histograms with the conventions’ bucket boundaries, one duration per call and the tokens by type', async () => {
    const { finished } = await observedRun({ articles: 3 });
    const found = await exportedMetrics();
    const duration = found.get('gen_ai.client.operation.duration')!;
    expect(duration.descriptor.unit).toBe('s');
    expect(duration.dataPointType).toBe(DataPointType.HISTOGRAM);
    const durationPoint = duration.dataPoints[0]!.value as Histogram;
    expect(durationPoint.buckets.boundaries).toEqual(OPERATION_DURATION_BUCKETS_S);
    expect(durationPoint.count).toBe(6);
    expect(durationPoint.sum).toBeCloseTo(0.6, 9);
    expect(duration.dataPoints[0]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'news_processor.simulator',
    });

    const tokens = found.get('gen_ai.client.token.usage')!;
    expect(tokens.descriptor.unit).toBe('{token}');
    const byType = new Map(tokens.dataPoints.map((point) => [point.attributes['gen_ai.token.type'], point.value as Histogram]));
    expect([...byType.keys()].sort()).toEqual(['input', 'output']);
    for (const value of byType.values()) expect(value.buckets.boundaries).toEqual(TOKEN_USAGE_BUCKETS);
    const spanTotal = (name: string) => finished.reduce((sum, span) => sum + ((span.attributes[name] as number | undefined) ?? 0), 0);
    expect(byType.get('input')!.sum).toBe(spanTotal('gen_ai.usage.input_tokens'));
    expect(byType.get('output')!.sum).toBe(spanTotal('gen_ai.usage.output_tokens'));
    expect(byType.get('input')!.count).toBe(6);
  });

  it('marks the 429s with error.type "429" and an error status, counts them, and says the retry that followed', async () => {
    // The client's limits allow 10 calls/s, the provider's quota 2: 429s, retried after its hint.
    const { summary, provider, finished } = await observedRun({ articles: 4, quota: { rate: 2, burst: 1 } });
    expect(summary.succeeded).toBe(4);
    expect(provider.rateLimited).toBeGreaterThan(0);
    const limited = finished.filter((span) => span.attributes['error.type'] === '429');
    expect(limited).toHaveLength(provider.rateLimited);
    for (const span of limited) {
      expect(span.name).toBe('chat simulated');
      expect(span.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'rate limited (429): quota exceeded' });
      expect(span.attributes['news_processor.attempt.outcome']).toBe('rate-limited');
      expect(span.attributes['news_processor.retry.delay_ms']).toBeGreaterThan(0);
      expect(span.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    }
    // Every call that reached the provider has its span: the answered and the refused.
    expect(finished.filter((span) => span.name === 'chat simulated')).toHaveLength(provider.calls);
    const found = await exportedMetrics();
    const counted = found.get('news_processor.client.rate_limited')!.dataPoints;
    expect(counted.reduce((sum, point) => sum + (point.value as number), 0)).toBe(provider.rateLimited);
    const failedDurations = found
      .get('gen_ai.client.operation.duration')!
      .dataPoints.filter((point) => point.attributes['error.type'] === '429');
    expect((failedDurations[0]!.value as Histogram).count).toBe(provider.rateLimited);
    const waits = found.get('news_processor.limiter.wait.duration')!.dataPoints[0]!.value as Histogram;
    expect(waits.count).toBe(provider.calls);
  });

  it('counts the 429s as the run counted them, going on from one run to the next of the same observer', async () => {
    const events = new RunEvents();
    events.observe(await createOtelObserver());
    const run = async () => {
      const clock = new ManualClock();
      const provider = new SimulatedProvider({ clock, minLatencyMs: 100, maxLatencyMs: 100, quota: { rate: 2, burst: 1 } });
      const summary = await drive(
        clock,
        runPipeline({
          source: generateArticles(4),
          providers: [{ provider, limits: requestLimit(10, 2) }],
          workers: 2,
          timeoutMs: 60_000,
          retry: { maxAttempts: 10 },
          clock,
          events,
        }),
      );
      return summary.rateLimited;
    };
    const first = await run();
    const second = await run();
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
    const counted = (await exportedMetrics()).get('news_processor.client.rate_limited')!.dataPoints;
    expect(counted.map((point) => point.value)).toEqual([first + second]);
  });

  it('reports what is left of the budget', async () => {
    const { budget, summary } = await observedRun({ articles: 2, priced: true });
    expect(summary.succeeded).toBe(2);
    const found = await exportedMetrics();
    const gauge = found.get('news_processor.budget.remaining')!;
    expect(gauge.dataPointType).toBe(DataPointType.GAUGE);
    expect(gauge.dataPoints[0]!.value).toBeCloseTo(budget!.maxUsd - budget!.spentUsd, 12);
    expect(budget!.spentUsd).toBeGreaterThan(0);
  });
});

describe('createOtelObserver() under a sampler', () => {
  /** Runs `articles` articles with the global tracer provider sampling as `sampler` says, then puts the file's provider back. */
  async function sampledRun(sampler: Sampler, articles: number) {
    const sampled = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(spans)] });
    trace.disable();
    trace.setGlobalTracerProvider(sampled);
    try {
      return await observedRun({ articles });
    } finally {
      trace.disable();
      trace.setGlobalTracerProvider(tracerProvider);
    }
  }

  it('samples an article’s calls as its article: each exported chat span’s parent exported too, and each exported article with its calls', async () => {
    const { summary, finished } = await sampledRun(new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.5) }), 40);
    expect(summary.succeeded).toBe(40);
    const articles = finished.filter((span) => span.name === 'process article');
    const chats = finished.filter((span) => span.name === 'chat simulated');
    // 40 coin flips: fewer than 40 and more than none is all but certain (2 × 2^-40 otherwise).
    expect(articles.length).toBeGreaterThan(0);
    expect(articles.length).toBeLessThan(40);
    expect(chats).toHaveLength(articles.length * 2);
    const articleIds = new Set(articles.map((span) => span.spanContext().spanId));
    for (const chat of chats) expect(articleIds.has(chat.parentSpanContext!.spanId)).toBe(true);
  });

  it('still records every call in the metrics when no span is sampled', async () => {
    const { summary, finished } = await sampledRun(new AlwaysOffSampler(), 3);
    expect(summary.succeeded).toBe(3);
    expect(finished).toHaveLength(0);
    const found = await exportedMetrics();
    expect((found.get('gen_ai.client.operation.duration')!.dataPoints[0]!.value as Histogram).count).toBe(6);
    const tokens = found.get('gen_ai.client.token.usage')!.dataPoints;
    expect(tokens.map((point) => (point.value as Histogram).count)).toEqual([6, 6]);
  });
});

describe('errorType()', () => {
  it('is the HTTP status when there was one, else the error’s class, else _OTHER', () => {
    expect(errorType(Object.assign(new Error('x'), { status: 503 }))).toBe('503');
    expect(errorType(new TypeError('x'))).toBe('TypeError');
    expect(errorType(undefined)).toBe('_OTHER');
    expect(errorType('boom')).toBe('_OTHER');
  });
});
