import type { RateLimitDecision } from '../limiter/keyed-limiter.ts';

/**
 * The IETF RateLimit header drafts a server can speak (draft-ietf-httpapi-ratelimit-headers):
 *
 * - `draft-8`: `RateLimit-Policy: "default";q=60;w=60` and `RateLimit: "default";r=59;t=1` — a
 *   named policy with its quota `q` and window `w` (seconds), and what is left of it `r` and the
 *   seconds until it is whole again `t`;
 * - `draft-7`: `RateLimit-Policy: 60;w=60` and `RateLimit: limit=60, remaining=59, reset=1`;
 * - `draft-6`: `RateLimit-Policy: 60;w=60` and three fields, `RateLimit-Limit: 60`,
 *   `RateLimit-Remaining: 59`, `RateLimit-Reset: 1` — what express-rate-limit's
 *   `standardHeaders: true` sends, so clients written against it read the same fields here.
 */
export type RateLimitHeaderDraft = 'draft-8' | 'draft-7' | 'draft-6';

export const RATE_LIMIT_HEADER_DRAFTS: readonly RateLimitHeaderDraft[] = Object.freeze([
  'draft-8',
  'draft-7',
  'draft-6',
] as RateLimitHeaderDraft[]);

/** One draft-8 policy as `RateLimit-Policy` states it. */
export interface IetfPolicy {
  /** The policy's name, written as a quoted string. */
  readonly name: string;
  /** The quota `q`: whole units the window admits. */
  readonly quota: number;
  /** What the quota counts (`qu`), when not requests. @default none (requests, unsaid) */
  readonly unit?: string | undefined;
  /** The window `w`, in whole seconds. @default none (unsaid) */
  readonly windowSeconds?: number | undefined;
}

/**
 * A draft-8 `RateLimit-Policy` member: `"name";q=60;qu="tokens";w=60`. The one writer of the IETF
 * fields, for the middleware's policy and for a simulated provider speaking the IETF style.
 */
export function ietfPolicyMember(policy: IetfPolicy): string {
  const unit = policy.unit === undefined ? '' : `;qu="${policy.unit}"`;
  const window = policy.windowSeconds === undefined ? '' : `;w=${policy.windowSeconds}`;
  return `"${policy.name}";q=${policy.quota}${unit}${window}`;
}

/** A draft-8 `RateLimit` member: what is left `r` and the seconds until it is whole again `t`. */
export function ietfStatusMember(name: string, remaining: number, resetSeconds: number): string {
  return `"${name}";r=${remaining};t=${resetSeconds}`;
}

export interface LimitHeaderOptions {
  /** Which RateLimit draft to write, or `false` for none. */
  readonly draft: RateLimitHeaderDraft | false;
  /** Also `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix epoch seconds, as GitHub sends them). */
  readonly legacy: boolean;
  /** The draft-8 policy name. */
  readonly policyName: string;
  /** Tokens per second. */
  readonly rate: number;
  /** The quota: the bucket's capacity. */
  readonly burst: number;
}

/**
 * The RateLimit headers a server sends with every response, for one policy. A token bucket of
 * rate r and burst b is written as a quota of b (whole tokens) over the window it takes to refill
 * from empty, b / r seconds rounded up (left out when the bucket never refills or refills at
 * once); `t` is the seconds until the bucket is full again, rounded up, so waiting as told always
 * suffices. What never changes is computed once; the writer takes the decision and the time.
 */
export function limitHeaderWriter(
  options: LimitHeaderOptions,
): (decision: RateLimitDecision, nowEpochMs: number) => Record<string, string> {
  const { draft, legacy, policyName, rate, burst } = options;
  const quota = Math.floor(burst);
  const refillSeconds = burst / rate;
  const windowSeconds = refillSeconds > 0 && Number.isFinite(refillSeconds) ? Math.ceil(refillSeconds) : undefined;
  const policy =
    draft === 'draft-8'
      ? ietfPolicyMember({ name: policyName, quota, windowSeconds })
      : `${quota}${windowSeconds === undefined ? '' : `;w=${windowSeconds}`}`;

  return (decision, nowEpochMs) => {
    const headers: Record<string, string> = {};
    const resetSeconds = Math.ceil(decision.resetMs / 1000);
    if (draft === 'draft-8') {
      headers['RateLimit-Policy'] = policy;
      headers.RateLimit = ietfStatusMember(policyName, decision.remaining, resetSeconds);
    } else if (draft === 'draft-7') {
      headers['RateLimit-Policy'] = policy;
      headers.RateLimit = `limit=${quota}, remaining=${decision.remaining}, reset=${resetSeconds}`;
    } else if (draft === 'draft-6') {
      headers['RateLimit-Policy'] = policy;
      headers['RateLimit-Limit'] = String(quota);
      headers['RateLimit-Remaining'] = String(decision.remaining);
      headers['RateLimit-Reset'] = String(resetSeconds);
    }
    if (legacy) {
      headers['X-RateLimit-Limit'] = String(quota);
      headers['X-RateLimit-Remaining'] = String(decision.remaining);
      headers['X-RateLimit-Reset'] = String(Math.ceil((nowEpochMs + decision.resetMs) / 1000));
    }
    return headers;
  };
}

/** `Retry-After` for a refusal: whole seconds, rounded up and at least 1; undefined when waiting cannot help. */
export function retryAfterSeconds(retryAfterMs: number): number | undefined {
  return Number.isFinite(retryAfterMs) ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : undefined;
}
