import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OPERATION_DURATION_BUCKETS_S, TOKEN_USAGE_BUCKETS } from '../../src/telemetry/gen-ai-conventions.ts';
import { freePort } from '../redis/redis-server.ts';
import { startOtlpCollector, type OtlpCollector } from '../telemetry/otlp-collector.ts';
import { linesOf, makeTempDir, runCli, startCli } from './run-cli.ts';

let collector: OtlpCollector;
let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(() => temp.remove());
beforeEach(async () => {
  collector = await startOtlpCollector();
});
afterEach(() => collector.close());

/** The OTEL_* variables pointing the SDK at the test's collector, over `protocol`. */
const otlpEnv = (protocol: string, extra: Record<string, string | undefined> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: undefined,
  OTEL_RESOURCE_ATTRIBUTES: undefined,
  OTEL_TRACES_EXPORTER: undefined,
  OTEL_METRICS_EXPORTER: undefined,
  ...extra,
});

interface Summary {
  succeeded: number;
  calls: number;
  rateLimited: number;
}

describe('--otel', () => {
  it('sends a chat span per call to the OTLP endpoint (http/json): the answered with their usage, the 429s with error.type, under their article spans', async () => {
    // The client sends 20/s, the simulated provider takes 4/s: 429s, retried.
    const result = await runCli(
      [
        '--otel',
        '--articles=4',
        '--rate=20',
        '--burst=4',
        '--provider-rate=4',
        '--max-attempts=20',
        '--timeout=30s',
        '--min-latency=5ms',
        '--max-latency=10ms',
        '--json',
      ],
      { env: otlpEnv('http/json') },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Summary;
    expect(summary.succeeded).toBe(4);
    expect(summary.rateLimited).toBeGreaterThan(0);

    const spans = collector.spans();
    const chats = spans.filter((span) => span.name === 'chat simulated');
    const articles = spans.filter((span) => span.name === 'process article');
    expect(chats).toHaveLength(summary.calls);
    expect(articles).toHaveLength(4);
    const answered = chats.filter((span) => span.attributes['news_processor.attempt.outcome'] === 'ok');
    expect(answered).toHaveLength(summary.calls - summary.rateLimited);
    expect(answered).toHaveLength(8);
    for (const span of answered) {
      expect(span.kind).toBe(3);
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'news_processor.simulator',
        'gen_ai.request.model': 'simulated',
        'gen_ai.response.model': 'simulated',
        'gen_ai.response.finish_reasons': ['stop'],
      });
      expect(span.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(span.attributes['error.type']).toBeUndefined();
      expect(span.durationMs).toBeGreaterThanOrEqual(5);
      expect(articles.map((article) => article.spanId)).toContain(span.parentSpanId);
    }
    const limited = chats.filter((span) => span.attributes['error.type'] === '429');
    expect(limited).toHaveLength(summary.rateLimited);
    for (const span of limited) expect(span.statusCode).toBe(2);
    expect(spans[0]!.resource['service.name']).toBe('news-processor');

    const metrics = collector.metrics();
    const duration = metrics.get('gen_ai.client.operation.duration')!;
    expect(duration.unit).toBe('s');
    for (const point of duration.points) expect(point.explicitBounds).toEqual(OPERATION_DURATION_BUCKETS_S);
    expect(duration.points.reduce((sum, point) => sum + point.count!, 0)).toBe(summary.calls);
    expect(duration.points.find((point) => point.attributes['error.type'] === '429')!.count).toBe(summary.rateLimited);
    const tokens = metrics.get('gen_ai.client.token.usage')!;
    expect(tokens.unit).toBe('{token}');
    expect(tokens.points.map((point) => point.attributes['gen_ai.token.type']).sort()).toEqual(['input', 'output']);
    for (const point of tokens.points) {
      expect(point.explicitBounds).toEqual(TOKEN_USAGE_BUCKETS);
      expect(point.count).toBe(8);
    }
    const inputTokens = answered.reduce((sum, span) => sum + (span.attributes['gen_ai.usage.input_tokens'] as number), 0);
    expect(tokens.points.find((point) => point.attributes['gen_ai.token.type'] === 'input')!.sum).toBe(inputTokens);
    expect(metrics.get('news_processor.client.rate_limited')!.points[0]!.value).toBe(summary.rateLimited);
    expect(duration.resource['service.name']).toBe('news-processor');
  });

  it('speaks http/protobuf as OTEL_EXPORTER_OTLP_PROTOCOL says, and takes the service name from OTEL_SERVICE_NAME', async () => {
    const result = await runCli(['--otel', '--articles=2', '--rate=inf', '--min-latency=0ms', '--max-latency=1ms', '--quiet'], {
      env: otlpEnv('http/protobuf', { OTEL_SERVICE_NAME: 'nightly-batch' }),
    });
    expect(result.code).toBe(0);
    const paths = collector.requests.map((request) => `${request.path} ${request.contentType}`);
    expect(paths).toContain('/v1/traces application/x-protobuf');
    expect(paths).toContain('/v1/metrics application/x-protobuf');
    // The protobuf encoding holds the strings as they are: the service name and the span names among them.
    const traces = Buffer.concat(collector.requests.filter((request) => request.path === '/v1/traces').map((request) => request.body));
    expect(traces.includes('nightly-batch')).toBe(true);
    expect(traces.includes('chat simulated')).toBe(true);
    expect(traces.includes('news-processor')).toBe(true);
  });

  it('keeps every span of a run with nothing to wait for, where the SDK’s queue of 2,048 dropped them while an export was under way', async () => {
    const result = await runCli(
      ['--otel', '--articles=4000', '--rate=inf', '--min-latency=0ms', '--max-latency=0ms', '--workers=64', '--json', '--quiet'],
      {
        env: otlpEnv('http/json', { OTEL_BSP_MAX_QUEUE_SIZE: undefined, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: undefined }),
      },
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Summary;
    expect(summary.calls).toBe(8000);
    const spans = collector.spans();
    expect(spans.filter((span) => span.name === 'process article')).toHaveLength(4000);
    expect(spans.filter((span) => span.name === 'chat simulated')).toHaveLength(8000);
  });

  it('sends the header OTEL_EXPORTER_OTLP_HEADERS names with every export', async () => {
    const result = await runCli(['--otel', '--articles=1', '--rate=inf', '--min-latency=0ms', '--max-latency=1ms', '--quiet'], {
      env: otlpEnv('http/json', { OTEL_EXPORTER_OTLP_HEADERS: 'x-team=news' }),
    });
    expect(result.code).toBe(0);
    expect(collector.requests.map((request) => request.path).sort()).toEqual(['/v1/metrics', '/v1/traces']);
    for (const request of collector.requests) expect(request.headers['x-team']).toBe('news');
  });

  it('flushes what the run saw when it is stopped by SIGINT mid-run: a span for each article written, its calls’ spans', async () => {
    const output = join(temp.dir, 'interrupted.jsonl');
    const run = startCli(['--otel', '--articles=200', '--rate=20', '--burst=2', '--quiet', '--output', output], {
      env: otlpEnv('http/json'),
    });
    const deadline = Date.now() + 20_000;
    const written = async () => linesOf(await readFile(output, 'utf8').catch(() => ''));
    while ((await written()).length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    run.interrupt();
    const result = await run.result;
    expect(result.code).toBe(130);
    // Nothing was exported before the stop (the batch waits 5 s): all of it came with the flush.
    const results = (await written()).map((line) => JSON.parse(line) as { id: string; status: string; attempts: number });
    const articles = collector.spans().filter((span) => span.name === 'process article');
    expect(results.length).toBeGreaterThanOrEqual(3);
    expect(articles.map((span) => span.attributes['news_processor.article.id']).sort()).toEqual(results.map((r) => r.id).sort());
    const chats = collector.spans().filter((span) => span.name === 'chat simulated');
    expect(chats).toHaveLength(results.reduce((sum, r) => sum + r.attempts, 0));
    expect(articles.some((span) => span.attributes['news_processor.article.status'] === 'cancelled')).toBe(true);
    expect(collector.metrics().get('gen_ai.client.operation.duration')).toBeDefined();
  });

  it.each([
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'http/xml',
      'error: --otel: OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json, grpc; got "http/xml"',
    ],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'localhost:4318', 'error: --otel: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL'],
  ])('refuses %s=%s in one line, before any call', async (name, value, line) => {
    const output = join(temp.dir, `bad-${name}.jsonl`);
    const result = await runCli(['--otel', '--articles=2', '--rate=inf', '--output', output], {
      env: { ...otlpEnv('http/json'), [name]: value },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`${line}\n`);
    await expect(readFile(output)).rejects.toThrow(/ENOENT/);
    expect(collector.requests).toHaveLength(0);
  });

  it("a collector that is down does not fail the run: one warning line, the run's exit code, no wait at exit", async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const result = await runCli(['--otel', '--articles=3', '--rate=inf', '--min-latency=0ms', '--max-latency=1ms', '--quiet'], {
      env: otlpEnv('http/protobuf', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }),
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Succeeded:3 Failed:0/);
    expect(result.stderr).toBe(
      `warning: --otel: no collector answers at ${endpoint} (connect ECONNREFUSED ${endpoint.slice('http://'.length)}): the run's last spans and metrics were not sent\n`,
    );
    // The SDK alone would retry its last exports for OTEL_EXPORTER_OTLP_TIMEOUT (10 s), then fail the run.
    expect(result.elapsedMs).toBeLessThan(6000);
    // A run that fails keeps its own exit code.
    const failing = await runCli(
      [
        '--otel',
        '--articles=4',
        '--rate=inf',
        '--provider-rate=1',
        '--max-attempts=1',
        '--min-latency=0ms',
        '--max-latency=1ms',
        '--quiet',
      ],
      { env: otlpEnv('http/json', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }) },
    );
    expect(failing.stdout).toMatch(/Dead letters: [1-9]/);
    expect(failing.code).toBe(1);
    expect(failing.stderr.match(/^warning: --otel: /gm)).toHaveLength(1);
  });

  it('a collector gone mid-run is said once, as its first export fails, and the run goes on', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const result = await runCli(['--otel', '--articles=8', '--rate=8', '--burst=1', '--min-latency=0ms', '--max-latency=1ms', '--quiet'], {
      env: otlpEnv('http/json', {
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_EXPORTER_OTLP_TIMEOUT: '300',
      }),
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Succeeded:8 Failed:0/);
    expect(result.stderr).toMatch(
      /^warning: --otel: an export to the collector failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\): what it held is lost; the run goes on\n$/,
    );
  });

  it('without --otel sends nothing, whatever the variables say', async () => {
    const result = await runCli(['--articles=2', '--rate=inf', '--min-latency=0ms', '--max-latency=1ms', '--quiet'], {
      env: otlpEnv('http/json'),
    });
    expect(result.code).toBe(0);
    expect(collector.requests).toHaveLength(0);
  });
});
