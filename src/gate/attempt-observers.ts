import type { Logger } from 'pino';
import type { AdaptiveRate } from '../quota/adaptive-rate.ts';
import type { ProviderLimits } from '../quota/provider-limits.ts';
import { retryAfterHint } from '../retry/retry.ts';
import type { RateLimitSignals } from '../provider/rate-limit-signals.ts';
import type { Attempt, AttemptOutcome } from './attempt.ts';

/** Something that acts on how an attempt ended: settles the grant, tells the breaker, adapts the rate. */
export type AttemptObserver = (attempt: Attempt) => void;

const NOTHING_USED = { inputTokens: 0, outputTokens: 0 };

/**
 * The grant squares its token estimate with what the call used, as the provider's limits count it:
 * all of it back when nothing was used; the input tokens its prompt cache served left out when its
 * limits do not count them (Anthropic's, for most models).
 */
export function settleGrant(countsCacheReads: boolean): AttemptObserver {
  return (attempt) => {
    const { usage } = attempt;
    if (attempt.response === undefined) attempt.grant?.settle(NOTHING_USED);
    else if (usage !== undefined)
      attempt.grant?.settle(countsCacheReads ? usage : { ...usage, inputTokens: usage.inputTokens - (usage.cacheReadTokens ?? 0) });
  };
}

/**
 * The budget keeps what the attempt was billed: nothing for one not sent (or whose connection
 * failed before its request was written), its usage when the provider said — and, apart, all of
 * its worst case when its fate is unknown (a timeout, a connection broken mid-request): it may
 * have been billed in full, and the budget must never be overspent.
 */
export const settleBudget: AttemptObserver = (attempt) => {
  attempt.hold?.settle(attempt.costNanoUsd, attempt.unknownNanoUsd);
};

/** The outcomes that say the provider is unwell: what the breaker counts. */
const UNHEALTHY: ReadonlySet<AttemptOutcome> = new Set(['server-error', 'timeout', 'network-error', 'error']);

/**
 * Only the provider's own ill health counts against it: not a 429 (the limits' business), not a
 * request it refused or an answer it botched (it is up), not a wait that ran out or was aborted
 * before the call.
 */
export const tellBreaker: AttemptObserver = (attempt) => {
  const { permit, outcome } = attempt;
  if (permit === undefined) return;
  if (outcome === 'ok') permit.success();
  else if (attempt.called && UNHEALTHY.has(outcome)) permit.failure();
  else permit.release();
};

/**
 * The adaptive rate hears of 429s and successes — and, when the provider states its request limit
 * in its headers, adopts that instead of searching for it. From a provider that states no limits
 * and never answers 429 (`readsLatency`), it hears each success's latency too: the only sign there
 * that calls queue.
 */
export function adaptRate(adaptive: AdaptiveRate, readsLatency = false): AttemptObserver {
  return (attempt) => {
    const stated = statedRequestRate(attempt.rateLimitInfo);
    if (stated !== undefined) adaptive.onStatedLimit(stated);
    if (attempt.outcome === 'ok') {
      if (readsLatency && attempt.called) adaptive.onLatency({ latencyMs: attempt.latencyMs, sentAtMs: attempt.sentAtMs });
      adaptive.onSuccess();
    } else if (attempt.outcome === 'rate-limited') {
      adaptive.onRateLimited({ retryAfterMs: retryAfterHint(attempt.error), sentAtMs: attempt.sentAtMs });
    }
  };
}

/**
 * Lowers each limit to what the provider says remains of it, and the request rate to the limit it
 * states (a bucket refilling faster than the provider's would only fill with 429s); never raises
 * either. A limit over a window longer than {@link PACE_WINDOW_MAX_MS} (a day's requests, a
 * month's tokens) caps what is left, not the pace: its remaining is synced, its rate is not taken —
 * 14,400 requests a day allow 400 in the next minute. With an adaptive rate, which runs first, the
 * stated rate is the adaptive rate's already.
 */
export function syncHeaders(limits: ProviderLimits, logger: Logger): AttemptObserver {
  return (attempt) => {
    for (const status of attempt.rateLimitInfo?.limits ?? []) {
      if (status.remaining === undefined) continue;
      limits.lowerTo(status.kind, status.remaining);
      logger.debug({ kind: status.kind, remaining: status.remaining }, 'limits synced to headers');
    }
    const stated = statedRequestRate(attempt.rateLimitInfo);
    if (stated !== undefined && stated < limits.rate) {
      limits.setRate(stated);
      logger.debug({ kind: 'requests', rate: stated }, 'rate synced to headers');
    }
  };
}

/** The longest window whose limit is a pace: a minute, the longest the vendors state a rate over. */
export const PACE_WINDOW_MAX_MS = 60_000;

/**
 * The request limit the headers state, in requests per second (their limit over their window; the
 * least when they state several), of the windows that set a pace; undefined when they state none.
 */
function statedRequestRate(info: RateLimitSignals | undefined): number | undefined {
  let rate: number | undefined;
  for (const status of info?.limits ?? []) {
    if (status.kind !== 'requests' || status.windowMs === undefined || status.windowMs > PACE_WINDOW_MAX_MS) continue;
    if (!(status.limit! > 0)) continue;
    const perSecond = (status.limit! * 1000) / status.windowMs;
    rate = rate === undefined ? perSecond : Math.min(rate, perSecond);
  }
  return rate;
}

export function logFailure(logger: Logger): AttemptObserver {
  return (attempt) => {
    if (attempt.outcome === 'ok') return;
    const { articleId, task, attempt: number, outcome, error } = attempt;
    logger.debug({ articleId, task, attempt: number, outcome, err: error }, 'attempt failed');
  };
}
