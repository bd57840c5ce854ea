import type { LimitKind, LimitStatus, RateLimitSignals } from '../provider/rate-limit-signals.ts';
import { RETRY_DEFAULTS } from '../retry/retry.ts';

/**
 * What every rate-limit header format reads with: the fields of a response's headers, collected
 * once, and the readers of the values they carry — counts, decimals, durations, dates. Headers come
 * from the other side of a network, so nothing here throws on a value: what cannot be read is absent.
 */

/** OpenAI's and Anthropic's limits are per minute. */
export const VENDOR_WINDOW_MS = 60_000;

export type { LimitStatus };

/**
 * Headers to parse: a plain record (names in any case; Node's `IncomingHttpHeaders` fits, arrays
 * for repeated fields), or anything with `forEach(value, name)` such as a fetch `Headers` or a `Map`.
 */
export type HeaderSource =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | { forEach(callback: (value: string, name: string) => void): void };

/** One limit to describe in headers; counts whole. */
export interface LimitSnapshot {
  /** Which limit this is: requests, tokens, input or output tokens. */
  readonly kind: LimitKind;
  /** Whole number >= 0: per minute for the OpenAI and Anthropic styles, per `windowMs` for the IETF one. */
  readonly limit: number;
  /** Whole number >= 0. */
  readonly remaining: number;
  /** Ms until the limit is full again, >= 0; written rounded up to the style's precision. */
  readonly resetMs: number;
  /** The window `limit` counts over, in ms (the IETF policy's `w`, in whole seconds). @default none (unsaid) */
  readonly windowMs?: number | undefined;
}

/** One rate-limit header format: the limits it states, read and written. */
export interface HeaderFormat {
  /** The limit kinds the format can state. */
  readonly kinds: readonly LimitKind[];
  /** The limits the headers state in this format; none when they use another. */
  parse(fields: HeaderFields): LimitStatus[];
  /** Writes `status` into `headers` in this format (checked before: kinds the format has, whole counts). */
  write(headers: Record<string, string>, status: readonly LimitSnapshot[], nowMs: number): void;
}

/** One response's headers as a `HeaderFormat` reads them: the fields, the time, and the cap on durations. */
export interface HeaderFields {
  /** Field values by lower-case name, in arrival order. */
  readonly fields: ReadonlyMap<string, readonly string[]>;
  /** The current time as Unix epoch ms, for dates and reset timestamps. */
  readonly nowMs: number;
  /** Caps a duration at the longest one believed (`maxRetryAfterMs`). */
  readonly capMs: (ms: number) => number;
}

export function collectFields(headers: HeaderSource | undefined): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  const add = (name: unknown, value: unknown): void => {
    if (typeof name !== 'string') return;
    const values = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
    for (const item of values) {
      if (typeof item !== 'string') continue;
      const key = name.trim().toLowerCase();
      const list = fields.get(key);
      if (list === undefined) fields.set(key, [item.trim()]);
      else list.push(item.trim());
    }
  };
  if (headers === null || typeof headers !== 'object') return fields;
  const { forEach } = headers as { forEach?: unknown };
  if (typeof forEach === 'function') {
    try {
      (headers as { forEach(callback: (value: string, name: string) => void): void }).forEach((value, name) => {
        add(name, value);
      });
    } catch {
      // A broken headers object tells us nothing, like no headers at all.
      return new Map();
    }
  } else {
    for (const [name, value] of Object.entries(headers)) add(name, value);
  }
  return fields;
}

/**
 * The headers `format` writes for `status` (checked by the caller), after `retry-after` (whole
 * seconds, rounded up) and `retry-after-ms` when `retryAfterMs` is given. Names lower-case.
 */
export function writeRateLimitHeaders(
  format: HeaderFormat,
  status: readonly LimitSnapshot[],
  retryAfterMs: number | undefined,
  nowMs: number,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (retryAfterMs !== undefined) {
    headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
    headers['retry-after-ms'] = String(Math.ceil(retryAfterMs));
  }
  format.write(headers, status, nowMs);
  return headers;
}

/** The first value of a singleton field (a repeated one is a protocol error; the first is the usual pick). */
export function first(context: HeaderFields, name: string): string | undefined {
  return context.fields.get(name)?.[0];
}

/** A list field's values joined, as HTTP combines repeated list fields. */
export function list(context: HeaderFields, name: string): string | undefined {
  return context.fields.get(name)?.join(', ');
}

/**
 * How long `headers` ask a client to wait (`retry-after-ms`, `retry-after` in seconds or as an
 * HTTP-date), in ms, capped at `maxRetryAfterMs`; undefined when they do not ask readably.
 */
export function retryAfterOf(
  headers: HeaderSource | undefined,
  nowMs = Date.now(),
  maxRetryAfterMs = RETRY_DEFAULTS.maxRetryAfterMs,
): number | undefined {
  return parseRetryAfter({ fields: collectFields(headers), nowMs, capMs: (ms) => Math.min(ms, maxRetryAfterMs) });
}

/**
 * What `headers` say in any of `formats` — each limit they state, in the formats' order — and the
 * wait `retry-after` asks for; durations capped at `maxRetryAfterMs`. Never throws on a header value.
 */
export function readRateLimits(
  formats: readonly HeaderFormat[],
  headers: HeaderSource | undefined,
  nowMs = Date.now(),
  maxRetryAfterMs: number = RETRY_DEFAULTS.maxRetryAfterMs,
): RateLimitSignals {
  const fields: HeaderFields = { fields: collectFields(headers), nowMs, capMs: (ms) => Math.min(ms, maxRetryAfterMs) };
  const signals: RateLimitSignals = { limits: formats.flatMap((format) => format.parse(fields)) };
  const retryAfterMs = parseRetryAfter(fields);
  if (retryAfterMs !== undefined) signals.retryAfterMs = retryAfterMs;
  return signals;
}

export function parseRetryAfter(context: HeaderFields): number | undefined {
  const preciseMs = parseDecimal(first(context, 'retry-after-ms'));
  if (preciseMs !== undefined) return context.capMs(preciseMs);
  const value = first(context, 'retry-after');
  if (value === undefined) return undefined;
  const seconds = parseDecimal(value);
  if (seconds !== undefined) return context.capMs(seconds * 1000);
  const dateMs = parseHttpDate(value, context.nowMs);
  return dateMs === undefined ? undefined : context.capMs(Math.max(0, dateMs - context.nowMs));
}

/** Adds the status unless the headers told nothing readable about it; leaves out absent fields. */
export function pushStatus(
  limits: LimitStatus[],
  fields: {
    kind: LimitKind;
    limit: number | undefined;
    remaining: number | undefined;
    resetMs: number | undefined;
    policy?: string;
    windowMs?: number | undefined;
  },
): void {
  const { kind, limit, remaining, resetMs, policy, windowMs } = fields;
  if (limit === undefined && remaining === undefined && resetMs === undefined) return;
  const status: LimitStatus = { kind };
  if (limit !== undefined) status.limit = limit;
  if (remaining !== undefined) status.remaining = remaining;
  if (resetMs !== undefined) status.resetMs = resetMs;
  if (policy !== undefined) status.policy = policy;
  // A window without a limit says nothing.
  if (limit !== undefined && windowMs !== undefined) status.windowMs = windowMs;
  limits.push(status);
}

/** A whole count: digits only, and small enough to be exact. */
export function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const count = Number(value);
  return Number.isSafeInteger(count) ? count : undefined;
}

/**
 * A non-negative decimal (`30`, `1.5`). Too many digits read as Infinity, which the caller's cap
 * turns into the cap: a huge wait is still a request to wait long.
 */
export function parseDecimal(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+(?:\.\d+)?$/.test(value)) return undefined;
  return Number(value);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const IMF_FIXDATE = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const RFC_850_DATE = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const ASCTIME_DATE = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i;

/** An HTTP-date in any of RFC 9110's three formats, as epoch ms; undefined when not one. */
export function parseHttpDate(value: string, nowMs: number): number | undefined {
  let match = IMF_FIXDATE.exec(value);
  if (match !== null) {
    const [, day, month, year, hour, minute, second] = match as unknown as string[];
    return utcMs(Number(year), monthIndex(month!), Number(day), Number(hour), Number(minute), Number(second), 0);
  }
  match = RFC_850_DATE.exec(value);
  if (match !== null) {
    const [, day, month, shortYear, hour, minute, second] = match as unknown as string[];
    // RFC 9110: a two-digit year more than 50 years ahead means the most recent such year past.
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = nowYear - (nowYear % 100) + Number(shortYear);
    if (year > nowYear + 50) year -= 100;
    return utcMs(year, monthIndex(month!), Number(day), Number(hour), Number(minute), Number(second), 0);
  }
  match = ASCTIME_DATE.exec(value);
  if (match !== null) {
    const [, month, day, hour, minute, second, year] = match as unknown as string[];
    return utcMs(Number(year), monthIndex(month!), Number(day!.trim()), Number(hour), Number(minute), Number(second), 0);
  }
  return undefined;
}

const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[t ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|([+-])(\d{2}):(\d{2}))$/i;

/** An RFC 3339 timestamp (`2025-01-01T00:00:00.400Z`, `…+02:00`) as epoch ms; undefined when not one. */
export function parseRfc3339(value: string | undefined): number | undefined {
  const match = value === undefined ? null : RFC_3339.exec(value);
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second, fraction, , sign, offsetHours, offsetMinutes] = match as unknown as (
    | string
    | undefined
  )[];
  const ms = utcMs(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    Number(`0${fraction ?? ''}`) * 1000,
  );
  if (ms === undefined || sign === undefined) return ms;
  if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  const offsetMs = (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  return sign === '+' ? ms - offsetMs : ms + offsetMs;
}

function monthIndex(name: string): number {
  return MONTHS.indexOf(name.toLowerCase());
}

/** The instant of a calendar date and time in UTC; undefined for a date or time that does not exist. */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number | undefined {
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  // A leap second (:60) reads as the next second's start: what a wait-until computes with anyway.
  return date.getTime() + ((hour * 60 + minute) * 60 + second) * 1000 + ms;
}
