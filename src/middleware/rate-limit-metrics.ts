import { createRequire } from 'node:module';
import type { Counter, Registry } from 'prom-client';
import type { RateLimitStore } from '../limiter/keyed-limiter.ts';
import type { MetricsRegistry } from './rate-limit-options.ts';
import { expected } from '../validation/checks.ts';

/** What became of a request that reached the limiter. */
export type RateLimitOutcome = 'allowed' | 'limited' | 'skipped' | 'store_error_allowed' | 'store_error_denied';

/** Counts since the middleware was made, and the keys its store holds now. */
export interface RateLimitFigures {
  /** Requests let through by the limit. */
  readonly allowed: number;
  /** Requests answered 429. */
  readonly limited: number;
  /** Requests `skip` let through unlimited. */
  readonly skipped: number;
  /** Requests the store failed on: let through (`onStoreError: "allow"`) or answered 503. */
  readonly storeErrors: number;
  /** Keys the store holds now; undefined when it cannot say (a shared store). */
  readonly keys: number | undefined;
}

const REQUESTS_METRIC = 'http_rate_limit_requests_total';
const KEYS_METRIC = 'http_rate_limit_keys';

/** Per registry, each policy's reading of its store's key count, for the one gauge they share. */
const keySources = new WeakMap<MetricsRegistry, Map<string, () => number | undefined>>();

/**
 * The middleware's counters, and, given a prom-client `Registry`, the same exported as
 * `http_rate_limit_requests_total{policy,outcome}` and `http_rate_limit_keys{policy}`. Several
 * middlewares may share a registry under different policy names. prom-client is loaded only when a
 * registry is passed (by then the caller has it loaded).
 */
export class RateLimitCounters {
  #allowed = 0;
  #limited = 0;
  #skipped = 0;
  #storeErrors = 0;
  readonly #store: RateLimitStore;
  readonly #policy: string;
  readonly #requests: Counter<'policy' | 'outcome'> | undefined;

  constructor(store: RateLimitStore, policy: string, registry: MetricsRegistry | undefined) {
    this.#store = store;
    this.#policy = policy;
    this.#requests = registry === undefined ? undefined : this.#register(registry);
  }

  count(outcome: RateLimitOutcome): void {
    if (outcome === 'allowed') this.#allowed++;
    else if (outcome === 'limited') this.#limited++;
    else if (outcome === 'skipped') this.#skipped++;
    else this.#storeErrors++;
    this.#requests?.inc({ policy: this.#policy, outcome });
  }

  get figures(): RateLimitFigures {
    return {
      allowed: this.#allowed,
      limited: this.#limited,
      skipped: this.#skipped,
      storeErrors: this.#storeErrors,
      keys: this.#store.size,
    };
  }

  #register(given: MetricsRegistry): Counter<'policy' | 'outcome'> {
    // The caller's registry is prom-client's own: it is only typed here by what this code calls.
    const registry = given as unknown as Registry;
    const prom = createRequire(import.meta.url)('prom-client') as typeof import('prom-client');
    let sources = keySources.get(given);
    if (sources === undefined) {
      sources = new Map();
      keySources.set(given, sources);
      const policies = sources;
      new prom.Gauge({
        name: KEYS_METRIC,
        help: 'Keys the rate limiter holds now: clients whose buckets are not full, per policy.',
        labelNames: ['policy'],
        registers: [registry],
        collect() {
          this.reset();
          for (const [policy, read] of policies) {
            const keys = read();
            if (keys !== undefined) this.set({ policy }, keys);
          }
        },
      });
      new prom.Counter({
        name: REQUESTS_METRIC,
        help: 'Requests seen by the rate limiter, per policy and outcome: allowed, limited (429), skipped, store_error_allowed, store_error_denied (503).',
        labelNames: ['policy', 'outcome'],
        registers: [registry],
      });
    }
    if (sources.has(this.#policy)) throw expected('policyName', 'unique among the rate limits sharing a registry', this.#policy);
    const store = this.#store;
    sources.set(this.#policy, () => store.size);
    return registry.getSingleMetric(REQUESTS_METRIC) as Counter<'policy' | 'outcome'>;
  }
}
