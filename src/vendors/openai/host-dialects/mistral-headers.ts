import type { LimitKind } from '../../../provider/rate-limit-signals.ts';
import { first, parseCount, pushStatus, type HeaderFields, type HeaderFormat, type LimitStatus } from '../../header-fields.ts';
import { MINUTE_MS, MONTH_MS, overWindow } from './window-scale.ts';

/**
 * Mistral's rate-limit headers: tokens ("by size"), over a minute and over a **month** —
 * `x-ratelimit-bysize-…` spelled `x-ratelimitbysize-{limit,remaining}-{minute,month}` — with no
 * reset time. A month reads as 30 days. Written by `serve --headers=mistral` from its per-minute
 * token quota (`--tpm`): the month's tokens at the minute's rate (what remains, what may be sent now).
 */
export const MISTRAL_HEADERS: HeaderFormat = {
  kinds: Object.freeze(['tokens'] as LimitKind[]),
  parse: parseMistral,
  write(headers, status) {
    for (const { kind, limit, remaining } of status) {
      if (kind !== 'tokens') continue;
      headers['x-ratelimitbysize-limit-minute'] = String(limit);
      headers['x-ratelimitbysize-remaining-minute'] = String(remaining);
      headers['x-ratelimitbysize-limit-month'] = String(overWindow(limit, MONTH_MS));
      headers['x-ratelimitbysize-remaining-month'] = String(remaining);
    }
  },
};

const MISTRAL_WINDOWS = [
  ['minute', MINUTE_MS],
  ['month', MONTH_MS],
] as const;

function parseMistral(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  for (const [window, windowMs] of MISTRAL_WINDOWS) {
    pushStatus(limits, {
      kind: 'tokens',
      limit: parseCount(first(context, `x-ratelimitbysize-limit-${window}`)),
      remaining: parseCount(first(context, `x-ratelimitbysize-remaining-${window}`)),
      resetMs: undefined,
      windowMs,
    });
  }
  return limits;
}
