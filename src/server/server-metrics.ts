import { createHash } from 'node:crypto';
import type { Counter, Histogram, Registry } from 'prom-client';
import { loadOptional } from '../optional-package.ts';
import type { BatchCounts } from '../vendors/serve/dialect.ts';
import type { StreamOutcome } from './stream-writer.ts';

/** What the token gauge reads: the whole tokens a key has left, per limit. */
export type RemainingTokens = (key: string) => { readonly requests: number; readonly tokens?: number | undefined };

/** What the batch gauges read: each batch API's counts, by its vendor's name (the `api` label). */
export type BatchCensus = () => Readonly<Record<string, BatchCounts>>;

/** The label of requests whose key came after the first `maxKeyLabels`. */
export const OTHER_KEYS_LABEL = 'other';

/**
 * A key as logs and metrics show it: never the key itself (a scrape or a log line must not leak
 * it), a short SHA-256 fingerprint that tells keys apart.
 */
export function keyFingerprint(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
}

/**
 * The server's Prometheus metrics, in a registry of its own: requests by route, status and key,
 * request latency by route, and the tokens each key has left. Keys are labelled by fingerprint, the
 * first `maxKeyLabels` of them; later keys share the label `other`, so a flood of keys cannot grow
 * the scrape without bound.
 */
export class ServerMetrics {
  readonly #registry: Registry;
  readonly #requests: Counter<'route' | 'status' | 'key'>;
  readonly #latency: Histogram<'route'>;
  readonly #streams: Counter<'route' | 'outcome'>;
  /** Key → its label, for the keys that have one of their own. */
  readonly #labels = new Map<string, string>();
  readonly #maxKeyLabels: number;

  private constructor(
    prom: typeof import('prom-client'),
    maxKeyLabels: number,
    remaining: RemainingTokens,
    census: BatchCensus,
    batchApis: readonly { readonly label: string; readonly name: string }[],
  ) {
    this.#maxKeyLabels = maxKeyLabels;
    this.#registry = new prom.Registry();
    const registers = [this.#registry];
    this.#requests = new prom.Counter({
      name: 'serve_requests_total',
      help: 'Requests answered, by route, HTTP status (499: the client went away first) and API key fingerprint.',
      labelNames: ['route', 'status', 'key'],
      registers,
    });
    this.#latency = new prom.Histogram({
      name: 'serve_request_duration_seconds',
      help: 'Time from a request to its response, simulated latency included, by route.',
      labelNames: ['route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#streams = new prom.Counter({
      name: 'serve_streams_total',
      help: 'Streamed answers by route and how they ended: completed, client_closed (the client went away mid-stream, ending the generation), dropped (the mid-stream fault cut the connection), failed (the provider went down mid-stream).',
      labelNames: ['route', 'outcome'],
      registers,
    });
    const labels = this.#labels;
    new prom.Gauge({
      name: 'serve_rate_limit_remaining',
      help: 'Whole tokens each API key has left now, per limit (requests; tokens with a tokens-per-minute limit).',
      labelNames: ['key', 'limit'],
      registers,
      collect() {
        this.reset();
        for (const [key, label] of labels) {
          const { requests, tokens } = remaining(key);
          this.set({ key: label, limit: 'requests' }, requests);
          if (tokens !== undefined) this.set({ key: label, limit: 'tokens' }, tokens);
        }
      },
    });
    const batchGauge = (name: string, help: string, part: keyof BatchCounts) =>
      new prom.Gauge({
        name,
        help,
        labelNames: ['api', 'status'],
        registers,
        collect() {
          this.reset();
          for (const [api, counts] of Object.entries(census())) {
            for (const [status, count] of Object.entries(counts[part])) this.set({ api, status }, count);
          }
        },
      });
    batchGauge(
      'serve_batches',
      `Batches kept, by API (${batchApis.map(({ label, name }) => `${label}: ${name}`).join('; ')}) and status in that API's words.`,
      'batches',
    );
    batchGauge(
      'serve_batch_rows',
      'Rows of the batches kept, by API and status: in_progress (not finished yet), completed/succeeded, failed/errored, cancelled/canceled, expired.',
      'rows',
    );
  }

  /** Loads prom-client on first use: a server that is never started never pays for it. */
  static async create(
    maxKeyLabels: number,
    remaining: RemainingTokens,
    census: BatchCensus,
    /** Each Batch API's `api` label and what its vendor calls it, for the help text. */
    batchApis: readonly { readonly label: string; readonly name: string }[],
  ): Promise<ServerMetrics> {
    return new ServerMetrics(
      await loadOptional('prom-client', "the server's /metrics", () => import('prom-client')),
      maxKeyLabels,
      remaining,
      census,
      batchApis,
    );
  }

  /** The label `key` is counted under (`''` for a request without one). */
  labelOf(key: string | undefined): string {
    if (key === undefined) return '';
    const known = this.#labels.get(key);
    if (known !== undefined) return known;
    if (this.#labels.size >= this.#maxKeyLabels) return OTHER_KEYS_LABEL;
    const label = keyFingerprint(key);
    this.#labels.set(key, label);
    return label;
  }

  /** Counts one request that ended with `status` after `seconds`. */
  observe(route: string, status: number, keyLabel: string, seconds: number): void {
    this.#requests.inc({ route, status, key: keyLabel });
    this.#latency.observe({ route }, seconds);
  }

  /** Counts one stream that ended as `outcome`. */
  streamEnded(route: string, outcome: StreamOutcome): void {
    this.#streams.inc({ route, outcome: outcome.replace('-', '_') });
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  /** The scrape, in Prometheus's text format. */
  text(): Promise<string> {
    return this.#registry.metrics();
  }
}
