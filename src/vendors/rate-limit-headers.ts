import type { LimitKind, RateLimitSignals } from '../provider/rate-limit-signals.ts';
import { RETRY_DEFAULTS } from '../retry/retry.ts';
import { checkDurationMs, checkInteger, checkNumber, checkObject, checkOneOf, expected } from '../validation/checks.ts';
import { readRateLimits, writeRateLimitHeaders, type HeaderFormat, type HeaderSource, type LimitSnapshot } from './header-fields.ts';
import { IETF_HEADERS } from './ietf-rate-limit-headers.ts';
import { VENDORS, type HttpProviderType } from './registry.ts';

export type { HeaderSource, LimitSnapshot, LimitStatus } from './header-fields.ts';

/**
 * Rate-limit headers as LLM providers send them, read ({@link parseRateLimitHeaders}) and written
 * ({@link formatRateLimitHeaders}):
 *
 * - `retry-after` (delta-seconds or an HTTP-date) and `retry-after-ms`, on 429s and some 503s;
 * - OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go-style durations
 *   (`20ms`, `1s`, `6m0s`, `1h2m3.5s`);
 * - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
 *   resets as RFC 3339 timestamps;
 * - the IETF draft (draft-ietf-httpapi-ratelimit-headers): `RateLimit: "default";r=50;t=30` with
 *   `RateLimit-Policy: "default";q=100;w=60`, and the older drafts' `RateLimit-Limit`,
 *   `RateLimit-Remaining`, `RateLimit-Reset` (seconds) and `RateLimit: limit=100, remaining=50, reset=30`.
 *
 * Headers come from the other side of a network, so parsing trusts nothing: it never throws on a
 * header value, drops what it cannot read (a malformed field, not the whole set), never yields NaN
 * or a negative number, and caps every duration at `maxRetryAfterMs` — a server asking for an hour
 * gets the cap, not an hour.
 */

/** A rate-limit header format: each vendor's (see the registry), or the IETF draft's. */
export type HeaderStyle = HttpProviderType | 'ietf';

/** Each format by its style: the vendors' in the registry's order, then the IETF draft's. */
const HEADER_FORMATS: Readonly<Record<HeaderStyle, HeaderFormat>> = Object.freeze({
  ...(Object.fromEntries(Object.entries(VENDORS).map(([type, vendor]) => [type, vendor.headers])) as Record<
    HttpProviderType,
    HeaderFormat
  >),
  ietf: IETF_HEADERS,
});

export const HEADER_STYLES: readonly HeaderStyle[] = Object.freeze(Object.keys(HEADER_FORMATS) as HeaderStyle[]);

/** The formats read, each once (vendors may share one: Azure OpenAI's is OpenAI's). */
const READ_FORMATS: readonly HeaderFormat[] = [...new Set(Object.values(HEADER_FORMATS))];

export const isHeaderStyle = (value: unknown): value is HeaderStyle =>
  typeof value === 'string' && (HEADER_STYLES as readonly string[]).includes(value);

/** What `parseRateLimitHeaders()` read from one response's headers: how long to wait, and every limit they describe (in {@link LIMIT_KINDS} order per style: OpenAI's, then Anthropic's, then the IETF ones). */
export type ParsedRateLimitHeaders = RateLimitSignals;

/** What `parseRateLimitHeaders()` takes besides the headers: the time dates are read against, and the longest wait believed. */
export interface ParseRateLimitHeadersOptions {
  /** The current time as Unix epoch ms, for date-valued headers (HTTP-date, RFC 3339). @default Date.now() */
  readonly nowMs?: number;
  /** The longest duration believed, in ms; longer ones (and dates further out) read as this. @default RETRY_DEFAULTS.maxRetryAfterMs */
  readonly maxRetryAfterMs?: number;
  /** The styles read (a provider knows its own). @default HEADER_STYLES (every style) */
  readonly styles?: readonly HeaderStyle[];
}

/** What `formatRateLimitHeaders()` takes besides the limits: the time resets are written against. */
export interface FormatRateLimitHeadersOptions {
  /** The current time as Unix epoch ms, for Anthropic's reset timestamps. @default Date.now() */
  readonly nowMs?: number;
}

/**
 * Reads retry-after and rate-limit status from response headers of any of the supported styles
 * (several may be present at once), or of `options.styles` only. `headers` may be undefined (no headers: nothing known).
 * Throws `TypeError` only for bad `options`, never for a header value.
 */
export function parseRateLimitHeaders(
  headers: HeaderSource | undefined,
  options: ParseRateLimitHeadersOptions = {},
): ParsedRateLimitHeaders {
  checkObject('options', options);
  const { nowMs = Date.now(), maxRetryAfterMs = RETRY_DEFAULTS.maxRetryAfterMs, styles } = options;
  checkNumber('nowMs', nowMs, { unit: 'Unix epoch ms' });
  checkDurationMs('maxRetryAfterMs', maxRetryAfterMs);
  if (styles !== undefined && !Array.isArray(styles)) throw expected('styles', 'an array of header styles', styles);
  for (const style of styles ?? []) checkOneOf('each style', style, HEADER_STYLES);
  const formats = styles === undefined ? READ_FORMATS : [...new Set(styles.map((style: HeaderStyle) => HEADER_FORMATS[style]))];
  return readRateLimits(formats, headers, nowMs, maxRetryAfterMs);
}

/**
 * The headers a provider of `style` sends to describe `status`, plus `retry-after` (whole seconds,
 * rounded up) and `retry-after-ms` when `retryAfterMs` is given. Names are lower-case. Resets are
 * rounded up to what the style can say (OpenAI and Anthropic: 1 ms; IETF: 1 s), so waiting as told
 * always suffices. Throws `TypeError` for a kind the style cannot express (OpenAI has only requests
 * and tokens), a kind given twice, or a value out of range.
 */
export function formatRateLimitHeaders(
  style: HeaderStyle,
  status: readonly LimitSnapshot[],
  retryAfterMs?: number,
  options: FormatRateLimitHeadersOptions = {},
): Record<string, string> {
  checkOneOf('style', style, HEADER_STYLES);
  if (!Array.isArray(status)) throw expected('status', 'an array', status);
  const { nowMs = Date.now() } = options;
  checkNumber('nowMs', nowMs, { unit: 'Unix epoch ms' });
  const seen = new Set<LimitKind>();
  for (const snapshot of status) {
    checkSnapshot(style, snapshot);
    if (seen.has(snapshot.kind)) throw expected('each kind', 'given at most once', `${snapshot.kind} twice`);
    seen.add(snapshot.kind);
  }

  if (retryAfterMs !== undefined) checkDurationMs('retryAfterMs', retryAfterMs);
  return writeRateLimitHeaders(HEADER_FORMATS[style], status, retryAfterMs, nowMs);
}

function checkSnapshot(style: HeaderStyle, snapshot: LimitSnapshot): void {
  checkObject('each status', snapshot);
  const { kind, limit, remaining, resetMs } = snapshot;
  checkOneOf(`kind (${style} style)`, kind, HEADER_FORMATS[style].kinds);
  checkInteger('limit', limit, 0);
  checkInteger('remaining', remaining, 0);
  checkDurationMs('resetMs', resetMs);
}
