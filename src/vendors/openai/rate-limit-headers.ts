import type { LimitKind } from '../../provider/rate-limit-signals.ts';
import { formatDuration, parseDuration } from '../../validation/duration.ts';
import {
  first,
  parseCount,
  pushStatus,
  VENDOR_WINDOW_MS,
  type HeaderFields,
  type HeaderFormat,
  type LimitStatus,
} from '../header-fields.ts';

/**
 * OpenAI's rate-limit headers: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, per minute,
 * resets as Go-style durations (`20ms`, `1s`, `6m0s`, `1h2m3.5s`). Azure OpenAI sends the same.
 */
export const OPENAI_HEADERS: HeaderFormat = {
  /** OpenAI's headers count requests and tokens only. */
  kinds: Object.freeze(['requests', 'tokens'] as LimitKind[]),
  parse: parseOpenAi,
  write(headers, status) {
    for (const { kind, limit, remaining, resetMs } of status) {
      headers[`x-ratelimit-limit-${kind}`] = String(limit);
      headers[`x-ratelimit-remaining-${kind}`] = String(remaining);
      headers[`x-ratelimit-reset-${kind}`] = formatDuration(Math.ceil(resetMs));
    }
  },
};

function parseOpenAi(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  for (const kind of ['requests', 'tokens'] as const) {
    const reset = first(context, `x-ratelimit-reset-${kind}`);
    // A Go duration (`20ms`, `6m0s`); a signed one is not a reset time.
    const resetMs = reset === undefined || /^[-+]/.test(reset) ? undefined : parseDuration(reset);
    pushStatus(limits, {
      kind,
      limit: parseCount(first(context, `x-ratelimit-limit-${kind}`)),
      remaining: parseCount(first(context, `x-ratelimit-remaining-${kind}`)),
      resetMs: resetMs === undefined ? undefined : context.capMs(resetMs),
      windowMs: VENDOR_WINDOW_MS,
    });
  }
  return limits;
}
