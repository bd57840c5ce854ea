// Where --otel sends (the collector endpoints the OTEL_* variables name) and whether anything answers there.

/**
 * How long a collector may take to accept a connection at exit before it is taken for down, in ms:
 * a refused one says so at once; the SDK would otherwise retry its exports for
 * OTEL_EXPORTER_OTLP_TIMEOUT (10 s) before the process could end.
 */
export const COLLECTOR_PROBE_MS = 1000;

/** One place the exports go: the URL as the variables give it, and the host and port to reach. */
export interface CollectorEndpoint {
  readonly url: string;
  readonly host: string;
  readonly port: number;
}

/** The SDK's default endpoints, by protocol family. */
const DEFAULT_HTTP_ENDPOINT = 'http://localhost:4318';
const DEFAULT_GRPC_ENDPOINT = 'http://localhost:4317';

/**
 * The endpoints the traces and the metrics are exported to over OTLP, as the SDK reads the
 * variables (a signal's own `…_TRACES_…`/`…_METRICS_…` variable over the shared one; a signal whose
 * `OTEL_…_EXPORTER` does not name `otlp` sends nowhere): each host and port once.
 */
export function collectorEndpoints(env: NodeJS.ProcessEnv): CollectorEndpoint[] {
  const found = new Map<string, CollectorEndpoint>();
  for (const signal of ['TRACES', 'METRICS'] as const) {
    const exporters = (env[`OTEL_${signal}_EXPORTER`] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    if (exporters.length > 0 && !exporters.includes('otlp')) continue;
    const protocol = (env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? '').trim();
    const url =
      (env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ?? '').trim() ||
      (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() ||
      (protocol === 'grpc' ? DEFAULT_GRPC_ENDPOINT : DEFAULT_HTTP_ENDPOINT);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      continue;
    }
    const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    found.set(`${host}:${port}`, { url: `${parsed.protocol}//${parsed.host}`, host, port });
  }
  return [...found.values()];
}

/** Why nothing takes a connection at `endpoint` within `timeoutMs` (`connect ECONNREFUSED 127.0.0.1:4318`), or undefined when something does. */
export async function unreachable(endpoint: CollectorEndpoint, timeoutMs = COLLECTOR_PROBE_MS): Promise<string | undefined> {
  // Loaded when asked: a run without --otel never is.
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(`no connection within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(undefined));
    // Both of localhost's addresses refused: an AggregateError, its message empty.
    socket.once('error', (error: Error & { readonly errors?: readonly Error[]; readonly code?: string }) =>
      done(error.message || error.errors?.[0]?.message || error.code || 'the connection failed'),
    );
  });
}

/** The first endpoint nothing answers at, and why; undefined when every one answers. */
export async function firstUnreachable(
  endpoints: readonly CollectorEndpoint[],
): Promise<{ readonly endpoint: CollectorEndpoint; readonly why: string } | undefined> {
  const answers = await Promise.all(endpoints.map((endpoint) => unreachable(endpoint)));
  const index = answers.findIndex((why) => why !== undefined);
  return index < 0 ? undefined : { endpoint: endpoints[index]!, why: answers[index]! };
}

/** An SDK diagnostic or an error as a short reason: its message, not its stack or its JSON. */
export function reasonOf(report: unknown): string {
  let text = report instanceof Error ? report.message : String(report);
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') text = parsed.message;
  } catch {}
  const first = text.split('\n')[0]!.trim();
  return first.length > 200 ? `${first.slice(0, 199)}…` : first;
}
