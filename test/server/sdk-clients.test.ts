// The official SDKs against `LlmServer` on loopback: what anyone's OpenAI or Anthropic code sees.
import Anthropic from '@anthropic-ai/sdk';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
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
    expect(error.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(error.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    // A minute per request: the token comes back in just under 60 s.
    expect(Number(error.headers.get('retry-after-ms'))).toBeGreaterThan(55_000);
    expect(Number(error.headers.get('retry-after-ms'))).toBeLessThanOrEqual(60_000);
    expect(error.headers.get('retry-after')).toBe('60');

    const other = await call(openai(url, 'key-two'));
    expect(other.data.choices[0]!.message.content).toBe('Hi.');
    expect(other.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
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
    expect(error.headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
    expect(error.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(error.headers.get('retry-after')).toBe('60');
    expect(error.headers.get('retry-after-ms')).toBeNull();

    const other = await call(anthropic(url, 'key-two'));
    expect(other.data.content[0]).toEqual({ type: 'text', text: 'Hi.' });
    expect(other.response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
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
