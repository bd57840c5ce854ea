import type { LimitKind } from '../../../provider/rate-limit-signals.ts';
import { formatDuration, parseDuration } from '../../../validation/duration.ts';
import { first, parseCount, pushStatus, type HeaderFields, type HeaderFormat, type LimitStatus } from '../../header-fields.ts';
import { DAY_MS, MINUTE_MS, overWindow } from './window-scale.ts';

/**
 * Groq's rate-limit headers: OpenAI's names, `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
 * but the requests counted over a **day** (its RPD) and the tokens over a minute (its TPM); resets
 * as Go durations (`2m59.56s`, `7.66s`, `120ms`). Written by `serve --headers=groq` from its
 * per-minute quota: the day's requests at the minute's rate (what remains, what may be sent now).
 */
export const GROQ_HEADERS: HeaderFormat = {
  kinds: Object.freeze(['requests', 'tokens'] as LimitKind[]),
  parse: parseGroq,
  write(headers, status) {
    for (const { kind, limit, remaining, resetMs } of status) {
      if (kind !== 'requests' && kind !== 'tokens') continue;
      headers[`x-ratelimit-limit-${kind}`] = String(kind === 'requests' ? overWindow(limit, DAY_MS) : limit);
      headers[`x-ratelimit-remaining-${kind}`] = String(remaining);
      headers[`x-ratelimit-reset-${kind}`] = formatDuration(Math.ceil(resetMs));
    }
  },
};

/** Each kind's window: the day for requests, the minute for tokens. */
const GROQ_WINDOW_MS = { requests: DAY_MS, tokens: MINUTE_MS } as const;

function parseGroq(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  for (const kind of ['requests', 'tokens'] as const) {
    const reset = first(context, `x-ratelimit-reset-${kind}`);
    // A Go duration; a signed one is no reset time.
    const resetMs = reset === undefined || /^[-+]/.test(reset) ? undefined : parseDuration(reset);
    pushStatus(limits, {
      kind,
      limit: parseCount(first(context, `x-ratelimit-limit-${kind}`)),
      remaining: parseCount(first(context, `x-ratelimit-remaining-${kind}`)),
      resetMs: resetMs === undefined ? undefined : context.capMs(resetMs),
      windowMs: GROQ_WINDOW_MS[kind],
    });
  }
  return limits;
}
