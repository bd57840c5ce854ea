// The request parameters serve acts on, off the wire: n, stop sequences, log probabilities,
// Anthropic's output_config.format, count_tokens and the models by id.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens } from 'gpt-tokenizer';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { summarize } from '../../src/simulator/text-analysis.ts';
import { describedConstraints, withDescribedConstraints } from '../../src/server/described-constraints.ts';
import { get, post } from './http.ts';

const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: LlmServerOptions = {}): Promise<string> {
  const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, ...options });
  servers.push(server);
  return server.listen({ port: 0 });
}

const TEXT = 'The city council approved a new budget on Monday. Residents welcomed the plan. Critics warned of debt.';
const ANSWER = summarize('', TEXT);
const openAiKey = { authorization: 'Bearer key-p' };
const anthropicKey = { 'x-api-key': 'key-p', 'anthropic-version': '2023-06-01' };
const CHAT = { model: 'm', messages: [{ role: 'user', content: TEXT }] };
const MESSAGES = { model: 'm', max_tokens: 256, messages: [{ role: 'user', content: TEXT }] };

describe('n', () => {
  it('n choices, indexed, each counted in the usage', async () => {
    const url = await start();
    const one = (await post(`${url}/v1/chat/completions`, CHAT, openAiKey)).body;
    const three = (await post(`${url}/v1/chat/completions`, { ...CHAT, n: 3 }, openAiKey)).body;
    expect(three.choices.map((choice: any) => [choice.index, choice.message.content, choice.finish_reason])).toEqual([
      [0, ANSWER, 'stop'],
      [1, ANSWER, 'stop'],
      [2, ANSWER, 'stop'],
    ]);
    expect(three.usage.completion_tokens).toBe(3 * one.usage.completion_tokens);
    expect(three.usage.prompt_tokens).toBe(one.usage.prompt_tokens);
  });
});

describe('stop sequences', () => {
  it('OpenAI stop: the text ends before the first match, finish_reason stop', async () => {
    const url = await start();
    const { body } = await post(`${url}/v1/chat/completions`, { ...CHAT, stop: ['plan', 'Monday'] }, openAiKey);
    expect(body.choices[0]).toMatchObject({ message: { content: ANSWER.slice(0, ANSWER.indexOf('Monday')) }, finish_reason: 'stop' });
    expect(body.usage.completion_tokens).toBe(countTokens(ANSWER.slice(0, ANSWER.indexOf('Monday'))));
    const single = await post(`${url}/v1/chat/completions`, { ...CHAT, stop: 'council' }, openAiKey);
    expect(single.body.choices[0].message.content).toBe('The city ');
    const absent = await post(`${url}/v1/chat/completions`, { ...CHAT, stop: ['zebra'] }, openAiKey);
    expect(absent.body.choices[0].message.content).toBe(ANSWER);
  });

  it('Anthropic stop_sequences: stop_reason stop_sequence, and which one', async () => {
    const url = await start();
    const { body } = await post(`${url}/v1/messages`, { ...MESSAGES, stop_sequences: ['welcomed', 'budget'] }, anthropicKey);
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'The city council approved a new ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'budget',
    });
  });

  it('the output limit before the stop sequence wins: cut off, no stop sequence', async () => {
    const url = await start();
    const { body } = await post(`${url}/v1/messages`, { ...MESSAGES, max_tokens: 2, stop_sequences: ['Monday'] }, anthropicKey);
    expect(body).toMatchObject({ stop_reason: 'max_tokens', stop_sequence: null });
  });
});

describe('logprobs', () => {
  it('each token with a log probability ≤ 0 and top_logprobs alternatives whose probabilities sum to at most 1', async () => {
    const url = await start();
    const { body } = await post(`${url}/v1/chat/completions`, { ...CHAT, logprobs: true, top_logprobs: 4 }, openAiKey);
    const { content } = body.choices[0].logprobs;
    expect(content.map((entry: any) => entry.token).join('')).toBe(ANSWER);
    expect(content).toHaveLength(body.usage.completion_tokens);
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.bytes).toEqual([...new TextEncoder().encode(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(4);
      expect(entry.top_logprobs[0]).toEqual({ token: entry.token, logprob: entry.logprob, bytes: entry.bytes });
      expect(entry.top_logprobs.reduce((sum: number, alternative: any) => sum + Math.exp(alternative.logprob), 0)).toBeLessThanOrEqual(
        1 + 1e-9,
      );
    }
    // The same answer, the same figures.
    expect(
      (await post(`${url}/v1/chat/completions`, { ...CHAT, logprobs: true, top_logprobs: 4 }, openAiKey)).body.choices[0].logprobs,
    ).toEqual(body.choices[0].logprobs);
    const none = await post(`${url}/v1/chat/completions`, CHAT, openAiKey);
    expect(none.body.choices[0].logprobs).toBeNull();
  });
});

describe('Anthropic structured output', () => {
  const schema = {
    type: 'object',
    properties: {
      headline: { type: 'string' },
      topics: { type: 'array', items: { type: 'string' }, description: '{maxItems: 2}' },
      tone: { type: 'string', description: '{enum: ["calm","tense"]}' },
      score: { type: 'number', description: 'How strong.\nminimum: 1; maximum: 3.' },
    },
    required: ['headline', 'topics', 'tone', 'score'],
    additionalProperties: false,
  };

  it('output_config.format: a text block of JSON that fits, keeping to the constraints the descriptions state', async () => {
    const url = await start();
    const { body } = await post(
      `${url}/v1/messages`,
      { ...MESSAGES, output_config: { format: { type: 'json_schema', schema } } },
      anthropicKey,
    );
    expect(body).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
    const value = JSON.parse(body.content[0].text);
    expect(new Ajv2020().validate(schema, value)).toBe(true);
    expect(value.topics.length).toBeLessThanOrEqual(2);
    expect(['calm', 'tense']).toContain(value.tone);
    expect(value.score).toBeGreaterThanOrEqual(1);
    expect(value.score).toBeLessThanOrEqual(3);
  });

  it('reads both SDKs’ notations, and leaves a schema with none as it is', () => {
    expect(describedConstraints('{minimum: 0, maximum: 10}')).toEqual({ minimum: 0, maximum: 10 });
    expect(describedConstraints('Tags.\n\n{maxItems: 3, pattern: "^a, b: c$"}')).toEqual({ maxItems: 3, pattern: '^a, b: c$' });
    expect(describedConstraints('min items: 1; max items: 3.')).toEqual({ minItems: 1, maxItems: 3 });
    expect(describedConstraints('Note: the thing; and more.')).toEqual({});
    expect(describedConstraints('A code.\npattern: ^[A-Z]{3}$; min length: 3.')).toEqual({ pattern: '^[A-Z]{3}$', minLength: 3 });
    expect(describedConstraints('Just words. {not: a constraint}')).toEqual({});
    const plain = { type: 'object', properties: { a: { type: 'string', description: 'plain' } } };
    expect(withDescribedConstraints(plain)).toBe(plain);
    expect(withDescribedConstraints({ type: 'array', items: { type: 'integer', description: 'minimum: 2.' } })).toEqual({
      type: 'array',
      items: { type: 'integer', description: 'minimum: 2.', minimum: 2 },
    });
  });
});

describe('POST /v1/messages/count_tokens', () => {
  it('the input tokens a message with the same body is counted on; no quota taken', async () => {
    const url = await start({ rate: 1 / 60, burst: 1 });
    const count = await post(
      `${url}/v1/messages/count_tokens`,
      { model: 'm', system: 'Be brief.', messages: MESSAGES.messages },
      anthropicKey,
    );
    expect(count.status).toBe(200);
    expect(count.body).toEqual({ input_tokens: countTokens(`Be brief.\n${TEXT}`) });
    const message = await post(`${url}/v1/messages`, { ...MESSAGES, system: 'Be brief.' }, anthropicKey);
    expect(message.status).toBe(200);
    expect(message.body.usage.input_tokens).toBe(count.body.input_tokens);
    const refused = await post(`${url}/v1/messages/count_tokens`, { model: 'm', messages: MESSAGES.messages, max_tokens: 5 }, anthropicKey);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({ type: 'invalid_request_error', message: 'max_tokens: Extra inputs are not permitted' });
    expect((await post(`${url}/v1/messages/count_tokens`, { model: 'm', messages: MESSAGES.messages }, {})).status).toBe(401);
  });
});

describe('GET /v1/models/{id}', () => {
  it('the model in the shape of the API the headers name; any id, as requests take any', async () => {
    const url = await start();
    expect((await get(`${url}/v1/models/gpt-4o-mini`, openAiKey)).body).toEqual({
      id: 'gpt-4o-mini',
      object: 'model',
      created: 0,
      owned_by: 'news-processor',
    });
    expect((await get(`${url}/v1/models/claude-haiku-4-5`, anthropicKey)).body).toMatchObject({ type: 'model', id: 'claude-haiku-4-5' });
    expect((await get(`${url}/v1/models/x`)).status).toBe(401);
  });
});
