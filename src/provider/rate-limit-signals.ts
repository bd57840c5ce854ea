/**
 * What a provider's answers say of its limits — how long to wait, each limit's quota and what is
 * left of it — as the provider reads them from its own headers (or error bodies): the gate's header
 * sync and adaptive rate ask the provider, which knows its vendor's dialect.
 */

/**
 * What a limit counts: requests, or LLM tokens — all, input only, output only. The words are the
 * providers' own (`…-tokens`, `…-input-tokens`, an IETF policy's `qu`).
 */
export type LimitKind = 'requests' | 'tokens' | 'input-tokens' | 'output-tokens';

export const LIMIT_KINDS: readonly LimitKind[] = Object.freeze(['requests', 'tokens', 'input-tokens', 'output-tokens'] as LimitKind[]);

/** One limit as the provider states it; a field it did not state, or stated wrong, is absent. */
export interface LimitStatus {
  /** Which limit it is: requests, tokens, input or output tokens. */
  kind: LimitKind;
  /** The quota: how many the window admits. */
  limit?: number;
  /** How many the window still admits. */
  remaining?: number;
  /** Ms until the window resets / the limit is full again, capped at the longest wait believed. */
  resetMs?: number;
  /** The IETF policy the figures belong to (`"default"` in `RateLimit: "default";r=50`); other styles have none. */
  policy?: string;
  /**
   * The window `limit` counts over, in ms (a minute for per-minute limits, an IETF policy's `w`);
   * absent when the provider does not say. `limit / windowMs` is the provider's stated rate.
   */
  windowMs?: number;
}

/** What one answer (or failure) says of the provider's limits: how long to wait, and every limit it states. */
export interface RateLimitSignals {
  /** How long the provider asked the client to wait, in ms, capped; absent when it did not ask (readably). */
  retryAfterMs?: number;
  /** Every limit stated; several may share a kind (IETF policies, a proxy adding its own): the most restrictive is the caller's pick. */
  limits: LimitStatus[];
}
