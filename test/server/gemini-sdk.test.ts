// Google's official SDK (@google/genai 2.x) against `serve`: generateContent with structured
// output, streamGenerateContent, the failures as Gemini words them (a refused key a 400
// API_KEY_INVALID, a quota a 429 RESOURCE_EXHAUSTED with its wait in RetryInfo and no header), and
// the Batch API — inline requests, batches.get, :cancel — on a ManualClock.
import { ApiError, GoogleGenAI } from '@google/genai';
import { afterEach, describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { decodeGemini } from '../../src/vendors/gemini/decode.ts';
import { encodeGemini } from '../../src/vendors/gemini/encode.ts';
import { ARTICLES, batchServers, requestsOf } from './batch-fixtures.ts';

const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: LlmServerOptions = {}): Promise<string> {
  const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, ...options });
  servers.push(server);
  return server.listen({ port: 0 });
}

// The SDK takes the host root, as it takes Google's; its own retries are off unless asked for.
const genai = (url: string, apiKey = 'gemini-key-1') => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } });

const SCHEMA = {
  type: 'object',
  properties: { headline: { type: 'string', minLength: 3 }, score: { type: 'integer', minimum: 1, maximum: 5 } },
  required: ['headline', 'score'],
  additionalProperties: false,
};

/** The JSON of an ApiError's message: the SDK keeps the error body there. */
const bodyOf = (error: unknown) => JSON.parse((error as Error).message) as { error: { code: number; status: string; details?: unknown[] } };

describe('generateContent through @google/genai', () => {
  it('answers a responseJsonSchema with JSON that fits it, with usageMetadata and STOP', async () => {
    const url = await start();
    const response = await genai(url).models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Rate this headline: markets rally as the central bank holds rates.',
      config: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA, maxOutputTokens: 200 },
    });
    const value = JSON.parse(response.text ?? '') as { headline: string; score: number };
    expect(value.headline.length).toBeGreaterThanOrEqual(3);
    expect(value.score).toBeGreaterThanOrEqual(1);
    expect(response.candidates?.[0]?.finishReason).toBe('STOP');
    expect(response.modelVersion).toBe('gemini-2.5-flash');
    expect(response.usageMetadata?.promptTokenCount).toBeGreaterThan(0);
    expect(response.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
  });

  it('streams with streamGenerateContent: the pieces join into the answer, the last says STOP', async () => {
    const url = await start();
    const chunks = [];
    for await (const chunk of await genai(url).models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'Summarize: the storm flooded the old town.',
      config: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA },
    })) {
      chunks.push(chunk);
    }
    expect(chunks.length).toBeGreaterThan(1);
    const value = JSON.parse(chunks.map((chunk) => chunk.text ?? '').join('')) as { score: number };
    expect(value.score).toBeGreaterThanOrEqual(1);
    expect(chunks.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
  });

  it('refuses a key it does not accept with 400 INVALID_ARGUMENT and an ErrorInfo API_KEY_INVALID', async () => {
    const url = await start({ apiKeys: ['gemini-key-1'] });
    const error = await genai(url, 'not-a-key')
      .models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    const { error: status } = bodyOf(error);
    expect(status).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'API key not valid. Please pass a valid API key.' });
    expect(status.details).toContainEqual(expect.objectContaining({ reason: 'API_KEY_INVALID' }));
  });

  it('answers a quota with 429 RESOURCE_EXHAUSTED, its wait in a RetryInfo detail and in no header', async () => {
    const url = await start({ rate: 1, burst: 1 });
    const ask = () =>
      fetch(`${url}/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'gemini-key-1', 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
      });
    expect((await ask()).status).toBe(200);
    const refused = await ask();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect([...refused.headers.keys()].filter((name) => name.includes('ratelimit'))).toEqual([]);
    const { error } = (await refused.json()) as { error: { status: string; details: { '@type': string; retryDelay?: string }[] } };
    expect(error.status).toBe('RESOURCE_EXHAUSTED');
    const retryInfo = error.details.find((detail) => detail['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
    // A token a second: the next is due within a second.
    expect(Number.parseFloat(retryInfo!.retryDelay!)).toBeGreaterThan(0);
    expect(Number.parseFloat(retryInfo!.retryDelay!)).toBeLessThanOrEqual(1);
    expect(retryInfo!.retryDelay).toMatch(/^\d+(\.\d+)?s$/);
  });

  it('refuses a field the API does not have, in its words', async () => {
    const url = await start();
    const response = await fetch(`${url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'gemini-key-1', 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }], frobnicate: true }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: 'Invalid JSON payload received. Unknown name "frobnicate": Cannot find field.',
      },
    });
  });
});

const startBatches = batchServers((url) => genai(url));

const inlined = (byId: Map<string, LlmRequest>) =>
  [...byId].map(([key, request]) => {
    const body = encodeGemini(request, 'gemini-2.5-flash', 300);
    return {
      contents: body.contents as never,
      config: { responseMimeType: 'application/json', responseJsonSchema: body.generationConfig.responseJsonSchema, maxOutputTokens: 300 },
      metadata: { key },
    };
  });

describe('the Gemini Batch API through @google/genai', () => {
  it('runs inline requests: RUNNING, then SUCCEEDED with every response by its key, each fitting its schema', async () => {
    const { client, clock } = await startBatches();
    const byId = requestsOf(ARTICLES.slice(0, 2));
    const created = await client.batches.create({ model: 'gemini-2.5-flash', src: inlined(byId), config: { displayName: 'two articles' } });
    expect(created.name).toMatch(/^batches\/[a-z0-9]{20}$/);
    expect(created.state).toBe('JOB_STATE_RUNNING');
    expect(created.displayName).toBe('two articles');
    await clock.advance(9999);
    expect((await client.batches.get({ name: created.name! })).state).toBe('JOB_STATE_RUNNING');
    await clock.advance(1);
    const done = await client.batches.get({ name: created.name! });
    expect(done.state).toBe('JOB_STATE_SUCCEEDED');
    const responses = done.dest?.inlinedResponses ?? [];
    expect(responses.map((row) => (row.metadata as { key: string }).key).sort()).toEqual([...byId.keys()].sort());
    for (const row of responses) {
      const request = byId.get((row.metadata as { key: string }).key)!;
      const answer = await decodeGemini(request, row.response as object, { headers: {} }, 300);
      expect(answer.usage?.inputTokens).toBeGreaterThan(0);
    }
  });

  it('cancels: the batch ends CANCELLED, the rows not finished without a response', async () => {
    const { client, clock } = await startBatches();
    const created = await client.batches.create({ model: 'gemini-2.5-flash', src: inlined(requestsOf(ARTICLES.slice(0, 2))) });
    await clock.advance(5000);
    await client.batches.cancel({ name: created.name! });
    const ended = await client.batches.get({ name: created.name! });
    expect(ended.state).toBe('JOB_STATE_CANCELLED');
    expect(ended.dest?.inlinedResponses?.length).toBe(2);
  });

  it('refuses a batch past the key’s queue with 429 RESOURCE_EXHAUSTED', async () => {
    const { client } = await startBatches({ batchQueueTokens: 10 });
    const error = await client.batches
      .create({ model: 'gemini-2.5-flash', src: inlined(requestsOf(ARTICLES.slice(0, 1))) })
      .catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(429);
    expect(bodyOf(error).error.status).toBe('RESOURCE_EXHAUSTED');
  });

  it('says a batch it does not have is not found', async () => {
    const { client } = await startBatches();
    const error = await client.batches.get({ name: 'batches/nosuchbatch' }).catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(404);
  });
});
