// `proxy --otel`: a span per request through the proxy, after the GenAI conventions, with the key's name and never the key.
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyTelemetry } from '../../src/proxy/index.ts';
import { gateway, openai, stopAll, twoVendors, upstream } from './gateway.ts';

const spans = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
});

afterAll(async () => {
  await stopAll();
  trace.disable();
  await provider.shutdown();
});

describe('proxyTelemetry', () => {
  it('reports each request as a chat span: model, usage, cost, key name, member, status', async () => {
    const up = await upstream();
    const { url } = await gateway(
      { providers: twoVendors(up.url, up.url), models: { fast: 'oa' }, keys: [{ name: 'team-a', key: 'sk-secret-a' }] },
      { onRequest: await proxyTelemetry() },
    );
    await openai(url, 'sk-secret-a').chat.completions.create({
      model: 'fast',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
    await expect(
      openai(url, 'sk-secret-a').chat.completions.create({ model: 'slow', messages: [{ role: 'user', content: 'Hi.' }] }),
    ).rejects.toMatchObject({
      status: 404,
    });
    const [ok, missing] = spans.getFinishedSpans();
    expect(ok?.name).toBe('chat fast');
    expect(ok?.kind).toBe(SpanKind.SERVER);
    expect(ok?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'fast',
      'news_processor.proxy.key': 'team-a',
      'news_processor.proxy.member': 'oa',
      'http.response.status_code': 200,
    });
    expect(ok?.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(missing?.status.code).toBe(SpanStatusCode.ERROR);
    expect(JSON.stringify(spans.getFinishedSpans().map((span) => span.attributes))).not.toContain('sk-secret');
  });
});
