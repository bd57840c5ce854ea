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

/** What a style of OpenAI's header names counts each kind over, and how `serve` states a per-minute limit in it. */
export interface OpenAiStyle {
  /** The window each kind's figures count over. */
  readonly windowMs: Readonly<Record<'requests' | 'tokens', number>>;
  /** A per-minute `limit` of `kind` as the style states it. @default the limit as it is */
  readonly writeLimit?: ((kind: 'requests' | 'tokens', limit: number) => number) | undefined;
}

/**
 * Headers named as OpenAI names them — `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
 * resets as Go-style durations (`20ms`, `1s`, `6m0s`, `1h2m3.5s`) — counted over the windows of
 * `style`: OpenAI's own, or a host that speaks its names over other windows (Groq's day).
 */
export function openAiStyleHeaders(style: OpenAiStyle): HeaderFormat {
  const writeLimit = style.writeLimit ?? ((_kind, limit) => limit);
  return {
    kinds: Object.freeze(['requests', 'tokens'] as LimitKind[]),
    parse: (context) => parseOpenAiStyle(context, style),
    write(headers, status) {
      for (const { kind, limit, remaining, resetMs } of status) {
        if (kind !== 'requests' && kind !== 'tokens') continue;
        headers[`x-ratelimit-limit-${kind}`] = String(writeLimit(kind, limit));
        headers[`x-ratelimit-remaining-${kind}`] = String(remaining);
        headers[`x-ratelimit-reset-${kind}`] = formatDuration(Math.ceil(resetMs));
      }
    },
  };
}

/** OpenAI's rate-limit headers, per minute. Azure OpenAI sends the same. */
export const OPENAI_HEADERS: HeaderFormat = openAiStyleHeaders({ windowMs: { requests: VENDOR_WINDOW_MS, tokens: VENDOR_WINDOW_MS } });

function parseOpenAiStyle(context: HeaderFields, style: OpenAiStyle): LimitStatus[] {
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
      windowMs: style.windowMs[kind],
    });
  }
  return limits;
}
