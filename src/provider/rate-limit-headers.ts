import { LIMIT_KINDS, type LimitKind } from '../limits/provider-limits.ts';
import { ietfPolicyMember, ietfStatusMember } from '../middleware/ietf-headers.ts';
import { RETRY_DEFAULTS } from '../retry/retry.ts';
import { checkDurationMs, checkInteger, checkNumber, checkObject, checkOneOf, expected } from '../validation/checks.ts';
import { formatDuration, parseDuration } from '../validation/duration.ts';

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

export type HeaderStyle = 'openai' | 'anthropic' | 'ietf';

export const HEADER_STYLES: readonly HeaderStyle[] = Object.freeze(['openai', 'anthropic', 'ietf'] as HeaderStyle[]);

export const isHeaderStyle = (value: unknown): value is HeaderStyle =>
  typeof value === 'string' && (HEADER_STYLES as readonly string[]).includes(value);

/** OpenAI's and Anthropic's limits are per minute. */
const VENDOR_WINDOW_MS = 60_000;

/** OpenAI's headers count requests and tokens only. */
const OPENAI_KINDS: readonly LimitKind[] = ['requests', 'tokens'];

/** One limit as the headers describe it; a field the headers lacked, or got wrong, is absent. */
export interface LimitStatus {
  kind: LimitKind;
  /** The quota: how many the window admits. */
  limit?: number;
  /** How many the window still admits. */
  remaining?: number;
  /** Ms until the window resets / the limit is full again, capped at `maxRetryAfterMs`. */
  resetMs?: number;
  /** The IETF policy the figures belong to (`"default"` in `RateLimit: "default";r=50`); other styles have none. */
  policy?: string;
  /**
   * The window `limit` counts over, in ms: a minute for OpenAI's and Anthropic's limits (requests
   * and tokens per minute), the policy's `w` for the IETF draft; absent when the headers do not say.
   * `limit / windowMs` is the provider's stated rate.
   */
  windowMs?: number;
}

export interface RateLimitInfo {
  /** How long the server asked the client to wait, in ms, capped; absent when it did not ask (readably). */
  retryAfterMs?: number;
  /**
   * Every limit the headers describe: OpenAI's, then Anthropic's, then the IETF ones, each in
   * {@link LIMIT_KINDS} order (IETF in the policies' order). Several may share a kind (IETF policies,
   * a proxy adding its own); the most restrictive is the caller's pick.
   */
  limits: LimitStatus[];
}

/**
 * Headers to parse: a plain record (names in any case; Node's `IncomingHttpHeaders` fits, arrays
 * for repeated fields), or anything with `forEach(value, name)` such as a fetch `Headers` or a `Map`.
 */
export type HeaderSource =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | { forEach(callback: (value: string, name: string) => void): void };

export interface ParseRateLimitHeadersOptions {
  /** The current time as Unix epoch ms, for date-valued headers (HTTP-date, RFC 3339). @default Date.now() */
  readonly nowMs?: number;
  /** The longest duration believed, in ms; longer ones (and dates further out) read as this. @default RETRY_DEFAULTS.maxRetryAfterMs */
  readonly maxRetryAfterMs?: number;
}

/** One limit to describe in headers; counts whole. */
export interface LimitSnapshot {
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

export interface FormatRateLimitHeadersOptions {
  /** The current time as Unix epoch ms, for Anthropic's reset timestamps. @default Date.now() */
  readonly nowMs?: number;
}

/**
 * Reads retry-after and rate-limit status from response headers of any of the supported styles
 * (several may be present at once). `headers` may be undefined (no headers: nothing known).
 * Throws `TypeError` only for bad `options`, never for a header value.
 */
export function parseRateLimitHeaders(headers: HeaderSource | undefined, options: ParseRateLimitHeadersOptions = {}): RateLimitInfo {
  checkObject('options', options);
  const { nowMs = Date.now(), maxRetryAfterMs = RETRY_DEFAULTS.maxRetryAfterMs } = options;
  checkNumber('nowMs', nowMs, { unit: 'Unix epoch ms' });
  checkDurationMs('maxRetryAfterMs', maxRetryAfterMs);
  const fields = collectFields(headers);
  const context: Context = { fields, nowMs, capMs: (ms) => Math.min(ms, maxRetryAfterMs) };
  const info: RateLimitInfo = { limits: [...parseOpenAi(context), ...parseAnthropic(context), ...parseIetf(context)] };
  const retryAfterMs = parseRetryAfter(context);
  if (retryAfterMs !== undefined) info.retryAfterMs = retryAfterMs;
  return info;
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

  const headers: Record<string, string> = {};
  if (retryAfterMs !== undefined) {
    checkDurationMs('retryAfterMs', retryAfterMs);
    headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
    headers['retry-after-ms'] = String(Math.ceil(retryAfterMs));
  }
  if (style === 'openai') {
    for (const { kind, limit, remaining, resetMs } of status) {
      headers[`x-ratelimit-limit-${kind}`] = String(limit);
      headers[`x-ratelimit-remaining-${kind}`] = String(remaining);
      headers[`x-ratelimit-reset-${kind}`] = formatDuration(Math.ceil(resetMs));
    }
  } else if (style === 'anthropic') {
    for (const { kind, limit, remaining, resetMs } of status) {
      headers[`anthropic-ratelimit-${kind}-limit`] = String(limit);
      headers[`anthropic-ratelimit-${kind}-remaining`] = String(remaining);
      // Rounded up on the absolute instant, so a fractional `nowMs` cannot shorten the reset.
      headers[`anthropic-ratelimit-${kind}-reset`] = new Date(Math.ceil(nowMs + resetMs)).toISOString();
    }
  } else if (status.length > 0) {
    headers['ratelimit-policy'] = status
      .map(({ kind, limit, windowMs }) =>
        ietfPolicyMember({
          name: kind,
          quota: limit,
          unit: kind === 'requests' ? undefined : kind,
          windowSeconds: windowMs === undefined ? undefined : Math.ceil(windowMs / 1000),
        }),
      )
      .join(', ');
    headers.ratelimit = status
      .map(({ kind, remaining, resetMs }) => ietfStatusMember(kind, remaining, Math.ceil(resetMs / 1000)))
      .join(', ');
  }
  return headers;
}

interface Context {
  /** Field values by lower-case name, in arrival order. */
  readonly fields: ReadonlyMap<string, readonly string[]>;
  readonly nowMs: number;
  readonly capMs: (ms: number) => number;
}

function collectFields(headers: HeaderSource | undefined): Map<string, string[]> {
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

/** The first value of a singleton field (a repeated one is a protocol error; the first is the usual pick). */
function first(context: Context, name: string): string | undefined {
  return context.fields.get(name)?.[0];
}

/** A list field's values joined, as HTTP combines repeated list fields. */
function list(context: Context, name: string): string | undefined {
  return context.fields.get(name)?.join(', ');
}

function parseRetryAfter(context: Context): number | undefined {
  const preciseMs = parseDecimal(first(context, 'retry-after-ms'));
  if (preciseMs !== undefined) return context.capMs(preciseMs);
  const value = first(context, 'retry-after');
  if (value === undefined) return undefined;
  const seconds = parseDecimal(value);
  if (seconds !== undefined) return context.capMs(seconds * 1000);
  const dateMs = parseHttpDate(value, context.nowMs);
  return dateMs === undefined ? undefined : context.capMs(Math.max(0, dateMs - context.nowMs));
}

function parseOpenAi(context: Context): LimitStatus[] {
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

function parseAnthropic(context: Context): LimitStatus[] {
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

function parseIetf(context: Context): LimitStatus[] {
  const limits: LimitStatus[] = [];
  const current = list(context, 'ratelimit');
  const dictionary = current === undefined ? undefined : parseLegacyDictionary(current);
  const seconds = (value: string | undefined): number | undefined => {
    const parsed = parseDecimal(value);
    return parsed === undefined ? undefined : context.capMs(parsed * 1000);
  };

  // Older drafts: separate fields, or one dictionary; the quota's unit was the server's business,
  // requests in practice.
  const legacyLimit = first(context, 'ratelimit-limit')?.split(',')[0]?.split(';')[0]?.trim();
  pushStatus(limits, {
    kind: 'requests',
    limit: parseCount(legacyLimit) ?? parseCount(dictionary?.get('limit')),
    remaining: parseCount(first(context, 'ratelimit-remaining')) ?? parseCount(dictionary?.get('remaining')),
    resetMs: seconds(first(context, 'ratelimit-reset')) ?? seconds(dictionary?.get('reset')),
  });

  const policies = parsePolicyList(list(context, 'ratelimit-policy'));
  const statuses = dictionary === undefined ? parsePolicyList(current) : new Map<string, ReadonlyMap<string, string>>();
  for (const name of new Set([...policies.keys(), ...statuses.keys()])) {
    const policy = policies.get(name);
    const status = statuses.get(name);
    const kind = unitKind(policy?.get('qu') ?? 'requests');
    // A unit we do not count in (content-bytes, concurrent-requests) must not pass for requests.
    if (kind === undefined) continue;
    const windowSeconds = parseDecimal(policy?.get('w'));
    pushStatus(limits, {
      kind,
      limit: parseCount(policy?.get('q')),
      remaining: parseCount(status?.get('r')),
      resetMs: seconds(status?.get('t')),
      policy: name,
      windowMs: windowSeconds === undefined || windowSeconds === 0 ? undefined : windowSeconds * 1000,
    });
  }
  return limits;
}

function unitKind(unit: string): LimitKind | undefined {
  return (LIMIT_KINDS as readonly string[]).includes(unit) ? (unit as LimitKind) : undefined;
}

/** Adds the status unless the headers told nothing readable about it; leaves out absent fields. */
function pushStatus(
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
function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const count = Number(value);
  return Number.isSafeInteger(count) ? count : undefined;
}

/**
 * A non-negative decimal (`30`, `1.5`). Too many digits read as Infinity, which the caller's cap
 * turns into the cap: a huge wait is still a request to wait long.
 */
function parseDecimal(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+(?:\.\d+)?$/.test(value)) return undefined;
  return Number(value);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const IMF_FIXDATE = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const RFC_850_DATE = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const ASCTIME_DATE = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i;

/** An HTTP-date in any of RFC 9110's three formats, as epoch ms; undefined when not one. */
function parseHttpDate(value: string, nowMs: number): number | undefined {
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
function parseRfc3339(value: string | undefined): number | undefined {
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

/**
 * A structured-field list of named policies (`"default";q=100;w=60, daily;q=1000`): name → params.
 * Members that are not a string or token (older drafts' bare `100;w=60`) are skipped; a name given
 * twice keeps its first.
 */
function parsePolicyList(value: string | undefined): Map<string, ReadonlyMap<string, string>> {
  const policies = new Map<string, ReadonlyMap<string, string>>();
  if (value === undefined) return policies;
  for (const member of splitOutsideQuotes(value, ',')) {
    const [item = '', ...rawParams] = splitOutsideQuotes(member, ';');
    const name = parseName(item.trim());
    if (name === undefined || policies.has(name)) continue;
    const params = new Map<string, string>();
    for (const rawParam of rawParams) {
      const param = /^\s*([a-z*][a-z0-9_\-.*]*)\s*(?:=\s*(.*?))?\s*$/i.exec(rawParam);
      const key = param?.[1]?.toLowerCase();
      if (key === undefined || params.has(key)) continue;
      params.set(key, unquote(param![2] ?? '?1'));
    }
    policies.set(name, params);
  }
  return policies;
}

/** The older drafts' `RateLimit: limit=100, remaining=50, reset=30`; undefined when the field is not that form. */
function parseLegacyDictionary(value: string): Map<string, string> | undefined {
  const entries = new Map<string, string>();
  for (const member of value.split(',')) {
    const entry = /^\s*(limit|remaining|reset)\s*=\s*([^;\s]*)\s*(?:;.*)?$/i.exec(member);
    if (entry === null) return undefined;
    const key = entry[1]!.toLowerCase();
    if (!entries.has(key)) entries.set(key, entry[2]!);
  }
  return entries;
}

function parseName(item: string): string | undefined {
  if (/^"(?:[^"\\]|\\.)*"$/.test(item)) return unquote(item);
  return /^[a-z*][\w!#$%&'*+\-.^`|~:/]*$/i.test(item) ? item : undefined;
}

function unquote(value: string): string {
  return /^"(?:[^"\\]|\\.)*"$/.test(value) ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
}

/** Splits on `separator` where it is not inside a quoted string. */
function splitOutsideQuotes(value: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === separator) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}

function checkSnapshot(style: HeaderStyle, snapshot: LimitSnapshot): void {
  checkObject('each status', snapshot);
  const { kind, limit, remaining, resetMs } = snapshot;
  checkOneOf(`kind (${style} style)`, kind, style === 'openai' ? OPENAI_KINDS : LIMIT_KINDS);
  checkInteger('limit', limit, 0);
  checkInteger('remaining', remaining, 0);
  checkDurationMs('resetMs', resetMs);
}
