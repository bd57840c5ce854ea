import { inspect } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  createHttpProvider,
  MalformedOutputError,
  NetworkError,
  QuotaExhaustedError,
  RateLimitError,
  RefusalError,
  ServerError,
  TimeoutError,
  TruncatedOutputError,
  type LlmRequest,
  type Provider,
} from '../../src/index.ts';
import { AnthropicProvider, OpenAiProvider } from '../../src/vendors/index.ts';
import {
  type Cue,
  RATE_LIMIT_HEADERS,
  refusedUrl,
  type ScriptedApiServer,
  startScriptedApiServer,
  USAGE,
  type Vendor,
} from './scripted-api-server.ts';
import { builtinRequest } from '../requests.ts';

const KEY = 'sk-scripted-0123456789-never-shown';

const summarize: LlmRequest = builtinRequest('summarize', 'a1', 'Rain', 'Rain fell on the city all day.');
const sentiment: LlmRequest = builtinRequest('sentiment', 'a1', 'Rain', 'Rain fell on the city all day.');

/** Everything an error could show of itself: message, stack, causes, headers, own fields. */
function everythingOf(error: unknown): string {
  return `${inspect(error, { depth: 10, showHidden: true })} ${JSON.stringify(error)}`;
}

async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    expect(everythingOf(error)).not.toContain(KEY);
    return error as Error;
  }
  throw new Error('the call succeeded');
}

interface Ending {
  readonly type: abstract new (...args: never[]) => Error;
  readonly status?: number;
  readonly retryable: boolean;
  readonly stopsRun?: boolean;
  readonly message: RegExp;
}

/** How each failure ends, the same for both vendors unless a vendor's own is given. */
const ENDINGS: readonly [Cue, Ending, Partial<Record<Vendor, Partial<Ending>>>?][] = [
  ['401', { type: AuthenticationError, status: 401, retryable: false, stopsRun: true, message: /^401 the API key was refused \(\w+\)$/ }],
  ['403', { type: AuthenticationError, status: 403, retryable: false, stopsRun: true, message: /^403 the API key was refused/ }],
  ['400', { type: BadRequestError, status: 400, retryable: false, message: /^400 request rejected: Invalid schema for 'summarize'/ }],
  [
    '404',
    {
      type: BadRequestError,
      status: 404,
      retryable: false,
      message: /^404 request rejected: The model does not exist or the key \[key\] may not see it$/,
    },
  ],
  ['billing', { type: QuotaExhaustedError, status: 402, retryable: false, stopsRun: true, message: /^402 no credit/ }],
  ['500', { type: ServerError, status: 500, retryable: true, message: /^500 server error: The server had an error$/ }],
  ['503-no-retry', { type: ServerError, status: 503, retryable: false, message: /^503 server error/ }],
  ['529', { type: ServerError, status: 529, retryable: true, message: /^529 server error: Overloaded$/ }],
  ['malformed', { type: MalformedOutputError, retryable: true, message: /^the response body is not JSON/ }],
  ['off-schema', { type: MalformedOutputError, retryable: true, message: /does not fit the summarize schema/ }],
  ['truncated', { type: TruncatedOutputError, retryable: true, message: /cut off/ }],
  ['refusal', { type: RefusalError, retryable: false, message: /refused/ }],
  ['reset', { type: NetworkError, retryable: true, message: /^network error \(ECONNRESET\)/ }],
];

describe.each<Vendor>(['openai', 'anthropic'])('the %s provider against a scripted server', (vendor) => {
  let server: ScriptedApiServer;
  let provider: Provider;
  const create = (baseUrl: string, apiKey = KEY) => createHttpProvider(vendor, { apiKey, baseUrl, model: 'scripted-model' });
  beforeAll(async () => {
    server = await startScriptedApiServer({ apiKey: KEY, slowMs: 5000 });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.cue = 'ok';
    server.requests.length = 0;
    provider = create(vendor === 'openai' ? server.openAiUrl : server.url);
  });

  it('.ready() - resolves once the SDK and the validators are loaded, with no request sent', async () => {
    await expect(provider.ready!()).resolves.toBeUndefined();
    expect(server.requests).toHaveLength(0);
  });

  it('.call() - answers each task from its structured output, with the usage and the headers', async () => {
    const summary = await provider.call(summarize);
    expect(summary.output).toEqual({ summary: 'A scripted summary.', keywords: ['scripted', 'server'] });
    expect(summary.usage).toEqual(USAGE);
    expect(summary.headers).toMatchObject(RATE_LIMIT_HEADERS[vendor]);
    expect((await provider.call(sentiment)).output).toEqual({ sentiment: 'positive', score: 0.5 });
  });

  it('.ready() - loads the SDK and runs each task through it to a canned answer, sending nothing; once', async () => {
    const ready = provider.ready!();
    expect(provider.ready!()).toBe(ready);
    await expect(ready).resolves.toBeUndefined();
    await expect(create(await refusedUrl()).ready!()).resolves.toBeUndefined();
    expect(server.requests).toHaveLength(0);
    expect((await provider.call(summarize)).output).toEqual({
      summary: 'A scripted summary.',
      keywords: ['scripted', 'server'],
    });
    expect(server.requests).toHaveLength(1);
  });

  it('.call() - sends one request per call, the SDK retrying nothing, with the key, the schema, the max tokens and the timeout', async () => {
    server.cue = '500';
    await failureOf(provider.call(summarize, { maxOutputTokens: 123, timeoutMs: 4321.5 }));
    expect(server.requests).toHaveLength(1);
    const [{ headers, body }] = server.requests as [(typeof server.requests)[0]];
    expect(headers['x-stainless-retry-count']).toBe('0');
    expect(headers['x-stainless-timeout']).toBe('4');
    expect(body.model).toBe('scripted-model');
    expect(headers.authorization).toBe(`Bearer ${KEY}`);
    if (vendor === 'openai') {
      expect(body.max_completion_tokens).toBe(123);
      expect(body.response_format).toEqual({
        type: 'json_schema',
        json_schema: {
          name: 'summarize',
          description: expect.any(String),
          schema: expect.objectContaining({ type: 'object' }),
          strict: true,
        },
      });
    } else {
      expect(body.max_tokens).toBe(123);
      expect(body.tools).toEqual([
        { name: 'summarize', description: expect.any(String), input_schema: expect.objectContaining({ type: 'object' }) },
      ]);
      expect(body.tool_choice).toEqual({ type: 'tool', name: 'summarize' });
    }
  });

  it.each(ENDINGS)('.call() - a %s ends as specified, the key nowhere in the error', async (cue, ending, perVendor) => {
    server.cue = cue;
    const expected = { ...ending, ...perVendor?.[vendor] };
    const error = await failureOf(provider.call(summarize));
    expect(error).toBeInstanceOf(expected.type);
    expect(error.message).toMatch(expected.message);
    expect(error).toMatchObject({ retryable: expected.retryable, stopsRun: expected.stopsRun ?? false, status: expected.status });
  });

  it('.call() - a 429 is a rate limit with the retry-after and the headers', async () => {
    server.cue = '429';
    const error = (await failureOf(provider.call(summarize))) as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, retryable: true, retryAfterMs: vendor === 'openai' ? 120 : 1000 });
    expect(error.headers).toMatchObject(RATE_LIMIT_HEADERS[vendor]);
  });

  it('.call() - a wrong key is refused and the run stops; the key the server quoted back is not shown', async () => {
    const error = await failureOf(create(vendor === 'openai' ? server.openAiUrl : server.url, `${KEY}-wrong`).call(summarize));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(everythingOf(error)).not.toContain(`${KEY}-wrong`);
  });

  it('.call() - an answer slower than the timeout is a TimeoutError, after the timeout and well before the answer', async () => {
    server.cue = 'slow';
    const startMs = performance.now();
    const error = await failureOf(provider.call(summarize, { timeoutMs: 300 }));
    const elapsedMs = performance.now() - startMs;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ retryable: false, timeoutMs: 300, message: 'no answer within 300 ms' });
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(4000);
  });

  it('.call() - an aborted signal rejects with its reason', async () => {
    server.cue = 'slow';
    const controller = new AbortController();
    const reason = new Error('the article was cancelled');
    setTimeout(() => controller.abort(reason), 50);
    await expect(provider.call(summarize, { signal: controller.signal })).rejects.toBe(reason);
  });

  it('.call() - a refused connection is a NetworkError with ECONNREFUSED, never sent (nothing to bill)', async () => {
    const error = (await failureOf(create(`${await refusedUrl()}/v1`).call(summarize))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ code: 'ECONNREFUSED', retryable: true, neverSent: true });
    expect(error.message).toMatch(/^network error \(ECONNREFUSED\): connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });

  it('.call() - a host that does not resolve is a NetworkError with the resolver code, never sent', async () => {
    // `.invalid` never resolves (RFC 2606); without a resolver at all the code is EAI_AGAIN.
    const error = (await failureOf(create('http://news-processor.invalid/v1').call(summarize))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.code).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    expect(error.neverSent).toBe(true);
  });

  it('.call() - a TLS failure is a NetworkError with the TLS code, never sent', async () => {
    // TLS spoken to a plain HTTP server: the handshake fails.
    const error = (await failureOf(create(server.url.replace('http:', 'https:')).call(summarize))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.code).toMatch(/SSL|TLS|EPROTO/);
    expect(error.neverSent).toBe(true);
  });

  it('.call() - a port fetch never connects to (9, discard) is a NetworkError, never sent', async () => {
    const error = (await failureOf(create('http://127.0.0.1:9/v1').call(summarize))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toMatch(/bad port/);
    expect(error.neverSent).toBe(true);
  });

  it('.call() - a connection reset once the request was written is a NetworkError whose fate is unknown (perhaps billed)', async () => {
    server.cue = 'reset';
    const error = (await failureOf(provider.call(summarize))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(server.requests).toHaveLength(1);
    expect(error.neverSent).toBe(false);
  });
});

describe('the openai provider, on what only OpenAI says', () => {
  let server: ScriptedApiServer;
  beforeAll(async () => {
    server = await startScriptedApiServer({ apiKey: KEY });
  });
  afterAll(() => server.close());

  it.each<[Cue, Ending]>([
    [
      'quota',
      { type: QuotaExhaustedError, status: 429, retryable: false, stopsRun: true, message: /^429 no credit or quota left.*current quota/ },
    ],
    ['content-filter', { type: RefusalError, retryable: false, message: /^the content filter stopped the answer$/ }],
  ])('.call() - a %s ends as specified', async (cue, ending) => {
    server.cue = cue;
    const error = await failureOf(new OpenAiProvider({ apiKey: KEY, baseUrl: server.openAiUrl }).call(summarize));
    expect(error).toBeInstanceOf(ending.type);
    expect(error.message).toMatch(ending.message);
    expect(error).toMatchObject({ retryable: ending.retryable, stopsRun: ending.stopsRun ?? false, status: ending.status });
  });
});

describe.each([
  ['OpenAiProvider', (options: never) => new OpenAiProvider(options)],
  ['AnthropicProvider', (options: never) => new AnthropicProvider(options)],
])('new %s()', (_, create) => {
  it.each([
    [{}, /^Expected apiKey to be a non-empty string, got undefined$/],
    [{ apiKey: '' }, /^Expected apiKey to be a non-empty string, got an empty string$/],
    [{ apiKey: KEY, baseUrl: 'localhost:8000/v1' }, /^Expected baseUrl to be an http:\/\/ or https:\/\/ URL, got "localhost:8000\/v1"$/],
    [{ apiKey: KEY, baseUrl: 'ftp://example.com' }, /^Expected baseUrl to be an http:\/\/ or https:\/\/ URL/],
    [{ apiKey: KEY, model: '' }, /^Expected model to be a non-empty string, got ""$/],
    [{ apiKey: KEY, name: 42 }, /^Expected name to be a non-empty string, got 42$/],
  ])('refuses %j with a TypeError that never shows the key', (options, message) => {
    expect(() => create(options as never)).toThrow(TypeError);
    expect(() => create(options as never)).toThrow(message);
  });

  it('takes the vendor defaults, keeping the key out of sight', () => {
    const provider = create({ apiKey: KEY } as never);
    expect(inspect(provider, { depth: 10, showHidden: true }) + JSON.stringify(provider)).not.toContain(KEY);
  });
});
