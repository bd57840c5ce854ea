// An OTLP/HTTP collector in the test's process: a node:http server on a free loopback port taking
// POST /v1/traces and /v1/metrics, keeping what it was sent. With `http/json` the bodies are the
// OTLP JSON encoding, read here into plain spans and metric points to assert on.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the collector received. */
export interface OtlpRequest {
  readonly path: string;
  readonly contentType: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** An OTLP attribute's value as the JSON encoding writes it. */
interface AnyValue {
  readonly stringValue?: string;
  readonly intValue?: number | string;
  readonly doubleValue?: number;
  readonly boolValue?: boolean;
  readonly arrayValue?: { readonly values?: readonly AnyValue[] };
}

type KeyValues = readonly { readonly key: string; readonly value: AnyValue }[] | undefined;

/** A span as the collector read it: its attributes and its resource's as plain values. */
export interface CollectedSpan {
  readonly name: string;
  /** OTLP's numbering: 1 internal, 3 client. */
  readonly kind: number;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly traceId: string;
  readonly durationMs: number;
  readonly attributes: Readonly<Record<string, unknown>>;
  /** OTLP's: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly resource: Readonly<Record<string, unknown>>;
}

/** A metric as the collector read it: the last export's data points (cumulative: the run's totals). */
export interface CollectedMetric {
  readonly name: string;
  readonly unit: string;
  readonly points: readonly CollectedPoint[];
  readonly resource: Readonly<Record<string, unknown>>;
}

export interface CollectedPoint {
  readonly attributes: Readonly<Record<string, unknown>>;
  /** A histogram's. */
  readonly count?: number;
  readonly sum?: number;
  readonly explicitBounds?: readonly number[];
  /** A sum's or a gauge's. */
  readonly value?: number;
}

export interface OtlpCollector {
  /** `http://127.0.0.1:PORT`: what OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  readonly endpoint: string;
  readonly requests: OtlpRequest[];
  /** Every span received in JSON. */
  spans(): CollectedSpan[];
  /** Every metric of the JSON exports, the last export's points for each name. */
  metrics(): Map<string, CollectedMetric>;
  close(): Promise<void>;
}

const plainValue = (value: AnyValue): unknown => {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plainValue);
  return undefined;
};

const plain = (attributes: KeyValues): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, plainValue(value)]));

/** Starts a collector on a free loopback port; it answers every POST 200 with an empty export response. */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const requests: OtlpRequest[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        path: request.url ?? '',
        contentType: request.headers['content-type'],
        headers: request.headers,
        body: Buffer.concat(chunks),
      });
      const json = request.headers['content-type']?.includes('json') === true;
      response.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      response.end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const json = (path: string) =>
    requests.filter((r) => r.path === path && r.contentType?.includes('json') === true).map((r) => JSON.parse(r.body.toString('utf8')));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    spans: () =>
      json('/v1/traces').flatMap((body) =>
        body.resourceSpans.flatMap((rs: { resource?: { attributes?: KeyValues }; scopeSpans: { spans: Record<string, never>[] }[] }) =>
          rs.scopeSpans.flatMap((scope) =>
            scope.spans.map(
              (span: Record<string, never>): CollectedSpan => ({
                name: span.name,
                kind: span.kind,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                traceId: span.traceId,
                durationMs: Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6,
                attributes: plain(span.attributes),
                statusCode: (span.status as { code?: number } | undefined)?.code ?? 0,
                resource: plain(rs.resource?.attributes),
              }),
            ),
          ),
        ),
      ),
    metrics: () => {
      const found = new Map<string, CollectedMetric>();
      for (const body of json('/v1/metrics')) {
        for (const rm of body.resourceMetrics) {
          for (const scope of rm.scopeMetrics) {
            for (const metric of scope.metrics) {
              const data = metric.histogram ?? metric.sum ?? metric.gauge;
              const points = (data?.dataPoints ?? []).map(
                (point: Record<string, never>): CollectedPoint => ({
                  attributes: plain(point.attributes),
                  count: point.count === undefined ? undefined : Number(point.count),
                  sum: point.sum,
                  explicitBounds: point.explicitBounds,
                  value: point.asDouble ?? (point.asInt === undefined ? undefined : Number(point.asInt)),
                }),
              );
              found.set(metric.name, { name: metric.name, unit: metric.unit, points, resource: plain(rm.resource?.attributes) });
            }
          }
        }
      }
      return found;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
