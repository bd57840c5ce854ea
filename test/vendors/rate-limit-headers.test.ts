import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  HEADER_STYLES,
  formatRateLimitHeaders,
  isHeaderStyle,
  parseRateLimitHeaders,
  type HeaderStyle,
  type LimitSnapshot,
  type LimitStatus,
  type ParsedRateLimitHeaders,
} from '../../src/vendors/rate-limit-headers.ts';
import { LIMIT_KINDS, type LimitKind } from '../../src/quota/provider-limits.ts';

/** The header styles that say anything (Gemini's says nothing, not even `retry-after`). */
const SPOKEN_STYLES = HEADER_STYLES.filter((style) => Object.keys(formatRateLimitHeaders(style, [], 1)).length > 0);

/** 2025-01-01T00:00:00Z, a Wednesday. */
const NOW_MS = Date.UTC(2025, 0, 1);
const CAP_MS = 60_000;

const parse = (headers: Record<string, string>, maxRetryAfterMs?: number): ParsedRateLimitHeaders =>
  parseRateLimitHeaders(headers, maxRetryAfterMs === undefined ? { nowMs: NOW_MS } : { nowMs: NOW_MS, maxRetryAfterMs });

const retryAfterOf = (headers: Record<string, string>): number | undefined => parse(headers).retryAfterMs;

/** Every number in the result is finite, not negative, and no duration exceeds the cap. */
function expectSane(info: ParsedRateLimitHeaders, capMs: number): void {
  const durations = [info.retryAfterMs, ...info.limits.map((status) => status.resetMs)].filter((ms) => ms !== undefined);
  for (const ms of durations) {
    expect(Number.isFinite(ms)).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThanOrEqual(capMs);
  }
  for (const status of info.limits) {
    expect(LIMIT_KINDS).toContain(status.kind);
    for (const count of [status.limit, status.remaining]) {
      if (count !== undefined) expect(Number.isSafeInteger(count) && count >= 0).toBe(true);
    }
    expect(status.limit !== undefined || status.remaining !== undefined || status.resetMs !== undefined).toBe(true);
  }
}

describe('parseRateLimitHeaders()', () => {
  it('parseRateLimitHeaders() - knows nothing from no headers', () => {
    expect(parseRateLimitHeaders(undefined)).toEqual({ limits: [] });
    expect(parseRateLimitHeaders({})).toEqual({ limits: [] });
    expect(parseRateLimitHeaders({ 'content-type': 'application/json' })).toEqual({ limits: [] });
  });

  it.each([
    ['0', 0],
    ['2', 2000],
    ['1.5', 1500],
    [' 3 ', 3000],
    ['60', 60_000],
    ['61', CAP_MS],
    ['99999999999', CAP_MS],
    ['9'.repeat(400), CAP_MS],
  ])('parseRateLimitHeaders() - reads retry-after %j (delta-seconds) as %j ms', (value, expectedMs) => {
    expect(retryAfterOf({ 'retry-after': value })).toBe(expectedMs);
  });

  it.each([
    ['IMF-fixdate', 'Wed, 01 Jan 2025 00:00:30 GMT', 30_000],
    ['IMF-fixdate, any case', 'wed, 01 JAN 2025 00:00:30 gmt', 30_000],
    ['RFC 850 date', 'Wednesday, 01-Jan-25 00:00:30 GMT', 30_000],
    ['asctime date', 'Wed Jan  1 00:00:30 2025', 30_000],
    ['date in the past', 'Tue, 31 Dec 2024 23:59:00 GMT', 0],
    ['date now', 'Wed, 01 Jan 2025 00:00:00 GMT', 0],
    ['date beyond the cap', 'Thu, 02 Jan 2025 00:00:00 GMT', CAP_MS],
    ['date far beyond the cap', 'Fri, 01 Jan 9999 00:00:00 GMT', CAP_MS],
  ])('parseRateLimitHeaders() - reads retry-after as an HTTP-date relative to nowMs: %s', (_, value, expectedMs) => {
    expect(retryAfterOf({ 'retry-after': value })).toBe(expectedMs);
  });

  it.each([
    ['negative', '-1'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['exponent', '1e3'],
    ['hex', '0x10'],
    ['empty', ''],
    ['unit', '5s'],
    ['thousands separator', '1,000'],
    ['trailing dot', '5.'],
    ['words', 'soon'],
    ['31 February', 'Fri, 31 Feb 2025 00:00:30 GMT'],
    ['unknown month', 'Wed, 01 Foo 2025 00:00:30 GMT'],
    ['hour 25', 'Wed, 01 Jan 2025 25:00:00 GMT'],
    ['minute 60', 'Wed, 01 Jan 2025 00:60:00 GMT'],
    ['no GMT', 'Wed, 01 Jan 2025 00:00:30'],
    ['other zone', 'Wed, 01 Jan 2025 00:00:30 PST'],
    ['RFC 3339 instead of HTTP-date', '2025-01-01T00:00:30Z'],
    ['a bare year (Date.parse would accept it)', '2026 GMT'],
  ])('parseRateLimitHeaders() - ignores a malformed retry-after: %s', (_, value) => {
    expect(parseRateLimitHeaders({ 'retry-after': value }, { nowMs: NOW_MS })).toEqual({ limits: [] });
  });

  it('parseRateLimitHeaders() - reads a two-digit RFC 850 year as at most 50 years ahead', () => {
    const nowMs = Date.UTC(2080, 0, 1);
    // '30' would be 2130, more than 50 years ahead of 2080: it means 2030, long past.
    expect(parseRateLimitHeaders({ 'retry-after': 'Tuesday, 01-Jan-30 00:00:00 GMT' }, { nowMs }).retryAfterMs).toBe(0);
    expect(parseRateLimitHeaders({ 'retry-after': 'Monday, 01-Jan-80 00:00:05 GMT' }, { nowMs }).retryAfterMs).toBe(5000);
  });

  it.each([
    ['retry-after-ms alone', { 'retry-after-ms': '250' }, 250],
    ['retry-after-ms with a fraction', { 'retry-after-ms': '250.5' }, 250.5],
    ['retry-after-ms over retry-after seconds', { 'retry-after': '1', 'retry-after-ms': '250' }, 250],
    ['retry-after-ms over an HTTP-date', { 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT', 'retry-after-ms': '1500' }, 1500],
    ['retry-after-ms, even when longer', { 'retry-after': '1', 'retry-after-ms': '1800' }, 1800],
    ['retry-after when retry-after-ms is malformed', { 'retry-after': '2', 'retry-after-ms': '-250' }, 2000],
    ['retry-after when retry-after-ms is NaN', { 'retry-after': '2', 'retry-after-ms': 'NaN' }, 2000],
    ['retry-after-ms capped', { 'retry-after-ms': '600000' }, CAP_MS],
    ['neither, when both are malformed', { 'retry-after': 'x', 'retry-after-ms': 'y' }, undefined],
  ])('parseRateLimitHeaders() - retry-after precedence: %s', (_, headers, expectedMs) => {
    expect(retryAfterOf(headers)).toBe(expectedMs);
  });

  it('parseRateLimitHeaders() - caps at maxRetryAfterMs', () => {
    expect(parse({ 'retry-after': '10' }, 5000).retryAfterMs).toBe(5000);
    expect(parse({ 'retry-after': '10' }, 0).retryAfterMs).toBe(0);
    expect(parse({ 'retry-after': '120' }, 600_000).retryAfterMs).toBe(120_000);
    expect(parse({ 'x-ratelimit-reset-requests': '6m0s' }, 5000).limits).toEqual([{ kind: 'requests', resetMs: 5000 }]);
  });

  it('parseRateLimitHeaders() - matches header names in any case', () => {
    const info = parseRateLimitHeaders(
      {
        'Retry-After': '2',
        'X-RateLimit-Limit-Requests': '60',
        'X-RATELIMIT-REMAINING-REQUESTS': '59',
        'Anthropic-RateLimit-Tokens-Limit': '1000',
        RateLimit: '"default";r=5',
      },
      { nowMs: NOW_MS },
    );
    expect(info).toEqual({
      retryAfterMs: 2000,
      limits: [
        { kind: 'requests', limit: 60, remaining: 59, windowMs: 60_000 },
        { kind: 'tokens', limit: 1000, windowMs: 60_000 },
        { kind: 'requests', remaining: 5, policy: 'default' },
      ],
    });
  });

  it('parseRateLimitHeaders() - reads fetch Headers, Maps and records with repeated fields', () => {
    expect(parseRateLimitHeaders(new Headers({ 'Retry-After': '3' })).retryAfterMs).toBe(3000);
    expect(parseRateLimitHeaders(new Map([['RETRY-AFTER', '4']])).retryAfterMs).toBe(4000);
    // A repeated singleton field: the first value counts.
    expect(parseRateLimitHeaders({ 'retry-after': ['5', '9'] }).retryAfterMs).toBe(5000);
    // A repeated list field: the values combine.
    expect(parseRateLimitHeaders({ ratelimit: ['"a";r=1', '"b";r=2'] }).limits).toEqual([
      { kind: 'requests', remaining: 1, policy: 'a' },
      { kind: 'requests', remaining: 2, policy: 'b' },
    ]);
  });

  it('parseRateLimitHeaders() - ignores values that are not strings and headers objects that throw', () => {
    const odd = { 'retry-after': 5, 'retry-after-ms': null, 'x-ratelimit-remaining-requests': ['7', 8] } as never;
    expect(parseRateLimitHeaders(odd)).toEqual({ limits: [{ kind: 'requests', remaining: 7 }] });
    const broken = {
      forEach() {
        throw new Error('boom');
      },
    };
    expect(parseRateLimitHeaders(broken)).toEqual({ limits: [] });
  });

  it('parseRateLimitHeaders() - throws TypeError for bad options', () => {
    expect(() => parseRateLimitHeaders({}, { nowMs: Number.NaN })).toThrow(
      new TypeError('Expected nowMs to be a finite number (Unix epoch ms), got NaN'),
    );
    expect(() => parseRateLimitHeaders({}, { maxRetryAfterMs: -1 })).toThrow(
      new TypeError('Expected maxRetryAfterMs to be a finite number >= 0 (ms), got -1'),
    );
    expect(() => parseRateLimitHeaders({}, { maxRetryAfterMs: Infinity })).toThrow(/maxRetryAfterMs.*got Infinity/);
    expect(() => parseRateLimitHeaders({}, null as never)).toThrow(new TypeError('Expected options to be an object, got null'));
  });

  it('parseRateLimitHeaders() - defaults nowMs to Date.now()', () => {
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const retryAfterMs = parseRateLimitHeaders({ 'retry-after': inTenSeconds }).retryAfterMs!;
    // toUTCString() drops the milliseconds, so up to a second less.
    expect(retryAfterMs).toBeGreaterThan(8000);
    expect(retryAfterMs).toBeLessThanOrEqual(10_000);
  });
});

describe('parseRateLimitHeaders() - OpenAI style', () => {
  it('parseRateLimitHeaders() - reads x-ratelimit-* for requests and tokens', () => {
    const info = parse({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '150000',
      'x-ratelimit-remaining-tokens': '149984',
      'x-ratelimit-reset-tokens': '6ms',
    });
    expect(info).toEqual({
      limits: [
        { kind: 'requests', limit: 60, remaining: 59, resetMs: 1000, windowMs: 60_000 },
        { kind: 'tokens', limit: 150_000, remaining: 149_984, resetMs: 6, windowMs: 60_000 },
      ],
    });
  });

  it.each([
    ['0', 0],
    ['0s', 0],
    ['20ms', 20],
    ['1s', 1000],
    ['0.5s', 500],
    ['.5s', 500],
    ['7.66s', 7660],
    ['6m0s', 360_000],
    ['1m30s', 90_000],
    ['1h2m3.5s', 3_723_500],
    ['2h', 7_200_000],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['1s500ms', 1500],
  ])('parseRateLimitHeaders() - reads the reset duration %j as %j ms', (value, expectedMs) => {
    const [status] = parse({ 'x-ratelimit-reset-requests': value }, 10_000_000).limits;
    expect(status!.resetMs).toBeCloseTo(expectedMs, 6);
  });

  it.each(['1', '-1s', 's', '1x', 'NaNs', '1s2', '1 s', 'Infinitys', '1e3s', '', '1h-2m'])(
    'parseRateLimitHeaders() - ignores the malformed reset duration %j',
    (value) => {
      expect(parse({ 'x-ratelimit-reset-requests': value, 'x-ratelimit-limit-requests': '10' }).limits).toEqual([
        { kind: 'requests', limit: 10, windowMs: 60_000 },
      ]);
    },
  );

  it.each(['-5', '1.5', 'abc', '1e3', 'NaN', '', ' ', '99999999999999999999', '0x10'])(
    'parseRateLimitHeaders() - ignores the malformed count %j',
    (value) => {
      const info = parse({
        'x-ratelimit-limit-requests': value,
        'x-ratelimit-remaining-requests': value,
        'x-ratelimit-reset-requests': '2s',
      });
      expect(info.limits).toEqual([{ kind: 'requests', resetMs: 2000 }]);
    },
  );

  it('parseRateLimitHeaders() - caps a huge reset and leaves out kinds with nothing readable', () => {
    const info = parse({
      'x-ratelimit-reset-requests': '99999h',
      'x-ratelimit-remaining-tokens': 'lots',
      'x-ratelimit-reset-tokens': 'later',
    });
    expect(info.limits).toEqual([{ kind: 'requests', resetMs: CAP_MS }]);
  });
});

describe('parseRateLimitHeaders() - Anthropic style', () => {
  it('parseRateLimitHeaders() - reads anthropic-ratelimit-* for all four kinds', () => {
    const headers: Record<string, string> = { 'retry-after': '3' };
    LIMIT_KINDS.forEach((kind, index) => {
      headers[`anthropic-ratelimit-${kind}-limit`] = String(1000 * (index + 1));
      headers[`anthropic-ratelimit-${kind}-remaining`] = String(100 * index);
      headers[`anthropic-ratelimit-${kind}-reset`] = new Date(NOW_MS + 1000 * (index + 1)).toISOString();
    });
    expect(parse(headers)).toEqual({
      retryAfterMs: 3000,
      limits: [
        { kind: 'requests', limit: 1000, remaining: 0, resetMs: 1000, windowMs: 60_000 },
        { kind: 'tokens', limit: 2000, remaining: 100, resetMs: 2000, windowMs: 60_000 },
        { kind: 'input-tokens', limit: 3000, remaining: 200, resetMs: 3000, windowMs: 60_000 },
        { kind: 'output-tokens', limit: 4000, remaining: 300, resetMs: 4000, windowMs: 60_000 },
      ],
    });
  });

  it.each([
    ['UTC with Z', '2025-01-01T00:00:12Z', 12_000],
    ['milliseconds', '2025-01-01T00:00:00.400Z', 400],
    ['microseconds', '2025-01-01T00:00:00.400500Z', 400.5],
    ['lower-case t and z', '2025-01-01t00:00:12z', 12_000],
    ['positive offset', '2025-01-01T02:00:10+02:00', 10_000],
    ['negative offset', '2024-12-31T23:30:20-00:30', 20_000],
    ['in the past', '2024-12-31T23:59:59Z', 0],
    ['beyond the cap', '2025-01-02T00:00:00Z', CAP_MS],
    ['leap second', '2025-01-01T00:00:60Z', 60_000],
  ])('parseRateLimitHeaders() - reads an RFC 3339 reset (%s)', (_, value, expectedMs) => {
    const [status] = parse({ 'anthropic-ratelimit-requests-reset': value }).limits;
    expect(status).toEqual({ kind: 'requests', resetMs: expectedMs });
  });

  it.each([
    ['month 13', '2025-13-01T00:00:00Z'],
    ['30 February', '2025-02-30T00:00:00Z'],
    ['day 0', '2025-01-00T00:00:00Z'],
    ['hour 24', '2025-01-01T24:00:00Z'],
    ['no zone', '2025-01-01T00:00:10'],
    ['bad offset', '2025-01-01T00:00:10+25:00'],
    ['seconds instead of a timestamp', '30'],
    ['a duration', '30s'],
    ['an HTTP-date', 'Wed, 01 Jan 2025 00:00:30 GMT'],
    ['garbage', 'not a date'],
  ])('parseRateLimitHeaders() - ignores a malformed reset timestamp (%s)', (_, value) => {
    const info = parse({ 'anthropic-ratelimit-tokens-reset': value, 'anthropic-ratelimit-tokens-remaining': '5' });
    expect(info.limits).toEqual([{ kind: 'tokens', remaining: 5 }]);
  });
});

describe('parseRateLimitHeaders() - IETF style', () => {
  it('parseRateLimitHeaders() - joins RateLimit with RateLimit-Policy by policy name', () => {
    const info = parse({ ratelimit: '"default";r=50;t=30', 'ratelimit-policy': '"default";q=100;w=60' });
    expect(info.limits).toEqual([{ kind: 'requests', limit: 100, remaining: 50, resetMs: 30_000, policy: 'default', windowMs: 60_000 }]);
  });

  it('parseRateLimitHeaders() - reads several policies, in the policies order', () => {
    const info = parse({
      ratelimit: '"daily";r=900;t=3000, "burst";r=5;t=1',
      'ratelimit-policy': '"burst";q=100;w=60, "daily";q=1000;w=86400, "tokens";q=40000;qu="tokens"',
    });
    expect(info.limits).toEqual([
      { kind: 'requests', limit: 100, remaining: 5, resetMs: 1000, policy: 'burst', windowMs: 60_000 },
      { kind: 'requests', limit: 1000, remaining: 900, resetMs: CAP_MS, policy: 'daily', windowMs: 86_400_000 },
      { kind: 'tokens', limit: 40_000, policy: 'tokens' },
    ]);
  });

  it.each([
    [
      'a policy only in RateLimit',
      { ratelimit: '"default";r=3;t=2' },
      [{ kind: 'requests', remaining: 3, resetMs: 2000, policy: 'default' }],
    ],
    ['a token as the name', { ratelimit: 'default;r=3' }, [{ kind: 'requests', remaining: 3, policy: 'default' }]],
    [
      'a comma and escapes in a quoted name',
      { ratelimit: '"a,\\"b\\"";r=1, "c";r=2' },
      [
        { kind: 'requests', remaining: 1, policy: 'a,"b"' },
        { kind: 'requests', remaining: 2, policy: 'c' },
      ],
    ],
    [
      'spaces around members and parameters',
      { ratelimit: '  "x" ; r=4 ; t=1 ,"y";r=6' },
      [
        { kind: 'requests', remaining: 4, resetMs: 1000, policy: 'x' },
        { kind: 'requests', remaining: 6, policy: 'y' },
      ],
    ],
    ['the first of a name given twice', { ratelimit: '"x";r=4, "x";r=9' }, [{ kind: 'requests', remaining: 4, policy: 'x' }]],
    [
      'input and output token units',
      { 'ratelimit-policy': '"in";q=10;qu="input-tokens", "out";q=20;qu=output-tokens' },
      [
        { kind: 'input-tokens', limit: 10, policy: 'in' },
        { kind: 'output-tokens', limit: 20, policy: 'out' },
      ],
    ],
    ['a unit we do not count in', { ratelimit: '"bytes";r=5', 'ratelimit-policy': '"bytes";q=1000;qu="content-bytes"' }, []],
    ['a bare number as the member (older draft policy)', { 'ratelimit-policy': '100;w=60' }, []],
    ['a huge reset', { ratelimit: '"x";t=86400' }, [{ kind: 'requests', resetMs: CAP_MS, policy: 'x' }]],
    ['malformed figures', { ratelimit: '"x";r=-1;t=abc, "y";r=1.5;t=-2', 'ratelimit-policy': '"x";q=NaN' }, []],
    ['an unterminated string', { ratelimit: '"x;r=1' }, []],
    ['garbage', { ratelimit: ';;,,=', 'ratelimit-policy': '"' }, []],
  ] as const)('parseRateLimitHeaders() - reads %s', (_, headers, expected) => {
    expect(parse({ ...headers }).limits).toEqual(expected);
  });

  it('parseRateLimitHeaders() - reads the older drafts: RateLimit-Limit, -Remaining, -Reset in seconds', () => {
    expect(parse({ 'ratelimit-limit': '100', 'ratelimit-remaining': '5', 'ratelimit-reset': '7' }).limits).toEqual([
      { kind: 'requests', limit: 100, remaining: 5, resetMs: 7000 },
    ]);
    // The limit with its policies attached, as some drafts wrote it: the first figure is the limit.
    expect(parse({ 'ratelimit-limit': '100, 100;w=60, 1000;w=86400' }).limits).toEqual([{ kind: 'requests', limit: 100 }]);
    expect(parse({ 'ratelimit-reset': '3600' }).limits).toEqual([{ kind: 'requests', resetMs: CAP_MS }]);
    expect(parse({ 'ratelimit-limit': 'many', 'ratelimit-remaining': '-1', 'ratelimit-reset': 'soon' }).limits).toEqual([]);
  });

  it('parseRateLimitHeaders() - reads the older drafts: RateLimit as a dictionary', () => {
    expect(parse({ ratelimit: 'limit=100, remaining=50, reset=30' }).limits).toEqual([
      { kind: 'requests', limit: 100, remaining: 50, resetMs: 30_000 },
    ]);
    expect(parse({ RateLimit: 'Remaining=5;w=60' }).limits).toEqual([{ kind: 'requests', remaining: 5 }]);
    expect(parse({ ratelimit: 'limit=x, remaining=-3' }).limits).toEqual([]);
  });
});

describe('parseRateLimitHeaders() - all styles', () => {
  it('parseRateLimitHeaders() - reads several styles at once, OpenAI then Anthropic then IETF', () => {
    const info = parse({
      'retry-after': '1',
      ratelimit: '"p";r=1',
      'anthropic-ratelimit-requests-remaining': '2',
      'x-ratelimit-remaining-requests': '3',
    });
    expect(info).toEqual({
      retryAfterMs: 1000,
      limits: [
        { kind: 'requests', remaining: 3 },
        { kind: 'requests', remaining: 2 },
        { kind: 'requests', remaining: 1, policy: 'p' },
      ],
    });
  });

  it('parseRateLimitHeaders() - never throws, never yields NaN, a negative or a duration over the cap', () => {
    const names = [
      'retry-after',
      'retry-after-ms',
      'x-ratelimit-limit-requests',
      'x-ratelimit-remaining-tokens',
      'x-ratelimit-reset-requests',
      'anthropic-ratelimit-requests-limit',
      'anthropic-ratelimit-output-tokens-reset',
      'ratelimit',
      'ratelimit-policy',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
    ];
    const value = fc.oneof(
      fc.string(),
      fc.double().map(String),
      fc.integer().map(String),
      fc.bigInt().map(String),
      fc.date({ noInvalidDate: true }).map((date) => date.toUTCString()),
      fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
      fc.constantFrom('-1', 'NaN', 'Infinity', '1e309', '"a";r=-1;t=1e9', '1h-2m', '6m0s', 'limit=1, reset=9e99'),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), value), fc.integer({ min: 0, max: 120_000 }), (headers, capMs) => {
        expectSane(parseRateLimitHeaders(headers, { nowMs: NOW_MS, maxRetryAfterMs: capMs }), capMs);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('formatRateLimitHeaders()', () => {
  const requests: LimitSnapshot = { kind: 'requests', limit: 3, remaining: 1, resetMs: 400 };

  it('formatRateLimitHeaders() - writes OpenAI headers', () => {
    expect(formatRateLimitHeaders('openai', [requests, { kind: 'tokens', limit: 1000, remaining: 10, resetMs: 3_723_500 }])).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '400ms',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '10',
      'x-ratelimit-reset-tokens': '1h2m3.5s',
    });
  });

  it.each([
    [0, '0s'],
    [0.2, '1ms'],
    [399.2, '400ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1005, '1.005s'],
    [1500, '1.5s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [360_000, '6m0s'],
    [3_600_000, '1h0m0s'],
    [3_723_500, '1h2m3.5s'],
  ])('formatRateLimitHeaders() - writes an OpenAI reset of %j ms as %j', (resetMs, expected) => {
    expect(formatRateLimitHeaders('openai', [{ ...requests, resetMs }])['x-ratelimit-reset-requests']).toBe(expected);
  });

  it('formatRateLimitHeaders() - writes Anthropic headers, resets as timestamps from nowMs', () => {
    expect(
      formatRateLimitHeaders('anthropic', [requests, { kind: 'input-tokens', limit: 5000, remaining: 4000, resetMs: 12_000 }], undefined, {
        nowMs: NOW_MS,
      }),
    ).toEqual({
      'anthropic-ratelimit-requests-limit': '3',
      'anthropic-ratelimit-requests-remaining': '1',
      'anthropic-ratelimit-requests-reset': '2025-01-01T00:00:00.400Z',
      'anthropic-ratelimit-input-tokens-limit': '5000',
      'anthropic-ratelimit-input-tokens-remaining': '4000',
      'anthropic-ratelimit-input-tokens-reset': '2025-01-01T00:00:12.000Z',
    });
  });

  it('formatRateLimitHeaders() - rounds an Anthropic reset instant up, so it never comes early', () => {
    const headers = formatRateLimitHeaders('anthropic', [requests], undefined, { nowMs: NOW_MS + 0.3 });
    expect(headers['anthropic-ratelimit-requests-reset']).toBe('2025-01-01T00:00:00.401Z');
  });

  it('formatRateLimitHeaders() - writes IETF RateLimit and RateLimit-Policy, resets in whole seconds rounded up', () => {
    expect(formatRateLimitHeaders('ietf', [requests, { kind: 'tokens', limit: 40_000, remaining: 39_000, resetMs: 2000 }])).toEqual({
      'ratelimit-policy': '"requests";q=3, "tokens";q=40000;qu="tokens"',
      ratelimit: '"requests";r=1;t=1, "tokens";r=39000;t=2',
    });
  });

  it('formatRateLimitHeaders() - writes nothing in the Gemini style, not even retry-after: its 429 says the wait in the body', () => {
    expect(formatRateLimitHeaders('gemini', [requests, { kind: 'tokens', limit: 40_000, remaining: 39_000, resetMs: 2000 }], 1234)).toEqual(
      {},
    );
    expect(parseRateLimitHeaders({ 'retry-after': '2' }, { styles: ['gemini'] })).toEqual({ retryAfterMs: 2000, limits: [] });
  });

  it.each(SPOKEN_STYLES)('formatRateLimitHeaders() - adds retry-after and retry-after-ms (%s)', (style) => {
    expect(formatRateLimitHeaders(style, [], 1234)).toEqual({ 'retry-after': '2', 'retry-after-ms': '1234' });
    expect(formatRateLimitHeaders(style, [], 999.2)).toEqual({ 'retry-after': '1', 'retry-after-ms': '1000' });
    expect(formatRateLimitHeaders(style, [], 0)).toEqual({ 'retry-after': '0', 'retry-after-ms': '0' });
    expect(formatRateLimitHeaders(style, [])).toEqual({});
  });

  it('formatRateLimitHeaders() - throws TypeError for what the style cannot say or bad values', () => {
    const bad: [HeaderStyle, LimitSnapshot[], number | undefined, RegExp][] = [
      [
        'openai',
        [{ ...requests, kind: 'input-tokens' }],
        undefined,
        /kind \(openai style\) to be one of "requests", "tokens", got "input-tokens"/,
      ],
      ['anthropic', [{ ...requests, kind: 'words' as LimitKind }], undefined, /got "words"/],
      ['ietf', [requests, requests], undefined, /each kind to be given at most once, got "requests twice"/],
      ['openai', [{ ...requests, remaining: -1 }], undefined, /remaining to be an integer >= 0, got -1/],
      ['openai', [{ ...requests, limit: 2.5 }], undefined, /limit to be an integer >= 0, got 2.5/],
      ['openai', [{ ...requests, resetMs: Number.NaN }], undefined, /resetMs to be a finite number >= 0 \(ms\), got NaN/],
      ['openai', [{ ...requests, resetMs: -1 }], undefined, /resetMs.*got -1/],
      ['openai', [], -5, /retryAfterMs to be a finite number >= 0 \(ms\), got -5/],
      ['openai', [], Infinity, /retryAfterMs.*got Infinity/],
      ['aws' as HeaderStyle, [], undefined, /style to be one of "openai", "anthropic", "azure", "gemini", "ietf", got "aws"/],
      ['openai', null as never, undefined, /status to be an array, got null/],
      ['openai', [null as never], undefined, /each status to be an object/],
    ];
    for (const [style, status, retryAfterMs, message] of bad) {
      expect(() => formatRateLimitHeaders(style, status, retryAfterMs), String(message)).toThrow(TypeError);
      expect(() => formatRateLimitHeaders(style, status, retryAfterMs)).toThrow(message);
    }
  });

  it('isHeaderStyle() - accepts only the style names', () => {
    expect(HEADER_STYLES).toEqual(['openai', 'anthropic', 'azure', 'gemini', 'ietf']);
    expect(isHeaderStyle('ietf')).toBe(true);
    expect(isHeaderStyle('aws')).toBe(false);
    expect(isHeaderStyle(undefined)).toBe(false);
  });
});

describe('parseRateLimitHeaders(formatRateLimitHeaders()) - round trips', () => {
  const snapshot = (kind: LimitKind) =>
    fc.record({
      kind: fc.constant(kind),
      limit: fc.nat({ max: 10_000_000 }),
      remaining: fc.nat({ max: 10_000_000 }),
      resetMs: fc.nat({ max: 3_600_000 }),
    });
  const snapshots = (kinds: readonly LimitKind[]) =>
    fc.subarray([...kinds], { minLength: 0 }).chain((chosen) => fc.tuple(...chosen.map(snapshot)));
  const roundTrip = (style: HeaderStyle, status: readonly LimitSnapshot[], retryAfterMs: number | undefined, nowMs: number) =>
    parseRateLimitHeaders(formatRateLimitHeaders(style, status, retryAfterMs, { nowMs }), { nowMs, maxRetryAfterMs: 10_000_000 });
  const stripPolicy = (limits: LimitStatus[]) => limits.map(({ policy: _, ...rest }) => rest);

  it.each([
    ['openai', ['requests', 'tokens']],
    ['anthropic', LIMIT_KINDS],
  ] as const)('parse(format(x)) - gives x back exactly in the %s style (whole ms)', (style, kinds) => {
    fc.assert(
      fc.property(
        snapshots(kinds),
        fc.option(fc.nat({ max: 600_000 }), { nil: undefined }),
        fc.integer({ min: 0, max: 4e12 }),
        (status, retryAfterMs, nowMs) => {
          const info = roundTrip(style, status, retryAfterMs, nowMs);
          // Their limits are per minute, said by the style rather than by a header.
          expect(info.limits).toEqual(status.map((entry) => ({ ...entry, windowMs: 60_000 })));
          expect(info.retryAfterMs).toBe(retryAfterMs);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('parse(format(x)) - gives x back in the ietf style, resets rounded up to whole seconds', () => {
    fc.assert(
      fc.property(snapshots(LIMIT_KINDS), fc.option(fc.nat({ max: 600_000 }), { nil: undefined }), (status, retryAfterMs) => {
        const info = roundTrip('ietf', status, retryAfterMs, NOW_MS);
        expect(stripPolicy(info.limits)).toEqual(status.map((entry) => ({ ...entry, resetMs: Math.ceil(entry.resetMs / 1000) * 1000 })));
        expect(info.limits.map((entry) => entry.policy)).toEqual(status.map((entry) => entry.kind));
        expect(info.retryAfterMs).toBe(retryAfterMs);
      }),
      { numRuns: 500 },
    );
  });

  it.each(SPOKEN_STYLES)('parse(format(x)) - rounds fractional ms up, never down (%s)', (style) => {
    const info = roundTrip(style, [{ kind: 'requests', limit: 3, remaining: 1, resetMs: 399.2 }], 199.5, NOW_MS + 0.7);
    expect(info.retryAfterMs).toBe(200);
    const [status] = info.limits;
    expect(status!.resetMs).toBeGreaterThanOrEqual(399.2);
    expect(status!.resetMs).toBeLessThanOrEqual(style === 'ietf' ? 1000 : 401);
  });
});
