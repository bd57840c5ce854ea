import type { Clock } from '../clock.ts';
import { KeyedLimiter, type RateLimitDecision } from '../limiter/keyed-limiter.ts';
import { writeRateLimitHeaders, type LimitSnapshot } from '../vendors/header-fields.ts';
import { Refusal, type Exchange, type LimitContext } from '../vendors/serve/exchange.ts';
import type { ChatApi } from '../vendors/serve/chat-api.ts';

/** The whole requests a per-minute limit states: rounded down, so a client taking it as its rate is never over. */
const PER_MINUTE_EPSILON = 1e-9;

/**
 * What each API key may take from a server: a request per call (a `KeyedLimiter`, so two keys never
 * share one) and, with a token limit, each answer's tokens — and the vendor's rate-limit headers
 * that say how each stands.
 */
export class KeyQuotas {
  readonly requests: KeyedLimiter;
  readonly tokens: KeyedLimiter | undefined;

  constructor(options: { rate: number; burst: number; tokensPerMinute: number | undefined; clock: Clock; maxKeys: number | undefined }) {
    const { rate, burst, tokensPerMinute, clock, maxKeys } = options;
    this.requests = new KeyedLimiter({ rate, burst, clock, maxKeys });
    this.tokens =
      tokensPerMinute === undefined ? undefined : new KeyedLimiter({ rate: tokensPerMinute / 60, burst: tokensPerMinute, clock, maxKeys });
  }

  /**
   * Takes a chat request from the exchange key's quota: as {@link admit} does, or — for an API that
   * queues what is over its quota (a self-hosted server: no 429) — once the quota has room.
   */
  async admitChat(exchange: Exchange): Promise<void> {
    if (exchange.api.overQuota === 'queue') await this.requests.acquire(exchange.key!);
    else this.admit(exchange.key!);
  }

  /** Takes a request from `key`'s quota, or throws the 429's {@link Refusal}. */
  admit(key: string): void {
    const admitted = this.requests.take(key);
    if (admitted.allowed) return;
    const message = `Rate limit reached on requests per min (RPM): Limit ${this.requestsPerMinute()}, Remaining 0, Requested 1. Please try again in ${Math.ceil(admitted.retryAfterMs)}ms.`;
    throw new Refusal({ kind: 'rate-limited', limit: 'requests', message }, { requests: admitted, retryAfterMs: admitted.retryAfterMs });
  }

  /** With a token limit, takes the answer's prompt and output tokens from the key's, or 429 — unless the API queues instead (`overQuota`). */
  chargeTokens(key: string, needed: number, overQuota: ChatApi['overQuota'] = 'refuse'): RateLimitDecision | undefined {
    const tokens = this.tokens?.take(key, needed);
    if (tokens === undefined || tokens.allowed || overQuota === 'queue') return tokens;
    const message =
      tokens.retryAfterMs === Infinity
        ? `Request too large on tokens per min (TPM): Limit ${tokens.limit}, Requested ${needed}. The input or output tokens must be reduced in order to run successfully.`
        : `Rate limit reached on tokens per min (TPM): Limit ${tokens.limit}, Remaining ${tokens.remaining}, Requested ${needed}. Please try again in ${Math.ceil(tokens.retryAfterMs)}ms.`;
    throw new Refusal({ kind: 'rate-limited', limit: 'tokens', message }, { tokens, retryAfterMs: tokens.retryAfterMs });
  }

  /** The request limit as the vendors state theirs: whole requests per minute. */
  requestsPerMinute(): number {
    return Math.floor(this.requests.rate * 60 + PER_MINUTE_EPSILON);
  }

  /**
   * The vendor's rate-limit headers for the exchange's key, as they stand now unless a decision is
   * given: the limit per minute, what may be sent now before a 429 (the vendors' "remaining"), and
   * the time until that is back at its most. A key without a request limit states none.
   */
  headers(exchange: Exchange, limits: LimitContext): Record<string, string> {
    const key = exchange.key!;
    const status: LimitSnapshot[] = [];
    if (this.requests.rate !== Infinity) {
      const decision = limits.requests ?? this.requests.take(key, 0);
      status.push({ kind: 'requests', limit: this.requestsPerMinute(), remaining: decision.remaining, resetMs: decision.resetMs });
    }
    if (this.tokens !== undefined) {
      const decision = limits.tokens ?? this.tokens.take(key, 0);
      status.push({ kind: 'tokens', limit: decision.limit, remaining: decision.remaining, resetMs: decision.resetMs });
    }
    const retryAfterMs = limits.retryAfterMs !== undefined && Number.isFinite(limits.retryAfterMs) ? limits.retryAfterMs : undefined;
    const headers = writeRateLimitHeaders(exchange.api.headers, status, retryAfterMs, Date.now());
    if (!exchange.api.retryAfterMs) delete headers['retry-after-ms'];
    return headers;
  }
}
