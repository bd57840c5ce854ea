// The Gemini provider against a scripted server speaking the Gemini API: the request it sends (the
// key in x-goog-api-key, the schema as responseJsonSchema), the answer and its usage (thoughts as
// output), and each failure as Gemini words it — MAX_TOKENS, SAFETY, a blocked prompt, a 429's
// RetryInfo, a key refused with a 400 API_KEY_INVALID or a 403, 5xx, a model not found.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  MalformedOutputError,
  NetworkError,
  NotAnApiError,
  RateLimitError,
  RefusalError,
  ServerError,
  TimeoutError,
  TruncatedOutputError,
  type LlmRequest,
} from '../../src/provider/provider.ts';
import { durationMs, readGeminiErrorBody } from '../../src/vendors/gemini/errors.ts';
import { createHttpProvider } from '../../src/vendors/registry.ts';

type Answer = { status: number; body: unknown; headers?: Record<string, string>; delayMs?: number; raw?: string };

let url: string;
let next: Answer[] = [];
const seen: { url: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let text = '';
  req.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  req.on('end', () => {
    seen.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(text || '{}') as Record<string, unknown> });
    const answer = next.shift() ?? { status: 200, body: ok('{"summary":"fine"}') };
    setTimeout(() => {
      res.writeHead(answer.status, { 'content-type': answer.raw === undefined ? 'application/json' : 'text/html', ...answer.headers });
      res.end(answer.raw ?? JSON.stringify(answer.body));
    }, answer.delayMs ?? 0);
  });
});
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const SCHEMA = { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'], additionalProperties: false };
const request: LlmRequest = { task: 'summarize', articleId: 'a1', prompt: 'Summarize: rates held.', schema: SCHEMA };
const provider = () => createHttpProvider('gemini', { apiKey: 'gemini-test-key-123', baseUrl: url, model: 'gemini-2.5-flash' });

function ok(text: string, finishReason = 'STOP', usage: Record<string, number> = { promptTokenCount: 21, candidatesTokenCount: 9 }) {
  return {
    candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason, index: 0 }],
    usageMetadata: usage,
    modelVersion: 'gemini-2.5-flash-001',
    responseId: 'resp-1',
  };
}

const googleError = (code: number, status: string, message: string, details: unknown[] = []) => ({
  error: { code, message, status, ...(details.length > 0 && { details }) },
});

async function failureOf(answer: Answer): Promise<unknown> {
  next = [answer];
  return provider()
    .call(request)
    .catch((error: unknown) => error);
}

describe('the Gemini provider', () => {
  it('posts generateContent with the key in x-goog-api-key and the schema as responseJsonSchema, titled with the task; reads the answer and its usage', async () => {
    next = [
      {
        status: 200,
        body: ok('{"summary":"fine"}', 'STOP', {
          promptTokenCount: 21,
          candidatesTokenCount: 9,
          thoughtsTokenCount: 30,
          cachedContentTokenCount: 5,
        }),
      },
    ];
    seen.length = 0;
    const response = await provider().call(request, { maxOutputTokens: 123 });
    expect(response.output).toEqual({ summary: 'fine' });
    // Thoughts are billed as output; the cached tokens are among the prompt's.
    expect(response.usage).toEqual({ inputTokens: 21, outputTokens: 39, cacheReadTokens: 5 });
    expect(response.model).toBe('gemini-2.5-flash-001');
    expect(response.finishReasons).toEqual(['STOP']);
    const [sent] = seen;
    expect(sent!.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(sent!.headers['x-goog-api-key']).toBe('gemini-test-key-123');
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Summarize: rates held.' }] }],
      generationConfig: {
        responseMimeType: 'application/json',
        responseJsonSchema: { title: 'summarize', ...SCHEMA },
        maxOutputTokens: 123,
      },
    });
  });

  it('sends a repair’s conversation with the model’s turn as role model', async () => {
    seen.length = 0;
    next = [{ status: 200, body: ok('{"summary":"fixed"}') }];
    await provider().call({
      ...request,
      messages: [
        { role: 'assistant', content: '{"summary":1}' },
        { role: 'user', content: 'Fix it.' },
      ],
    });
    expect((seen[0]!.body.contents as { role: string }[]).map((content) => content.role)).toEqual(['user', 'model', 'user']);
  });

  it('reads MAX_TOKENS as cut off, SAFETY and a blocked prompt as refusals, an unfit answer as malformed', async () => {
    expect(await failureOf({ status: 200, body: ok('{"summ', 'MAX_TOKENS') })).toBeInstanceOf(TruncatedOutputError);
    for (const reason of ['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT']) {
      expect(await failureOf({ status: 200, body: ok('', reason) }), reason).toBeInstanceOf(RefusalError);
    }
    const blocked = await failureOf({
      status: 200,
      body: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 4 } },
    });
    expect(blocked).toBeInstanceOf(RefusalError);
    expect((blocked as Error).message).toBe('the prompt was blocked (SAFETY)');
    expect(await failureOf({ status: 200, body: ok('{"summary":3}') })).toBeInstanceOf(MalformedOutputError);
    expect(await failureOf({ status: 200, body: {}, raw: '<html>hello</html>' })).toBeInstanceOf(NotAnApiError);
  });

  it('waits as a 429’s RetryInfo says (no header), and says it is rate limited', async () => {
    const error = await failureOf({
      status: 429,
      body: googleError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', [
        { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [] },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1.5s' },
      ]),
    });
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(1500);
    expect((error as RateLimitError).retryable).toBe(true);
  });

  it('stops the run on a key refused with a 400 API_KEY_INVALID or a 403, never quoting the key', async () => {
    const invalid = await failureOf({
      status: 400,
      body: googleError(400, 'INVALID_ARGUMENT', 'API key not valid: gemini-test-key-123', [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
      ]),
    });
    expect(invalid).toBeInstanceOf(AuthenticationError);
    expect((invalid as AuthenticationError).stopsRun).toBe(true);
    expect((invalid as Error).message).toBe('400 the API key was refused (API_KEY_INVALID)');
    const denied = await failureOf({ status: 403, body: googleError(403, 'PERMISSION_DENIED', 'denied') });
    expect(denied).toBeInstanceOf(AuthenticationError);
    // Any other 400 is the request's fault.
    expect(await failureOf({ status: 400, body: googleError(400, 'INVALID_ARGUMENT', 'bad schema') })).toBeInstanceOf(BadRequestError);
  });

  it('retries 500 INTERNAL and 503 UNAVAILABLE as server errors; a model not found is a 404 that is the request’s', async () => {
    const internal = await failureOf({ status: 500, body: googleError(500, 'INTERNAL', 'oops') });
    expect(internal).toBeInstanceOf(ServerError);
    expect((internal as ServerError).retryable).toBe(true);
    expect(await failureOf({ status: 503, body: googleError(503, 'UNAVAILABLE', 'overloaded') })).toBeInstanceOf(ServerError);
    const missing = await failureOf({
      status: 404,
      body: googleError(404, 'NOT_FOUND', 'models/nope is not found for API version v1beta'),
    });
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).status).toBe(404);
  });

  it('times out an answer slower than the call’s timeout; says a connection refused is a network error', async () => {
    next = [{ status: 200, body: ok('{"summary":"late"}'), delayMs: 500 }];
    const started = performance.now();
    const late = await provider()
      .call(request, { timeoutMs: 50 })
      .catch((error: unknown) => error);
    expect(late).toBeInstanceOf(TimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const nowhere = createHttpProvider('gemini', { apiKey: 'k', baseUrl: `http://127.0.0.1:${port}`, model: 'm' });
    const refused = await nowhere.call(request).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NetworkError);
    expect((refused as NetworkError).message).toMatch(/ECONNREFUSED/);
  });

  it('rejects with the signal’s reason when the caller aborts mid-call', async () => {
    next = [{ status: 200, body: ok('{"summary":"late"}'), delayMs: 500 }];
    const controller = new AbortController();
    const reason = new Error('stopped by the caller');
    const pending = provider()
      .call(request, { signal: controller.signal })
      .catch((error: unknown) => error);
    setTimeout(() => controller.abort(reason), 20);
    expect(await pending).toBe(reason);
  });

  it('warms up on a canned answer, sending nothing', async () => {
    seen.length = 0;
    const warm = provider();
    await warm.ready();
    expect(seen).toEqual([]);
    expect(warm.target).toMatchObject({ vendor: 'gcp.gemini', model: 'gemini-2.5-flash', serverAddress: '127.0.0.1' });
  });
});

describe('Gemini error bodies', () => {
  it('read RetryInfo durations as ms, and nothing else', () => {
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('30s')).toBe(30_000);
    expect(durationMs('0.000001s')).toBeCloseTo(0.001);
    for (const bad of ['1.5', '-1s', '1m', 3, null]) expect(durationMs(bad), String(bad)).toBeUndefined();
    expect(readGeminiErrorBody({ error: { status: 'RESOURCE_EXHAUSTED', message: 'm' } })).toEqual({
      codes: ['RESOURCE_EXHAUSTED'],
      message: 'm',
      means: 'rate-limited',
    });
    expect(readGeminiErrorBody('not json')).toEqual({ codes: [undefined], message: undefined });
  });
});
