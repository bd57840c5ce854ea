import { LIMIT_KINDS } from '../../provider/rate-limit-signals.ts';
import {
  first,
  parseCount,
  parseRfc3339,
  pushStatus,
  VENDOR_WINDOW_MS,
  type HeaderFields,
  type HeaderFormat,
  type LimitStatus,
} from '../header-fields.ts';

/**
 * Anthropic's rate-limit headers:
 * `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`, per
 * minute, resets as RFC 3339 timestamps.
 */
export const ANTHROPIC_HEADERS: HeaderFormat = {
  kinds: LIMIT_KINDS,
  parse: parseAnthropic,
  write(headers, status, nowMs) {
    for (const { kind, limit, remaining, resetMs } of status) {
      headers[`anthropic-ratelimit-${kind}-limit`] = String(limit);
      headers[`anthropic-ratelimit-${kind}-remaining`] = String(remaining);
      // Rounded up on the absolute instant, so a fractional `nowMs` cannot shorten the reset.
      headers[`anthropic-ratelimit-${kind}-reset`] = new Date(Math.ceil(nowMs + resetMs)).toISOString();
    }
  },
};

function parseAnthropic(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  for (const kind of LIMIT_KINDS) {
    const resetAtMs = parseRfc3339(first(context, `anthropic-ratelimit-${kind}-reset`));
    pushStatus(limits, {
      kind,
      limit: parseCount(first(context, `anthropic-ratelimit-${kind}-limit`)),
      remaining: parseCount(first(context, `anthropic-ratelimit-${kind}-remaining`)),
      resetMs: resetAtMs === undefined ? undefined : context.capMs(Math.max(0, resetAtMs - context.nowMs)),
      windowMs: VENDOR_WINDOW_MS,
    });
  }
  return limits;
}
