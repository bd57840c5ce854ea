// Streamed answers on every chat route, read off the wire: each vendor's event sequence, the pacing
// (exact on a ManualClock, held on the real one), and the ways a stream ends early.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/mechanisms.ts';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { summarize } from '../../src/simulator/text-analysis.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { get } from './http.ts';
import { type SseEvent, StreamReader, postStream } from './sse.ts';

const INSTANT = { minLatencyMs: 0, maxLatencyMs: 0 };
const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: LlmServerOptions = {}): Promise<{ server: LlmServer; url: string }> {
  const server = new LlmServer({ simulation: INSTANT, tokensPerSecond: Infinity, ...options });
  servers.push(server);
  return { server, url: await server.listen({ port: 0 }) };
}

const TEXT = 'The city council approved a new budget on Monday. Residents welcomed the plan. Critics warned of debt.';
const ANSWER = summarize('', TEXT);
const openAiKey = { authorization: 'Bearer key-s' };
const anthropicKey = { 'x-api-key': 'key-s', 'anthropic-version': '2023-06-01' };
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: TEXT }], stream: true };
const MESSAGES = { model: 'claude-haiku-4-5', max_tokens: 256, messages: [{ role: 'user', content: TEXT }], stream: true };
const RESPONSES = { model: 'gpt-4o-mini', input: TEXT, stream: true };
const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, rating: { type: 'integer', minimum: 1, maximum: 5 } },
  required: ['city', 'rating'],
  additionalProperties: false,
};

const contentOf = (events: SseEvent[]) =>
  events
    .filter((e) => e.data !== '[DONE]')
    .flatMap((e) => e.data.choices ?? [])
    .map((choice: any) => choice.delta.content ?? '')
    .join('');

describe('streamed chat completions', () => {
  it('a role chunk, one chunk per token, finish_reason in the last, the usage chunk when asked, then [DONE]', async () => {
    // 0.05/s (3 a minute): no token comes back while the request is answered, however slow the machine.
    const { url } = await start({ rate: 0.05, burst: 5 });
    const { status, headers, events } = await postStream(
      `${url}/v1/chat/completions`,
      { ...CHAT, stream_options: { include_usage: true } },
      openAiKey,
    );
    expect(status).toBe(200);
    expect(headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(headers).toMatchObject({ 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '4' });
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => e.data);
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'gpt-4o-mini', id: chunks[0].id });
    expect(chunks[0].choices).toEqual([
      { index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null },
    ]);
    expect(contentOf(events)).toBe(ANSWER);
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completion_tokens).toBe(chunks.length - 3);
    expect(chunks.at(-2).choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    // Every chunk before the last carries usage: null when the usage chunk was asked for.
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
  });

  it('without include_usage no chunk has a usage field; n: 2 streams both choices', async () => {
    const { url } = await start();
    const { events } = await postStream(`${url}/v1/chat/completions`, { ...CHAT, n: 2 }, openAiKey);
    const chunks = events.slice(0, -1).map((e) => e.data);
    for (const chunk of chunks) expect(chunk).not.toHaveProperty('usage');
    for (const index of [0, 1]) {
      const text = chunks
        .flatMap((c) => c.choices.filter((choice: any) => choice.index === index).map((choice: any) => choice.delta.content ?? ''))
        .join('');
      expect(text).toBe(ANSWER);
    }
    expect(chunks.slice(-2).map((c) => c.choices[0].finish_reason)).toEqual(['stop', 'stop']);
  });

  it('a tool call: its id and name first, then the arguments in pieces that make JSON fitting the parameters', async () => {
    const { url } = await start();
    const tools = [{ type: 'function', function: { name: 'rate_city', parameters: SCHEMA } }];
    const { events } = await postStream(`${url}/v1/chat/completions`, { ...CHAT, tools, tool_choice: 'required' }, openAiKey);
    const chunks = events.slice(0, -1).map((e) => e.data);
    expect(chunks[0].choices[0].delta).toMatchObject({
      role: 'assistant',
      content: null,
      tool_calls: [{ index: 0, type: 'function', function: { name: 'rate_city', arguments: '' } }],
    });
    expect(chunks[0].choices[0].delta.tool_calls[0].id).toMatch(/^call_/);
    const args = chunks
      .slice(1, -1)
      .map((c) => c.choices[0].delta.tool_calls[0].function.arguments)
      .join('');
    expect(new Ajv2020().validate(SCHEMA, JSON.parse(args))).toBe(true);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });
});

describe('streamed Anthropic messages', () => {
  it('message_start, a text block of text_deltas, message_delta with the stop reason and usage, message_stop', async () => {
    const { url } = await start();
    const { events, headers } = await postStream(`${url}/v1/messages`, MESSAGES, anthropicKey);
    expect(headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(headers['anthropic-ratelimit-requests-limit']).toBe('600');
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events[0]!.data.message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [],
      stop_reason: null,
    });
    expect(events[1]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const deltas = events.filter((e) => e.event === 'content_block_delta');
    expect(deltas.map((e) => e.data.delta.text).join('')).toBe(ANSWER);
    expect(events.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: deltas.length },
    });
  });

  it('a tool: a tool_use block whose input_json_deltas make an input fitting its schema', async () => {
    const { url } = await start();
    const tools = [{ name: 'rate_city', input_schema: SCHEMA }];
    const { events } = await postStream(`${url}/v1/messages`, { ...MESSAGES, tools, tool_choice: { type: 'any' } }, anthropicKey);
    expect(events[1]!.data.content_block).toMatchObject({ type: 'tool_use', name: 'rate_city', input: {} });
    const json = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => e.data.delta.partial_json)
      .join('');
    expect(new Ajv2020().validate(SCHEMA, JSON.parse(json))).toBe(true);
    expect(events.at(-2)!.data.delta.stop_reason).toBe('tool_use');
  });

  it('a stop sequence ends the stream before it, naming it', async () => {
    const { url } = await start();
    const { events } = await postStream(`${url}/v1/messages`, { ...MESSAGES, stop_sequences: ['Monday'] }, anthropicKey);
    const text = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => e.data.delta.text)
      .join('');
    expect(text).toBe(ANSWER.slice(0, ANSWER.indexOf('Monday')));
    expect(events.at(-2)!.data.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'Monday' });
  });
});

describe('streamed Responses', () => {
  it('response.created … output_text deltas … response.completed, numbered in order', async () => {
    const { url } = await start();
    const { events } = await postStream(`${url}/v1/responses`, RESPONSES, openAiKey);
    for (const [index, e] of events.entries()) expect(e.data).toMatchObject({ type: e.event, sequence_number: index });
    const names = [...new Set(events.map((e) => e.event))];
    expect(names).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[0]!.data.response).toMatchObject({ object: 'response', status: 'in_progress', output: [] });
    const text = events
      .filter((e) => e.event === 'response.output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    expect(text).toBe(ANSWER);
    const done = events.at(-1)!.data.response;
    expect(done).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: ANSWER }] }],
    });
    expect(done.usage.output_tokens).toBe(events.filter((e) => e.event === 'response.output_text.delta').length);
    // What was streamed can be fetched again.
    const kept = await get(`${url}/v1/responses/${done.id}`, openAiKey);
    expect(kept.body).toEqual(done);
  });

  it('a function call: the item, its arguments in deltas, then done', async () => {
    const { url } = await start();
    const tools = [{ type: 'function', name: 'rate_city', parameters: SCHEMA, strict: true }];
    const { events } = await postStream(`${url}/v1/responses`, { ...RESPONSES, tools }, openAiKey);
    expect(events[2]!.data.item).toMatchObject({ type: 'function_call', name: 'rate_city', arguments: '', status: 'in_progress' });
    const args = events
      .filter((e) => e.event === 'response.function_call_arguments.delta')
      .map((e) => e.data.delta)
      .join('');
    expect(events.find((e) => e.event === 'response.function_call_arguments.done')!.data.arguments).toBe(args);
    expect(new Ajv2020().validate(SCHEMA, JSON.parse(args))).toBe(true);
  });
});

describe('stream pacing', () => {
  it('ManualClock: the first token at once, each next one 1/tokensPerSecond later, none early', async () => {
    const clock = new ManualClock();
    const { url } = await start({ clock, tokensPerSecond: 10 });
    const reader = new StreamReader(
      await fetch(`${url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...anthropicKey },
        body: JSON.stringify(MESSAGES),
      }),
    );
    const deltas = (events: SseEvent[]) => events.filter((e) => e.event === 'content_block_delta').length;
    expect(deltas(await reader.until((events) => deltas(events) >= 1))).toBe(1);
    expect(deltas(await reader.settle(50))).toBe(1);
    await clock.advance(99);
    expect(deltas(await reader.settle(50))).toBe(1);
    await clock.advance(1);
    expect(deltas(await reader.until((events) => deltas(events) >= 2))).toBe(2);
    await clock.advance(300);
    expect(deltas(await reader.until((events) => deltas(events) >= 5))).toBe(5);
    expect(deltas(await reader.settle(50))).toBe(5);
    await clock.advance(10_000);
    const events = await reader.until(() => false);
    expect(events.at(-1)!.event).toBe('message_stop');
  });

  it('real clock: a stream of n tokens at 100 tokens/s takes at least (n - 1) / 100 s after the latency', async () => {
    const { url } = await start({ tokensPerSecond: 100, simulation: { minLatencyMs: 100, maxLatencyMs: 100 } });
    const startedMs = performance.now();
    const { events } = await postStream(`${url}/v1/chat/completions`, CHAT, openAiKey);
    const elapsedMs = performance.now() - startedMs;
    const tokens = events.filter((e) => e.data !== '[DONE]' && e.data.choices[0]?.delta.content).length;
    expect(tokens).toBeGreaterThan(5);
    expect(elapsedMs).toBeGreaterThanOrEqual(100 + ((tokens - 1) * 1000) / 100 - 5);
    expect(elapsedMs).toBeLessThan(100 + (tokens * 1000) / 100 + 2000);
  });
});

describe('a stream that ends early', () => {
  it('the client goes away: the generation ends there, counted as client_closed', async () => {
    const { server, url } = await start({ tokensPerSecond: 2 });
    const reader = new StreamReader(
      await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...openAiKey },
        body: JSON.stringify(CHAT),
      }),
    );
    await reader.until((events) => events.length >= 2);
    await reader.cancel();
    const deadline = performance.now() + 5000;
    while (server.inFlight > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    // At 2 tokens/s the stream had seconds to go: it ended because the client left.
    expect(server.inFlight).toBe(0);
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_streams_total{route="/v1/chat/completions",outcome="client_closed"} 1');
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="200",key="${keyFingerprint('key-s')}"} 1`);
  });

  it('failMidStream: the connection drops after some tokens, without the end; counted as dropped', async () => {
    const { url } = await start({ failMidStream: 1, simulation: { ...INSTANT, seed: 3 } });
    for (const [path, body, key] of [
      ['/v1/chat/completions', CHAT, openAiKey],
      ['/v1/messages', MESSAGES, anthropicKey],
      ['/v1/responses', RESPONSES, openAiKey],
    ] as const) {
      const response = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...key },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
    }
    const { text } = await get(`${url}/metrics`);
    for (const route of ['/v1/chat/completions', '/v1/messages', '/v1/responses'])
      expect(text).toContain(`serve_streams_total{route="${route}",outcome="dropped"} 1`);
  });

  it('an outage that begins mid-stream: the vendor’s error event, then the end; counted as failed', async () => {
    const clock = new ManualClock();
    const { url } = await start({ clock, tokensPerSecond: 10, simulation: { ...INSTANT, outage: { startMs: 250, endMs: 60_000 } } });
    const open = async (path: string, body: unknown, key: Record<string, string>) =>
      new StreamReader(
        await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...key },
          body: JSON.stringify(body),
        }),
      );
    const readers = [
      await open('/v1/chat/completions', CHAT, openAiKey),
      await open('/v1/messages', MESSAGES, anthropicKey),
      await open('/v1/responses', RESPONSES, openAiKey),
    ];
    const carriesToken = (e: SseEvent) =>
      e.data !== '[DONE]' &&
      (e.data.choices?.[0]?.delta.content || e.event === 'content_block_delta' || e.event === 'response.output_text.delta');
    for (const reader of readers) await reader.until((events) => events.some(carriesToken));
    await clock.advance(1000);
    const [chat, messages, responses] = await Promise.all(readers.map((reader) => reader.until(() => false)));
    expect(chat!.at(-1)!.data.error).toMatchObject({ type: 'server_error', message: expect.stringContaining('outage') });
    expect(messages!.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', error: { type: 'overloaded_error' } } });
    expect(responses!.at(-1)).toMatchObject({
      event: 'response.failed',
      data: { response: { status: 'failed', error: { code: 'server_error' } } },
    });
    // Three tokens went out (at 0, 100 and 200 ms); the fourth was due in the outage.
    expect(contentOf(chat!).length).toBeGreaterThan(0);
    expect(messages!.filter((e) => e.event === 'content_block_delta')).toHaveLength(3);
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_streams_total{route="/v1/messages",outcome="failed"} 1');
  });
});
