// The limit dialects of the hosts that speak OpenAI's API (Groq, Together, Mistral, a server with
// none): each parser on its own — durations, missing fields, garbage ignored — the dialect chosen
// or guessed from a base URL's host, and the statuses each host means its own way.
import { describe, expect, it } from 'vitest';
import { parseProvidersConfig } from '../../src/config/providers-config.ts';
import { RateLimitError, ServerError } from '../../src/provider/provider.ts';
import { readRateLimits, type HeaderFormat, type HeaderSource } from '../../src/vendors/header-fields.ts';
import { failureOf, type SdkApiError } from '../../src/vendors/http-api.ts';
import { GROQ_HEADERS } from '../../src/vendors/openai/host-dialects/groq-headers.ts';
import { chooseHostDialect, HOST_DIALECTS } from '../../src/vendors/openai/host-dialects/host-dialects.ts';
import { MISTRAL_HEADERS } from '../../src/vendors/openai/host-dialects/mistral-headers.ts';
import { TOGETHER_HEADERS } from '../../src/vendors/openai/host-dialects/together-headers.ts';
import { readOpenAiErrorBody } from '../../src/vendors/openai/errors.ts';
import { createHttpProvider } from '../../src/vendors/registry.ts';

const DAY_MS = 86_400_000;
const MONTH_MS = 30 * DAY_MS;
const NOW_MS = Date.UTC(2026, 0, 1);
/** The longest wait believed: an hour. */
const MAX_WAIT_MS = 3_600_000;

function read(format: HeaderFormat, headers: HeaderSource) {
  return readRateLimits([format], headers, NOW_MS, MAX_WAIT_MS);
}

describe('GROQ_HEADERS', () => {
  it('reads requests per day and tokens per minute, resets as Go durations', () => {
    expect(
      read(GROQ_HEADERS, {
        'x-ratelimit-limit-requests': '14400',
        'x-ratelimit-remaining-requests': '14370',
        'x-ratelimit-reset-requests': '2m59.56s',
        'x-ratelimit-limit-tokens': '18000',
        'x-ratelimit-remaining-tokens': '17997',
        'x-ratelimit-reset-tokens': '7.66s',
        'retry-after': '2',
      }),
    ).toEqual({
      retryAfterMs: 2000,
      limits: [
        { kind: 'requests', limit: 14400, remaining: 14370, resetMs: 179_560, windowMs: DAY_MS },
        { kind: 'tokens', limit: 18000, remaining: 17997, resetMs: 7660, windowMs: 60_000 },
      ],
    });
  });

  it.each([
    ['6m0s', 360_000],
    ['1m30.5s', 90_500],
    ['2.4s', 2400],
    ['120ms', 120],
    ['0s', 0],
  ])('reads the reset %s as %d ms', (reset, ms) => {
    expect(read(GROQ_HEADERS, { 'x-ratelimit-reset-tokens': reset }).limits).toEqual([{ kind: 'tokens', resetMs: ms }]);
  });

  it('caps a reset past the longest wait believed', () => {
    expect(read(GROQ_HEADERS, { 'x-ratelimit-reset-requests': '23h59m0s' }).limits[0]!.resetMs).toBe(MAX_WAIT_MS);
  });

  it('drops a garbage field, keeps the rest, and never throws', () => {
    expect(
      read(GROQ_HEADERS, {
        'x-ratelimit-limit-requests': 'lots',
        'x-ratelimit-remaining-requests': '-3',
        'x-ratelimit-reset-requests': '-1s',
        'x-ratelimit-limit-tokens': '1e3',
        'x-ratelimit-remaining-tokens': '12',
        'x-ratelimit-reset-tokens': '7 seconds',
      }).limits,
    ).toEqual([{ kind: 'tokens', remaining: 12 }]);
    expect(read(GROQ_HEADERS, {}).limits).toEqual([]);
    expect(read(GROQ_HEADERS, undefined as unknown as HeaderSource).limits).toEqual([]);
  });

  it('writes what it reads: a per-minute quota restated as a day of requests', () => {
    const headers: Record<string, string> = {};
    GROQ_HEADERS.write(
      headers,
      [
        { kind: 'requests', limit: 600, remaining: 598, resetMs: 199.5 },
        { kind: 'tokens', limit: 6000, remaining: 5000, resetMs: 10_000 },
      ],
      NOW_MS,
    );
    expect(headers).toEqual({
      'x-ratelimit-limit-requests': '864000',
      'x-ratelimit-remaining-requests': '598',
      'x-ratelimit-reset-requests': '200ms',
      'x-ratelimit-limit-tokens': '6000',
      'x-ratelimit-remaining-tokens': '5000',
      'x-ratelimit-reset-tokens': '10s',
    });
    expect(read(GROQ_HEADERS, headers).limits[0]).toEqual({
      kind: 'requests',
      limit: 864_000,
      remaining: 598,
      resetMs: 200,
      windowMs: DAY_MS,
    });
  });
});

describe('TOGETHER_HEADERS', () => {
  it('reads requests and tokens per second, the reset in seconds', () => {
    expect(
      read(TOGETHER_HEADERS, {
        'x-ratelimit-limit': '10',
        'x-ratelimit-remaining': '9',
        'x-ratelimit-reset': '0.25',
        'x-tokenlimit-limit': '3333.333',
        'x-tokenlimit-remaining': '3000',
      }).limits,
    ).toEqual([
      { kind: 'requests', limit: 10, remaining: 9, resetMs: 250, windowMs: 1000 },
      { kind: 'tokens', limit: 3333.333, remaining: 3000, windowMs: 1000 },
    ]);
  });

  it("does not take OpenAI's per-minute names for its own, and drops garbage", () => {
    expect(read(TOGETHER_HEADERS, { 'x-ratelimit-limit-requests': '600', 'x-ratelimit-remaining-requests': '5' }).limits).toEqual([]);
    expect(
      read(TOGETHER_HEADERS, {
        'x-ratelimit-limit': 'NaN',
        'x-ratelimit-remaining': '4.5',
        'x-ratelimit-reset': 'soon',
        'x-tokenlimit-limit': '-1',
      }).limits,
    ).toEqual([]);
  });

  it('writes a second of a per-minute quota', () => {
    const headers: Record<string, string> = {};
    TOGETHER_HEADERS.write(headers, [{ kind: 'requests', limit: 600, remaining: 3, resetMs: 1234.2 }], NOW_MS);
    expect(headers).toEqual({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '3', 'x-ratelimit-reset': '1.235' });
  });
});

describe('MISTRAL_HEADERS', () => {
  it('reads tokens per minute and per month (30 days), no reset', () => {
    expect(
      read(MISTRAL_HEADERS, {
        'x-ratelimitbysize-limit-minute': '500000',
        'x-ratelimitbysize-remaining-minute': '499000',
        'x-ratelimitbysize-limit-month': '1000000000',
        'x-ratelimitbysize-remaining-month': '998000000',
      }).limits,
    ).toEqual([
      { kind: 'tokens', limit: 500_000, remaining: 499_000, windowMs: 60_000 },
      { kind: 'tokens', limit: 1_000_000_000, remaining: 998_000_000, windowMs: MONTH_MS },
    ]);
  });

  it('reads the month alone, and drops garbage', () => {
    expect(read(MISTRAL_HEADERS, { 'x-ratelimitbysize-remaining-month': '7' }).limits).toEqual([{ kind: 'tokens', remaining: 7 }]);
    expect(read(MISTRAL_HEADERS, { 'x-ratelimitbysize-limit-minute': '5.5', 'x-ratelimitbysize-remaining-month': '' }).limits).toEqual([]);
  });
});

describe('none', () => {
  it('reads no limits whatever the headers, but hears retry-after', () => {
    expect(read(HOST_DIALECTS.none.headers, { 'x-ratelimit-limit-requests': '600', 'retry-after': '1' })).toEqual({
      retryAfterMs: 1000,
      limits: [],
    });
  });
});

describe('chooseHostDialect', () => {
  it.each([
    ['https://api.groq.com/openai/v1', 'groq'],
    ['https://api.together.xyz/v1', 'together'],
    ['https://api.together.ai/v1', 'together'],
    ['https://API.Mistral.ai/v1', 'mistral'],
    ['https://eu.api.mistral.ai/v1', 'mistral'],
  ])('guesses %s as %s, saying the host', (baseUrl, name) => {
    const chosen = chooseHostDialect(undefined, baseUrl);
    expect(chosen.dialect.name).toBe(name);
    expect(chosen.guessedFrom).toBe(new URL(baseUrl).hostname.toLowerCase());
  });

  it.each(['https://api.openai.com/v1', 'http://localhost:8000/v1', 'http://127.0.0.1:8080/v1', 'https://notgroq.com/v1', 'nonsense'])(
    'reads %s as OpenAI, guessing nothing',
    (baseUrl) => {
      expect(chooseHostDialect(undefined, baseUrl)).toMatchObject({ dialect: { name: 'openai' }, guessedFrom: undefined });
    },
  );

  it('takes the dialect told over the host', () => {
    expect(chooseHostDialect('none', 'https://api.groq.com/openai/v1')).toMatchObject({
      dialect: { name: 'none' },
      guessedFrom: undefined,
    });
  });
});

describe('an OpenAI provider in a host dialect', () => {
  it('reads its headers in the dialect told, or guessed', () => {
    const groqHeaders = { 'x-ratelimit-limit-requests': '14400', 'x-ratelimit-remaining-requests': '10' };
    const told = createHttpProvider('openai', { apiKey: 'k', baseUrl: 'http://127.0.0.1:9/v1', headers: 'groq' });
    const guessed = createHttpProvider('openai', { apiKey: 'k', baseUrl: 'https://api.groq.com/openai/v1' });
    const plain = createHttpProvider('openai', { apiKey: 'k', baseUrl: 'http://127.0.0.1:9/v1' });
    for (const provider of [told, guessed]) expect(provider.rateLimits(groqHeaders).limits[0]!.windowMs).toBe(DAY_MS);
    expect(plain.rateLimits(groqHeaders).limits[0]!.windowMs).toBe(60_000);
    expect(told.headerDialect).toEqual({ name: 'groq', label: 'Groq', guessedFrom: undefined, statesLimits: true });
    expect(guessed.headerDialect).toMatchObject({ name: 'groq', guessedFrom: 'api.groq.com' });
    expect(plain.headerDialect).toMatchObject({ name: 'openai', guessedFrom: undefined });
    expect(plain.statesLimits).toBe(true);
    expect(createHttpProvider('openai', { apiKey: 'k', headers: 'none' }).statesLimits).toBe(false);
  });

  it('refuses a dialect it does not know, and one given to a vendor with none', () => {
    expect(() => createHttpProvider('openai', { apiKey: 'k', headers: 'grok' })).toThrow(
      /^Expected headers to be one of "openai", "groq", "together", "mistral", "none", got "grok"$/,
    );
    expect(() => createHttpProvider('anthropic', { apiKey: 'k', headers: 'groq' })).toThrow(
      /^Expected headers to be nothing for Anthropic/,
    );
  });
});

class APIError extends Error implements SdkApiError {
  constructor(
    readonly status: number | undefined,
    readonly headers: Headers | undefined,
    readonly error: unknown,
  ) {
    super(`${status}`);
  }
}
const errors = { APIError, APIConnectionError: class extends Error {}, APIConnectionTimeoutError: class extends Error {} };

function failureIn(dialect: keyof typeof HOST_DIALECTS, status: number, headers: Record<string, string> = {}): unknown {
  const { statuses } = HOST_DIALECTS[dialect];
  // The SDK hands over the error object inside the body.
  const body = { message: 'said by the host', type: 'x' };
  return failureOf(new APIError(status, new Headers(headers), body), {
    errors,
    readBody: readOpenAiErrorBody,
    apiKey: 'k',
    call: {},
    statusMeaning: (code) => statuses[code],
  });
}

describe('the statuses a host means its own way', () => {
  it("Groq's 498 is its flex tier at capacity: retried, as a server's overload", () => {
    const error = failureIn('groq', 498, { 'retry-after': '3' }) as ServerError;
    expect(error).toBeInstanceOf(ServerError);
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(3000);
    expect(error.message).toBe("498 flex tier at capacity (Groq's 498): said by the host");
    // Elsewhere a 498 is a request refused, as any 4xx.
    expect(failureIn('openai', 498)).not.toBeInstanceOf(ServerError);
  });

  it("Together's 503 (below your dynamic rate) and 429 (above it): both retried, each saying which", () => {
    const below = failureIn('together', 503) as ServerError;
    const above = failureIn('together', 429) as RateLimitError;
    expect(below).toBeInstanceOf(ServerError);
    expect(below.message).toBe('503 below your dynamic rate: the model is at capacity, not your limit: said by the host');
    expect(above).toBeInstanceOf(RateLimitError);
    expect(above.message).toBe('429 rate limited, above your dynamic rate: said by the host');
    expect([below.retryable, above.retryable]).toEqual([true, true]);
  });
});

describe('the providers file\'s "headers"', () => {
  const provider = (fields: object) =>
    parseProvidersConfig({ providers: [{ name: 'p', limits: [{ kind: 'requests', rate: 1 }], ...fields }] }, 'providers.json');

  it('chooses the dialect of an OpenAI provider', () => {
    expect(provider({ type: 'openai', headers: 'together' }).providers[0]!.api).toMatchObject({ headers: 'together' });
    expect(provider({ type: 'openai' }).providers[0]!.api!.headers).toBeUndefined();
  });

  it('refuses a value it does not know in one line naming the field and the choices', () => {
    expect(() => provider({ type: 'openai', headers: 'grok' })).toThrow(
      /^providers\.json: providers\[0\]\.headers: expected one of "openai", "groq", "together", "mistral", "none", got "grok"$/,
    );
  });

  it('refuses it on a vendor with no host dialects, and on a simulated provider', () => {
    expect(() => provider({ type: 'anthropic', headers: 'groq' })).toThrow(
      /^providers\.json: providers\[0\]\.headers: expected nothing on an "anthropic" provider \(it is for "openai"\), got "groq"$/,
    );
    expect(() => provider({ headers: 'groq' })).toThrow(/providers\[0\]\.headers: expected nothing on a simulated provider/);
  });
});
