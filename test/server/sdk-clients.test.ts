// The official SDKs against `LlmServer` on loopback: what anyone's OpenAI or Anthropic code sees.
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { get } from './http.ts';

const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: LlmServerOptions): Promise<string> {
  const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, ...options });
  servers.push(server);
  return server.listen({ port: 0 });
}

// The OpenAI SDK takes the URL up to /v1, the Anthropic SDK the host root: as they take the vendors'.
const openai = (url: string, apiKey: string, maxRetries = 0) => new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries });
const anthropic = (url: string, apiKey: string, maxRetries = 0) => new Anthropic({ apiKey, baseURL: url, maxRetries });

/** A schema no part of the server knows: a made-up invoice. */
const INVOICE = {
  type: 'object',
  properties: {
    number: { type: 'string', pattern: '^INV-\\d{6}$' },
    issued: { type: 'string', format: 'date' },
    customer: { $ref: '#/$defs/party' },
    lines: {
      type: 'array',
      minItems: 1,
      maxItems: 5,
      items: {
        type: 'object',
        properties: {
          description: { type: 'string', minLength: 3 },
          quantity: { type: 'integer', minimum: 1 },
          unitPrice: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.01 },
        },
        required: ['description', 'quantity', 'unitPrice'],
        additionalProperties: false,
      },
    },
    currency: { enum: ['EUR', 'USD', 'GBP'] },
    note: { type: ['string', 'null'] },
  },
  required: ['number', 'issued', 'customer', 'lines', 'currency', 'note'],
  additionalProperties: false,
  $defs: {
    party: {
      type: 'object',
      properties: { name: { type: 'string' }, email: { type: 'string', format: 'email' } },
      required: ['name', 'email'],
      additionalProperties: false,
    },
  },
};
const validateInvoice = new Ajv2020({
  strict: false,
  formats: { date: /^\d{4}-\d{2}-\d{2}$/, email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/ },
}).compile(INVOICE);

const ASK = 'Extract the invoice: Acme Ltd ordered three widgets at 4.50 EUR each.';

describe('the official openai client against serve', () => {
  it('gets structured output for a schema the server never saw', async () => {
    const url = await start({});
    const completion = await openai(url, 'sk-test').chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: ASK }],
      response_format: { type: 'json_schema', json_schema: { name: 'invoice', schema: INVOICE, strict: true } },
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const value = JSON.parse(completion.choices[0]!.message.content!);
    expect(validateInvoice(value), JSON.stringify(validateInvoice.errors)).toBe(true);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
  });

  it('gets 429 and the headers on the third call within a burst of 2; a second key is unaffected', async () => {
    const url = await start({ rate: 1 / 60, burst: 2 });
    const client = openai(url, 'key-one');
    const call = (on: OpenAI) => on.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi.' }] }).withResponse();
    const first = await call(client);
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    await call(client);
    const refused = await call(client).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const error = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.status).toBe(429);
    expect(error.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
    // One a minute, as the header says it.
    expect(error.headers.get('x-ratelimit-limit-requests')).toBe('1');
    expect(error.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    // A minute per request: the token comes back in just under 60 s.
    expect(Number(error.headers.get('retry-after-ms'))).toBeGreaterThan(55_000);
    expect(Number(error.headers.get('retry-after-ms'))).toBeLessThanOrEqual(60_000);
    expect(error.headers.get('retry-after')).toBe('60');

    const other = await call(openai(url, 'key-two'));
    expect(other.data.choices[0]!.message.content).toBe('Hi.');
    expect(other.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
  });

  it('with apiKeys, a wrong key gets AuthenticationError (invalid_api_key), on Chat Completions, Responses and models alike; an accepted key is served', async () => {
    const url = await start({ apiKeys: ['sk-served-a1b2c3d4'] });
    const wrong = 'sk-wrong-e5f6a7b8c9d0';
    const client = openai(url, wrong, 2);
    const calls: (() => Promise<unknown>)[] = [
      () => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi.' }] }),
      () => client.responses.create({ model: 'm', input: 'Hi.' }),
      async () => client.models.list(),
    ];
    for (const call of calls) {
      const refused = await call().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
      const error = refused as InstanceType<typeof OpenAI.AuthenticationError>;
      expect(error.status).toBe(401);
      expect(error.code).toBe('invalid_api_key');
      expect(error.message).toMatch(/^401 Incorrect API key provided: sk-\*+c9d0\. /);
      expect(error.message).not.toContain(wrong);
    }
    // 401 is not retried: one request each, though two retries were allowed.
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_requests_total{route="/v1/chat/completions",status="401",key=""} 1');
    const served = await openai(url, 'sk-served-a1b2c3d4').chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi.' }],
    });
    expect(served.choices[0]!.message.content).toBe('Hi.');
  });

  it("the SDK's own retry waits our retry-after-ms and then succeeds", async () => {
    // Two per burst, then one every 2 s: the third call is refused, its retry-after ~2 s; the SDK's own backoff
    // (at most 0.5 s before a first retry) would be refused again, and with one retry allowed the call would fail.
    const url = await start({ rate: 0.5, burst: 2 });
    const client = openai(url, 'key-retry', 1);
    const startedMs = performance.now();
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `Call ${i}.` }] });
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(2000);
    const { text } = await get(`${url}/metrics`);
    const key = keyFingerprint('key-retry');
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="200",key="${key}"} 3`);
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="429",key="${key}"} 1`);
  });
});

describe('the official @anthropic-ai/sdk client against serve', () => {
  it('gets a forced tool call whose input fits a schema the server never saw', async () => {
    const url = await start({});
    const message = await anthropic(url, 'sk-ant-test').messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 512,
      messages: [{ role: 'user', content: ASK }],
      tools: [{ name: 'record_invoice', description: 'Record an invoice.', input_schema: INVOICE as Anthropic.Tool.InputSchema }],
      tool_choice: { type: 'tool', name: 'record_invoice' },
    });
    expect(message.stop_reason).toBe('tool_use');
    const block = message.content[0]!;
    expect(block.type).toBe('tool_use');
    if (block.type !== 'tool_use') return;
    expect(block.name).toBe('record_invoice');
    expect(validateInvoice(block.input), JSON.stringify(validateInvoice.errors)).toBe(true);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  });

  it('gets 429 and the headers on the third call within a burst of 2; a second key is unaffected', async () => {
    const url = await start({ rate: 1 / 60, burst: 2 });
    const call = (on: Anthropic) =>
      on.messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'Hi.' }] }).withResponse();
    const client = anthropic(url, 'key-one');
    const first = await call(client);
    expect(first.response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
    await call(client);
    const refused = await call(client).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const error = refused as InstanceType<typeof Anthropic.RateLimitError>;
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(error.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect(error.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(error.headers.get('retry-after')).toBe('60');
    expect(error.headers.get('retry-after-ms')).toBeNull();

    const other = await call(anthropic(url, 'key-two'));
    expect(other.data.content[0]).toEqual({ type: 'text', text: 'Hi.' });
    expect(other.response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
  });

  it('with apiKeys, a wrong key gets AuthenticationError (invalid x-api-key) on messages and countTokens; an accepted key is served', async () => {
    const url = await start({ apiKeys: ['sk-ant-served-a1b2c3d4'] });
    const wrong = 'sk-ant-wrong-e5f6a7b8c9d0';
    const client = anthropic(url, wrong, 2);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hi.' }];
    const calls: (() => Promise<unknown>)[] = [
      () => client.messages.create({ model: 'm', max_tokens: 16, messages }),
      () => client.messages.countTokens({ model: 'm', messages }),
    ];
    for (const call of calls) {
      const refused = await call().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
      const error = refused as InstanceType<typeof Anthropic.AuthenticationError>;
      expect(error.status).toBe(401);
      expect(error.error).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      expect(error.message).not.toContain(wrong);
    }
    // 401 is not retried: one request, though two retries were allowed.
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_requests_total{route="/v1/messages",status="401",key=""} 1');
    const served = await anthropic(url, 'sk-ant-served-a1b2c3d4').messages.create({ model: 'm', max_tokens: 16, messages });
    expect(served.content[0]).toEqual({ type: 'text', text: 'Hi.' });
  });

  it("the SDK's own retry waits our retry-after and then succeeds", async () => {
    const url = await start({ rate: 0.5, burst: 2 });
    const client = anthropic(url, 'key-retry', 1);
    const startedMs = performance.now();
    for (let i = 0; i < 3; i++)
      await client.messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: `Call ${i}.` }] });
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(2000);
    const { text } = await get(`${url}/metrics`);
    const key = keyFingerprint('key-retry');
    expect(text).toContain(`serve_requests_total{route="/v1/messages",status="200",key="${key}"} 3`);
    expect(text).toContain(`serve_requests_total{route="/v1/messages",status="429",key="${key}"} 1`);
  });
});

/** Objects, arrays with bounds, enums, bounded numbers and nullable fields, as a zod schema. */
const PLACE = z.object({
  city: z.string(),
  country: z.enum(['FR', 'IT', 'DE']),
  visitors: z.number().int().min(0).max(10_000_000),
  rating: z.number().min(1).max(5),
  nearby: z
    .array(z.object({ name: z.string(), km: z.number().min(0) }))
    .min(1)
    .max(3),
  closedOn: z.string().nullable(),
});
const LOUVRE = 'Where is the Louvre? It is in Paris, on the Seine.';

describe("the official SDKs' helpers against serve", () => {
  const fast = () => start({ rate: Infinity, tokensPerSecond: 10_000 });

  it('openai chat.completions.stream: content events, then the final completion with its usage', async () => {
    const url = await fast();
    const stream = openai(url, 'sk-h').chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: LOUVRE }],
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const completion = await stream.finalChatCompletion();
    expect(deltas.length).toBeGreaterThan(3);
    expect(completion.choices[0]!.message.content).toBe(deltas.join(''));
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage!.completion_tokens).toBe(deltas.length);
  });

  it('openai chat.completions.parse with zodResponseFormat: message.parsed', async () => {
    const url = await fast();
    const completion = await openai(url, 'sk-h').chat.completions.parse({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: LOUVRE }],
      response_format: zodResponseFormat(PLACE, 'place'),
    });
    const parsed = completion.choices[0]!.message.parsed!;
    expect(PLACE.parse(parsed)).toEqual(parsed);
  });

  it('openai responses.create and responses.stream: output_text, a parsed text.format, the final response', async () => {
    const url = await fast();
    const client = openai(url, 'sk-h');
    const created = await client.responses.create({ model: 'gpt-4o-mini', input: LOUVRE });
    expect(created.output_text).toBe('Where is the Louvre? It is in Paris, on the Seine.');
    expect((await client.responses.retrieve(created.id)).output_text).toBe(created.output_text);
    const parsed = await client.responses.parse({ model: 'gpt-4o-mini', input: LOUVRE, text: { format: zodTextFormat(PLACE, 'place') } });
    expect(PLACE.parse(parsed.output_parsed)).toEqual(parsed.output_parsed);

    const stream = client.responses.stream({ model: 'gpt-4o-mini', input: LOUVRE });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe(deltas.join(''));
    expect(deltas.length).toBeGreaterThan(3);
  });

  it('openai models.retrieve: the model named', async () => {
    const url = await fast();
    expect(await openai(url, 'sk-h').models.retrieve('gpt-4o-mini')).toMatchObject({ id: 'gpt-4o-mini', object: 'model' });
  });

  it('anthropic messages.stream: text events, then the final message with its usage', async () => {
    const url = await fast();
    const stream = anthropic(url, 'sk-h').messages.stream({
      model: 'claude-haiku-4-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: LOUVRE }],
    });
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const message = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(3);
    expect(message.content).toMatchObject([{ type: 'text', text: deltas.join('') }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(deltas.length);
  });

  it('anthropic messages.parse with zodOutputFormat: parsed_output; messages.countTokens: the input tokens', async () => {
    const url = await fast();
    const client = anthropic(url, 'sk-h');
    const message = await client.messages.parse({
      model: 'claude-haiku-4-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: LOUVRE }],
      output_config: { format: zodOutputFormat(PLACE) },
    });
    expect(PLACE.parse(message.parsed_output)).toEqual(message.parsed_output);
    const counted = await client.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: LOUVRE }] });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
    expect(await client.models.retrieve('claude-haiku-4-5')).toMatchObject({ id: 'claude-haiku-4-5', type: 'model' });
  });

  it('openai with maxRetries: 2 rides out two 429s in a row, waiting the retry-after-ms each time', async () => {
    // One request every 250 ms, burst 1: of three at once one goes through, and each of the two
    // refused is told to wait until a token is back; the last of them is refused twice.
    const url = await start({ rate: 4, burst: 1 });
    const client = openai(url, 'key-twice', 2);
    const startedMs = performance.now();
    const answers = await Promise.all(
      [0, 1, 2].map((i) => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `Call ${i}.` }] })),
    );
    expect(answers.map((answer) => answer.choices[0]!.message.content)).toEqual(['Call 0.', 'Call 1.', 'Call 2.']);
    // The third token is there 500 ms after the first: not before.
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(500);
    const { text } = await get(`${url}/metrics`);
    const key = keyFingerprint('key-twice');
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="200",key="${key}"} 3`);
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="429",key="${key}"} 3`);
  });
});
