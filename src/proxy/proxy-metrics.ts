import type { Counter, Registry } from 'prom-client';
import { loadOptional } from '../optional-package.ts';

/** A member's state as the gauge reads it: its circuit (closed 0, half-open 1, open 2). */
export type MemberStates = () => readonly { readonly member: string; readonly state: 'closed' | 'half-open' | 'open' }[];

const STATE_VALUE = { closed: 0, 'half-open': 1, open: 2 } as const;

/**
 * The gateway's Prometheus metrics, in a registry of its own. Keys are labelled by the name the
 * config gives them (`key="team-a"`), never by the key; a request whose key is unknown counts
 * under `key=""`.
 */
export class ProxyMetrics {
  readonly #registry: Registry;
  readonly #requests: Counter<'key' | 'status'>;
  readonly #refusals: Counter<'key' | 'reason'>;
  readonly #spend: Counter<'key'>;
  readonly #tokens: Counter<'key' | 'direction'>;
  readonly #calls: Counter<'member' | 'outcome'>;
  readonly #rateLimited: Counter<'member'>;

  private constructor(prom: typeof import('prom-client'), states: MemberStates) {
    this.#registry = new prom.Registry();
    const registers = [this.#registry];
    this.#requests = new prom.Counter({
      name: 'proxy_requests_total',
      help: 'Requests answered, by key name and HTTP status (499: the client went away first).',
      labelNames: ['key', 'status'],
      registers,
    });
    this.#refusals = new prom.Counter({
      name: 'proxy_refusals_total',
      help: 'Requests refused before any upstream call, by key name and reason: budget, limit, model, key, body, wait.',
      labelNames: ['key', 'reason'],
      registers,
    });
    this.#spend = new prom.Counter({
      name: 'proxy_spend_usd_total',
      help: 'Money spent upstream, USD, by key name: each answer at its usage and its member’s price.',
      labelNames: ['key'],
      registers,
    });
    this.#tokens = new prom.Counter({
      name: 'proxy_tokens_total',
      help: 'Tokens the upstream reported, by key name and direction (input, output).',
      labelNames: ['key', 'direction'],
      registers,
    });
    this.#calls = new prom.Counter({
      name: 'proxy_member_calls_total',
      help: 'Upstream calls by member and outcome: ok, rate_limited (429), failed (5xx or no answer), refused (another 4xx).',
      labelNames: ['member', 'outcome'],
      registers,
    });
    this.#rateLimited = new prom.Counter({
      name: 'proxy_member_429_total',
      help: 'Upstream 429s by member.',
      labelNames: ['member'],
      registers,
    });
    new prom.Gauge({
      name: 'proxy_member_state',
      help: "Each member's circuit: 0 closed (taking calls), 1 half-open (probing), 2 open (left out).",
      labelNames: ['member'],
      registers,
      collect() {
        for (const { member, state } of states()) this.set({ member }, STATE_VALUE[state]);
      },
    });
  }

  /** Loads prom-client: the proxy's `/metrics` needs it. */
  static async create(states: MemberStates): Promise<ProxyMetrics> {
    return new ProxyMetrics(await loadOptional('prom-client', "the proxy's /metrics", () => import('prom-client')), states);
  }

  /** Each label set's counter, found once: prom-client hashes the labels on every `inc` otherwise. */
  readonly #children = new Map<string, { inc(value?: number): void }>();

  #child(counter: Counter<string>, name: string, ...values: (string | number)[]): { inc(value?: number): void } {
    const id = `${name}\n${values.join('\n')}`;
    let child = this.#children.get(id);
    if (child === undefined) {
      child = counter.labels(...values.map(String));
      this.#children.set(id, child);
    }
    return child;
  }

  request(key: string, status: number): void {
    this.#child(this.#requests, 'r', key, status).inc();
  }

  refusal(key: string, reason: string): void {
    this.#refusals.inc({ key, reason });
  }

  spent(key: string, usd: number, inputTokens: number, outputTokens: number): void {
    if (usd > 0) this.#child(this.#spend, 's', key).inc(usd);
    if (inputTokens > 0) this.#child(this.#tokens, 'i', key, 'input').inc(inputTokens);
    if (outputTokens > 0) this.#child(this.#tokens, 'o', key, 'output').inc(outputTokens);
  }

  call(member: string, outcome: 'ok' | 'rate_limited' | 'failed' | 'refused'): void {
    this.#child(this.#calls, 'c', member, outcome).inc();
    if (outcome === 'rate_limited') this.#rateLimited.inc({ member });
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  text(): Promise<string> {
    return this.#registry.metrics();
  }
}
