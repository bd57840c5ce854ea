import type { LimitKind } from '../../../provider/rate-limit-signals.ts';
import {
  first,
  parseCount,
  parseDecimal,
  pushStatus,
  type HeaderFields,
  type HeaderFormat,
  type LimitStatus,
} from '../../header-fields.ts';
import { MINUTE_MS, SECOND_MS } from './window-scale.ts';

/**
 * Together's rate-limit headers, each a figure per **second**: `x-ratelimit-limit`,
 * `x-ratelimit-remaining` and `x-ratelimit-reset` (seconds, a decimal) for requests;
 * `x-tokenlimit-limit` and `x-tokenlimit-remaining` for tokens. Its limits are dynamic — they
 * follow your recent traffic — so the figures of each answer are the news. Written by
 * `serve --headers=together` from its per-minute quota: a second's worth.
 */
export const TOGETHER_HEADERS: HeaderFormat = {
  kinds: Object.freeze(['requests', 'tokens'] as LimitKind[]),
  parse: parseTogether,
  write(headers, status) {
    for (const { kind, limit, remaining, resetMs } of status) {
      // A second's worth of a per-minute limit, in thousandths: never more than the minute allows.
      const perSecond = String(Math.floor((limit * SECOND_MS * 1000) / MINUTE_MS) / 1000);
      if (kind === 'requests') {
        headers['x-ratelimit-limit'] = perSecond;
        headers['x-ratelimit-remaining'] = String(remaining);
        headers['x-ratelimit-reset'] = String(Math.ceil(resetMs) / 1000);
      } else if (kind === 'tokens') {
        headers['x-tokenlimit-limit'] = perSecond;
        headers['x-tokenlimit-remaining'] = String(remaining);
      }
    }
  },
};

function parseTogether(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  const resetSeconds = parseDecimal(first(context, 'x-ratelimit-reset'));
  pushStatus(limits, {
    kind: 'requests',
    // A dynamic rate need not be whole: a decimal, as Together may state a fraction of a request a second.
    limit: parseDecimal(first(context, 'x-ratelimit-limit')),
    remaining: parseCount(first(context, 'x-ratelimit-remaining')),
    resetMs: resetSeconds === undefined ? undefined : context.capMs(resetSeconds * 1000),
    windowMs: SECOND_MS,
  });
  pushStatus(limits, {
    kind: 'tokens',
    limit: parseDecimal(first(context, 'x-tokenlimit-limit')),
    remaining: parseCount(first(context, 'x-tokenlimit-remaining')),
    resetMs: undefined,
    windowMs: SECOND_MS,
  });
  return limits;
}
