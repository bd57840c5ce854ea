// POST /v1/responses and GET /v1/responses/{id} off the wire: the Response object, its input forms,
// structured output, tools, the output limit, what is kept and for whom, and the 400s.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens } from 'gpt-tokenizer';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { summarize } from '../../src/simulator/text-analysis.ts';
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
const key = (name = 'key-r') => ({ authorization: `Bearer ${name}` });
const SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    mood: { type: 'string', enum: ['glad', 'wary'] },
    votes: { type: ['integer', 'null'], minimum: 0 },
  },
  required: ['city', 'mood', 'votes'],
  additionalProperties: false,
};

describe('POST /v1/responses', () => {
  it('a string input: a completed Response with one message of output_text, the usage and the request echoed', async () => {
    const url = await start();
    const { status, body, headers } = await post(
      `${url}/v1/responses`,
      { model: 'gpt-4o-mini', input: TEXT, instructions: 'Be brief.', temperature: 0.2 },
      key(),
    );
    expect(status).toBe(200);
    expect(headers['x-ratelimit-limit-requests']).toBe('600');
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      temperature: 0.2,
      error: null,
      incomplete_details: null,
      store: true,
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: summarize('', TEXT), annotations: [] }],
        },
      ],
    });
    expect(body.id).toMatch(/^resp_/);
    expect(body.usage).toMatchObject({
      input_tokens: countTokens(`Be brief.\n${TEXT}`),
      total_tokens: body.usage.input_tokens + body.usage.output_tokens,
    });
  });

  it('input as items: the last user message is answered, an earlier assistant turn counts in the prompt', async () => {
    const url = await start();
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: 'Hello.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi.' }] },
      { role: 'user', content: TEXT },
    ];
    const { body } = await post(`${url}/v1/responses`, { model: 'm', input }, key());
    expect(body.output[0].content[0].text).toBe(summarize('', TEXT));
    expect(body.usage.input_tokens).toBe(countTokens(`Hello.\nHi.\n${TEXT}`));
  });

  it('text.format json_schema (strict): output_text is JSON that fits', async () => {
    const url = await start();
    const format = { type: 'json_schema', name: 'mood', schema: SCHEMA, strict: true };
    const { body } = await post(`${url}/v1/responses`, { model: 'm', input: TEXT, text: { format } }, key());
    expect(new Ajv2020().validate(SCHEMA, JSON.parse(body.output[0].content[0].text))).toBe(true);
    expect(body.text.format).toEqual(format);
  });

  it('a function tool: a function_call item whose arguments fit; after its output, words', async () => {
    const url = await start();
    const tools = [{ type: 'function', name: 'record_mood', parameters: SCHEMA, strict: true }];
    const { body } = await post(`${url}/v1/responses`, { model: 'm', input: TEXT, tools }, key());
    const [call] = body.output;
    expect(call).toMatchObject({ type: 'function_call', name: 'record_mood', status: 'completed' });
    expect(new Ajv2020().validate(SCHEMA, JSON.parse(call.arguments))).toBe(true);
    const after = await post(
      `${url}/v1/responses`,
      {
        model: 'm',
        tools,
        input: [
          { role: 'user', content: TEXT },
          call,
          { type: 'function_call_output', call_id: call.call_id, output: 'Recorded. All good.' },
        ],
      },
      key(),
    );
    // As on the Chat Completions route: the answer in words is about the last user message.
    expect(after.body.output[0]).toMatchObject({ type: 'message', content: [{ text: summarize('', TEXT) }] });
  });

  it('max_output_tokens shorter than the answer: status incomplete, the reason, the first tokens', async () => {
    const url = await start();
    const long =
      'The city council, meeting late on a rainy Monday evening in the old town hall beside the river, approved a new budget that promises growth, better schools and repaired roads. Residents welcomed it.';
    const { body } = await post(`${url}/v1/responses`, { model: 'm', input: long, max_output_tokens: 16 }, key());
    expect(body).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, max_output_tokens: 16 });
    expect(body.usage.output_tokens).toBe(16);
    expect(summarize('', long).startsWith(body.output[0].content[0].text)).toBe(true);
  });

  it('logprobs when include asks for them', async () => {
    const url = await start();
    const { body } = await post(
      `${url}/v1/responses`,
      { model: 'm', input: 'Hello there.', include: ['message.output_text.logprobs'], top_logprobs: 3 },
      key(),
    );
    const { logprobs } = body.output[0].content[0];
    expect(logprobs.map((entry: any) => entry.token).join('')).toBe('Hello there.');
    for (const entry of logprobs) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs).toHaveLength(3);
    }
  });
});

describe('GET /v1/responses/{id} and previous_response_id', () => {
  it('gives back what it answered, to the key it answered only; store: false keeps nothing', async () => {
    const url = await start();
    const { body } = await post(`${url}/v1/responses`, { model: 'm', input: TEXT }, key());
    expect((await get(`${url}/v1/responses/${body.id}`, key())).body).toEqual(body);
    const other = await get(`${url}/v1/responses/${body.id}`, key('key-other'));
    expect(other.status).toBe(404);
    expect(other.body.error).toMatchObject({ message: `Response with id '${body.id}' not found.`, type: 'invalid_request_error' });
    const unkept = await post(`${url}/v1/responses`, { model: 'm', input: TEXT, store: false }, key());
    expect(unkept.body.store).toBe(false);
    expect((await get(`${url}/v1/responses/${unkept.body.id}`, key())).status).toBe(404);
    expect((await get(`${url}/v1/responses/${body.id}`)).status).toBe(401);
  });

  it('previous_response_id continues the conversation: its prompt and answer count in the prompt', async () => {
    const url = await start();
    const first = (await post(`${url}/v1/responses`, { model: 'm', input: TEXT }, key())).body;
    const next = (await post(`${url}/v1/responses`, { model: 'm', input: 'And then?', previous_response_id: first.id }, key())).body;
    expect(next.previous_response_id).toBe(first.id);
    expect(next.usage.input_tokens).toBe(countTokens(`${TEXT}\n${first.output[0].content[0].text}\nAnd then?`));
    const missing = await post(`${url}/v1/responses`, { model: 'm', input: 'x', previous_response_id: 'resp_nope' }, key());
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ param: 'previous_response_id', code: 'previous_response_not_found' });
  });
});

describe('POST /v1/responses refuses, in OpenAI’s shape, what it does not do', () => {
  it.each<[string, Record<string, unknown>, string, string]>([
    ['no input', { model: 'm' }, "Missing required parameter: 'input'.", 'input'],
    ['a field it does not know', { model: 'm', input: 'x', n: 2 }, 'Unrecognized request argument supplied: n', 'n'],
    ['background', { model: 'm', input: 'x', background: true }, "Unsupported parameter: 'background'", 'background'],
    [
      'a hosted tool',
      { model: 'm', input: 'x', tools: [{ type: 'web_search' }] },
      `Invalid value: "web_search". serve runs tools of type 'function' only.`,
      'tools[0].type',
    ],
    [
      'an output limit under 16',
      { model: 'm', input: 'x', max_output_tokens: 8 },
      "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16",
      'max_output_tokens',
    ],
    [
      'include asking for what it has not',
      { model: 'm', input: 'x', include: ['file_search_call.results'] },
      'Invalid value: "file_search_call.results".',
      'include[0]',
    ],
    [
      'a strict format with a property left out of required',
      {
        model: 'm',
        input: 'x',
        text: { format: { type: 'json_schema', name: 'mood', strict: true, schema: { ...SCHEMA, required: ['city'] } } },
      },
      "Invalid schema for response_format 'mood': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'mood'.",
      'text.format.schema',
    ],
    [
      'a function tool (strict unless it says not) with an open object',
      { model: 'm', input: 'x', tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }] },
      "Invalid schema for function 'f': In context=(), 'additionalProperties' is required to be supplied and to be false.",
      'tools[0].parameters',
    ],
  ])('%s: 400', async (_, body, message, param) => {
    const url = await start();
    const response = await post(`${url}/v1/responses`, body, key());
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(response.body.error.message).toContain(message);
  });

  it('lenientSchemas takes the schema strict mode would refuse', async () => {
    const url = await start({ lenientSchemas: true });
    const tools = [{ type: 'function', name: 'f', parameters: { type: 'object', properties: { q: { type: 'string' } } } }];
    const response = await post(`${url}/v1/responses`, { model: 'm', input: 'x', tools }, key());
    expect(response.status).toBe(200);
    expect(response.body.output[0].type).toBe('function_call');
  });
});
