import { loadOptional } from '../optional-package.ts';
import { CHAT, GEN_AI, METRICS, OPERATION_DURATION_BUCKETS_S, OURS, TOKEN_USAGE_BUCKETS } from '../telemetry/gen-ai-conventions.ts';
import type { ProxyLogLine } from './proxy-server.ts';

/** The gateway's attributes beyond the GenAI conventions': which key asked, which member answered, the status. */
const PROXY = Object.freeze({
  key: 'news_processor.proxy.key',
  member: 'news_processor.proxy.member',
  status: 'http.response.status_code',
});

/**
 * What `proxy --otel` reports of each request, through `@opentelemetry/api` to whatever SDK the
 * process set up: a `chat {model}` span (server kind) from its arrival to its answer — the model,
 * the usage, the cost, the key's name (never the key), the member — and the GenAI token-usage and
 * duration histograms a run reports too. Told each request as `--log` is (`onRequest`).
 */
export async function proxyTelemetry(): Promise<(line: ProxyLogLine) => void> {
  const api = await loadOptional('@opentelemetry/api', '--otel', () => import('@opentelemetry/api'));
  const tracer = api.trace.getTracer('news-processor-proxy');
  const meter = api.metrics.getMeter('news-processor-proxy');
  const tokens = meter.createHistogram(METRICS.tokenUsage, {
    description: 'Tokens used per request, by type (input, output).',
    unit: '{token}',
    advice: { explicitBucketBoundaries: [...TOKEN_USAGE_BUCKETS] },
  });
  const duration = meter.createHistogram(METRICS.operationDuration, {
    description: 'Time from a request to its answer through the proxy.',
    unit: 's',
    advice: { explicitBucketBoundaries: [...OPERATION_DURATION_BUCKETS_S] },
  });
  return (line) => {
    const endMs = Date.parse(line.time);
    const attributes = {
      [GEN_AI.operationName]: CHAT,
      ...(line.model === undefined ? {} : { [GEN_AI.requestModel]: line.model }),
      [PROXY.key]: line.key,
      ...(line.member === undefined ? {} : { [PROXY.member]: line.member }),
    };
    const span = tracer.startSpan(line.model === undefined ? CHAT : `${CHAT} ${line.model}`, {
      kind: api.SpanKind.SERVER,
      startTime: endMs - line.ms,
      attributes: {
        ...attributes,
        [PROXY.status]: line.status,
        [GEN_AI.inputTokens]: line.inputTokens,
        [GEN_AI.outputTokens]: line.outputTokens,
        [OURS.costUsd]: line.costUsd,
      },
    });
    if (line.status >= 400) span.setStatus({ code: api.SpanStatusCode.ERROR, message: `HTTP ${line.status}` });
    span.end(endMs);
    duration.record(line.ms / 1000, line.status >= 400 ? { ...attributes, [GEN_AI.errorType]: String(line.status) } : attributes);
    if (line.inputTokens > 0) tokens.record(line.inputTokens, { ...attributes, [GEN_AI.tokenType]: 'input' });
    if (line.outputTokens > 0) tokens.record(line.outputTokens, { ...attributes, [GEN_AI.tokenType]: 'output' });
  };
}
