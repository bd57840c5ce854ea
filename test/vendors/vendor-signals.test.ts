// What a vendor's answers say besides the answer — its limits, a wait, a refused key — read by the
// vendor (its provider, its error bodies), not by the gate: each vendor in its own dialect.
import { describe, expect, it } from 'vitest';
import { AuthenticationError, BadRequestError, RateLimitError, type ResponseHeaders } from '../../src/provider/provider.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { failureOf, type ErrorBody, type SdkApiError } from '../../src/vendors/http-api.ts';
import { formatRateLimitHeaders } from '../../src/vendors/rate-limit-headers.ts';
import { createHttpProvider } from '../../src/vendors/registry.ts';

class APIError extends Error implements SdkApiError {
  constructor(
    readonly status: number | undefined,
    readonly headers: Headers | undefined,
    readonly error: unknown,
  ) {
    super(`${status}`);
  }
}
class APIConnectionError extends Error {}
class APIConnectionTimeoutError extends APIConnectionError {}
const errors = { APIError, APIConnectionError, APIConnectionTimeoutError };

/** What a vendor whose error bodies carry their meaning (`{ reason, waitMs }`) makes of an SDK's error. */
function failure(status: number, body: { reason?: string; waitMs?: number }, headers: Record<string, string> = {}) {
  const readBody = (raw: unknown): ErrorBody => {
    const { reason, waitMs } = raw as { reason?: string; waitMs?: number };
    return {
      codes: [reason],
      message: 'said by the body',
      means: reason === 'KEY_INVALID' ? 'refused-key' : reason === 'EXHAUSTED' ? 'rate-limited' : undefined,
      retryAfterMs: waitMs,
    };
  };
  return failureOf(new APIError(status, new Headers(headers), body), { errors, readBody, apiKey: 'k', call: {} });
}

describe('an error body that says what the status does not', () => {
  it('a key refused with a 400 stops the run as a refused key does, its reason kept', () => {
    const error = failure(400, { reason: 'KEY_INVALID' });
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).message).toBe('400 the API key was refused (KEY_INVALID)');
    expect((error as AuthenticationError).stopsRun).toBe(true);
    expect(failure(400, { reason: 'OTHER' })).toBeInstanceOf(BadRequestError);
  });

  it('a wait said only in the body is the rate limit’s retry-after, capped as a header’s; a header wins', () => {
    const limited = failure(429, { reason: 'EXHAUSTED', waitMs: 1500 }) as RateLimitError;
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited.retryAfterMs).toBe(1500);
    expect((failure(429, { waitMs: 3_600_000 }) as RateLimitError).retryAfterMs).toBe(60_000);
    expect((failure(429, { waitMs: 1500 }, { 'retry-after': '2' }) as RateLimitError).retryAfterMs).toBe(2000);
    // A vendor that answers its rate limit with another status says so in the body.
    const other = failure(503, { reason: 'EXHAUSTED', waitMs: 10 }) as RateLimitError;
    expect(other).toBeInstanceOf(RateLimitError);
    expect(other.status).toBe(503);
  });
});

describe('Provider.rateLimits: each provider reads its own dialect', () => {
  const snapshot = [{ kind: 'requests' as const, limit: 600, remaining: 7, resetMs: 100 }];
  const both: ResponseHeaders = {
    ...formatRateLimitHeaders('openai', snapshot),
    ...formatRateLimitHeaders('anthropic', [{ ...snapshot[0]!, remaining: 3 }]),
    'retry-after': '2',
  };

  it("an OpenAI provider (and Azure's) reads OpenAI's headers, an Anthropic one Anthropic's; both hear retry-after", () => {
    const openai = createHttpProvider('openai', { apiKey: 'k' });
    const azure = createHttpProvider('azure', { apiKey: 'k', baseUrl: 'https://x.openai.azure.com', model: 'd', apiVersion: '2024-10-21' });
    const anthropic = createHttpProvider('anthropic', { apiKey: 'k' });
    for (const provider of [openai, azure]) {
      expect(provider.rateLimits(both)).toMatchObject({ retryAfterMs: 2000, limits: [{ kind: 'requests', limit: 600, remaining: 7 }] });
    }
    expect(anthropic.rateLimits(both)).toMatchObject({ retryAfterMs: 2000, limits: [{ kind: 'requests', limit: 600, remaining: 3 }] });
  });

  it('an HTTP provider reads the IETF fields a proxy in front of it may add', () => {
    const ietf = formatRateLimitHeaders('ietf', [{ ...snapshot[0]!, windowMs: 60_000 }]);
    expect(createHttpProvider('anthropic', { apiKey: 'k' }).rateLimits(ietf).limits).toMatchObject([
      { kind: 'requests', limit: 600, remaining: 7, policy: 'requests', windowMs: 60_000 },
    ]);
  });

  it('the simulated provider reads the style it writes, and states nothing without one', async () => {
    const provider = new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0, headerStyle: 'anthropic', quota: { rate: 2, burst: 4 } });
    expect(provider.rateLimits(both).limits).toMatchObject([{ kind: 'requests', remaining: 3 }]);
    expect(new SimulatedProvider().rateLimits(both)).toEqual({ limits: [] });
  });
});

describe('Provider.schemaProblem: a vendor says which schemas it refuses', () => {
  const loose = { type: 'object', properties: { a: { type: 'string' } } };
  const strict = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };

  it("OpenAI's and Azure's strict mode refuse a loose schema, each in its own name; Anthropic takes it", () => {
    expect(createHttpProvider('openai', { apiKey: 'k' }).schemaProblem(loose)).toMatch(
      /^OpenAI's strict mode refuses its schema: .*additionalProperties/,
    );
    const azure = createHttpProvider('azure', { apiKey: 'k', baseUrl: 'https://x.openai.azure.com', model: 'd', apiVersion: 'v' });
    expect(azure.schemaProblem(loose)).toMatch(/^Azure OpenAI's strict mode refuses its schema: /);
    expect(createHttpProvider('openai', { apiKey: 'k' }).schemaProblem(strict)).toBeUndefined();
    expect(createHttpProvider('anthropic', { apiKey: 'k' }).schemaProblem(loose)).toBeUndefined();
  });
});
