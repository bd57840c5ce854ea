// --otel: the OpenTelemetry SDK, set up by the standard OTEL_* variables, and the run's observer reporting to it.
import { Option } from 'commander';
import type { RunObserver } from '../src/index.ts';
import { createOtelObserver } from '../src/telemetry/index.ts';
import { loadOptional } from '../src/mechanisms.ts';
import { collectorEndpoints, firstUnreachable, reasonOf } from './otel-collector.ts';
import { UsageError } from './usage-error.ts';

export interface OtelFlags {
  otel: boolean;
}

/** The service a run's spans and metrics are from, unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another. */
export const OTEL_SERVICE_NAME = 'news-processor';

export function otelOption(): Option {
  return new Option(
    '--otel',
    'send spans and metrics (the OpenTelemetry GenAI conventions) over OTLP, as the OTEL_* variables say (endpoint, protocol, headers)',
  ).default(false);
}

/** The SDK started, and what reports the run to it. */
export interface Telemetry {
  /** Follows a run: observe the run's events with it (`events.observe`). */
  readonly observer: RunObserver;
  /**
   * Sends what is not sent yet — the last spans, the metrics' final values — and stops the SDK.
   * Never rejects: a collector that fails the run's exports is one warning line on stderr, and one
   * that does not answer at all is not waited for.
   */
  shutdown(): Promise<void>;
}

/**
 * Starts the Node SDK as the OTEL_* variables configure it (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_PROTOCOL `http/protobuf` by default or `http/json` or `grpc`,
 * OTEL_EXPORTER_OTLP_HEADERS, the per-signal variants, OTEL_TRACES_SAMPLER, …): traces and metrics
 * over OTLP; no logs (the run's log is its own, on stderr), no instrumentation of other libraries.
 *
 * Tracing is the run's guest: a collector that is down or refuses the exports does not change how
 * the run ends. It is said once, on stderr, as `warning: --otel: …` (unless OTEL_LOG_LEVEL asks
 * for the SDK's own diagnostics), and at exit a collector that takes no connection is not waited
 * for — the SDK would retry its last exports for OTEL_EXPORTER_OTLP_TIMEOUT.
 */
export async function startTelemetry(env: NodeJS.ProcessEnv): Promise<Telemetry> {
  checkOtelEnv(env);
  // The SDK reads the span queue's sizes from process.env alone.
  for (const [name, value] of Object.entries(SPAN_QUEUE)) if ((process.env[name] ?? '').trim() === '') process.env[name] = value;
  const { NodeSDK } = await loadOptional('@opentelemetry/sdk-node', '--otel', () => import('@opentelemetry/sdk-node'));
  const sdk = new NodeSDK({
    serviceName: serviceName(env),
    logRecordProcessors: [],
    instrumentations: [],
    // The observer parents its spans itself: no context need follow the run's promises, and
    // AsyncLocalStorage following them would cost every await of a run. The SDK takes null as
    // "register none", which its type does not say.
    contextManager: null as unknown as undefined,
  });
  sdk.start();
  let warned = false;
  const warn = (text: string) => {
    if (warned) return;
    warned = true;
    process.stderr.write(`warning: --otel: ${text}\n`);
  };
  if ((env.OTEL_LOG_LEVEL ?? '').trim() === '') {
    // An export that failed mid-run reaches the SDK's error handler, which writes to this logger.
    const { diag, DiagLogLevel } = await import('@opentelemetry/api');
    const ignore = () => {};
    diag.setLogger(
      {
        error: (message) => warn(`an export to the collector failed (${reasonOf(message)}): what it held is lost; the run goes on`),
        warn: ignore,
        info: ignore,
        debug: ignore,
        verbose: ignore,
      },
      DiagLogLevel.ERROR,
    );
  }
  const endpoints = collectorEndpoints(env);
  return {
    observer: await createOtelObserver(),
    shutdown: async () => {
      const down = await firstUnreachable(endpoints);
      if (down !== undefined) {
        warn(`no collector answers at ${down.endpoint.url} (${down.why}): the run's last spans and metrics were not sent`);
        return;
      }
      await sdk.shutdown().catch((error: unknown) => warn(`the run's last spans and metrics were not sent (${reasonOf(error)})`));
    },
  };
}

/**
 * The batch span processor's queue where the variables set none. The SDK's 2,048 spans, 512 to an
 * export, dropped a third of the spans of a run with nothing to wait for (60,000 spans in 3 s: the
 * queue filled while one export was under way); 16,384 and 1,024 kept all of 300,000 spans in 17 s,
 * and shut down in 16 exports at most (the OTLP exporter refuses a 31st at once).
 */
const SPAN_QUEUE = Object.freeze({ OTEL_BSP_MAX_QUEUE_SIZE: '16384', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1024' });

/** Ours, unless the variables name one: the SDK's environment detector reads them, and a name given here would win over them. */
function serviceName(env: NodeJS.ProcessEnv): string | undefined {
  if ((env.OTEL_SERVICE_NAME ?? '') !== '') return undefined;
  if (/(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '')) return undefined;
  return OTEL_SERVICE_NAME;
}

/** The OTLP protocols the SDK's exporters speak. */
const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'];

/**
 * The variables a typo in would leave the run sending nothing, unseen: the SDK only warns of them
 * on its diagnostic log, which is off. Said in one line before the run, as a bad flag is.
 */
function checkOtelEnv(env: NodeJS.ProcessEnv): void {
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL']) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '' && !PROTOCOLS.includes(value)) {
      throw new UsageError(`--otel: ${name} must be one of ${PROTOCOLS.join(', ')}; got "${value}"`);
    }
  }
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT']) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '' && !/^https?:\/\/[^/]/.test(value)) {
      // Not echoed: an endpoint may carry a token.
      throw new UsageError(`--otel: ${name} must be an http:// or https:// URL`);
    }
  }
}
