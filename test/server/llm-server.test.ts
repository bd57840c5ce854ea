import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens } from 'gpt-tokenizer';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LLM_SERVER_DEFAULTS, LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { RateLimitError, ServerError, SimulatedProvider, TimeoutError } from '../../src/index.ts';
import { ManualClock } from '../../src/mechanisms.ts';
import { readAnswer } from '../../src/provider/answer.ts';
import { builtinRequest } from '../requests.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import type { Article } from '../../src/sources/article.ts';

type TaskName = 'summarize' | 'sentiment';
/** The built-in task's request for the article below. */
const taskRequest = (task: TaskName) => builtinRequest(task, ARTICLE.articleId, ARTICLE.title, ARTICLE.text);
const promptOf = (task: TaskName) => taskRequest(task).prompt;
import { analyzeSentiment, extractKeywords, summarize } from '../../src/simulator/text-analysis.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { get, type JsonResponse, parseRaw, post, rawExchange } from './http.ts';

const INSTANT = { minLatencyMs: 0, maxLatencyMs: 0 };
const servers: LlmServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A server on a free loopback port, answering at once unless told otherwise; closed after the test. */
async function start(options: LlmServerOptions = {}): Promise<{ server: LlmServer; url: string }> {
  const server = new LlmServer({ simulation: INSTANT, ...options });
  servers.push(server);
  return { server, url: await server.listen({ port: 0 }) };
}

const ARTICLE = {
  articleId: '7',
  title: 'Council approves budget',
  text: 'The city council approved a new budget on Monday, promising growth and better schools. Residents welcomed the plan. Critics warned of a risk of debt.',
};
const openAiKey = (key = 'key-a') => ({ authorization: `Bearer ${key}` });
const anthropicKey = (key = 'key-a') => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

/** A task request as the pipeline's OpenAI client sends it. */
function chatRequest(task: TaskName) {
  const { schema } = taskRequest(task);
  return {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: promptOf(task) }],
    response_format: { type: 'json_schema', json_schema: { name: task, schema, strict: true } },
  };
}

/** A task request as the pipeline's Anthropic client sends it: a forced tool. */
function messagesRequest(task: TaskName) {
  const { schema, description } = taskRequest(task);
  return {
    model: 'claude-haiku',
    max_tokens: 256,
    messages: [{ role: 'user', content: promptOf(task) }],
    tools: [{ name: task, description, input_schema: schema }],
    tool_choice: { type: 'tool', name: task },
  };
}

const HELLO = { model: 'm', messages: [{ role: 'user', content: 'Hello. How are you?' }] };
const HELLO_ANTHROPIC = { ...HELLO, max_tokens: 64 };

describe('LlmServer routes', () => {
  it('GET /healthz answers ok without a key', async () => {
    const { url } = await start();
    const response = await get(`${url}/healthz`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
  });

  it('GET /v1/models lists the models in the shape of the API the headers name', async () => {
    const { url } = await start({ models: ['simulated', 'gpt-4o-mini'] });
    const openai = await get(`${url}/v1/models`, openAiKey());
    expect(openai.status).toBe(200);
    expect(openai.body).toEqual({
      object: 'list',
      data: [
        { id: 'simulated', object: 'model', created: 0, owned_by: 'news-processor' },
        { id: 'gpt-4o-mini', object: 'model', created: 0, owned_by: 'news-processor' },
      ],
    });
    // Per minute, as OpenAI states its limits.
    expect(openai.headers['x-ratelimit-limit-requests']).toBe(String(LLM_SERVER_DEFAULTS.rate * 60));
    const anthropic = await get(`${url}/v1/models`, anthropicKey());
    expect(anthropic.body).toMatchObject({
      data: [
        { type: 'model', id: 'simulated' },
        { type: 'model', id: 'gpt-4o-mini' },
      ],
      has_more: false,
    });
    expect(anthropic.headers['anthropic-ratelimit-requests-limit']).toBe(String(LLM_SERVER_DEFAULTS.rate * 60));
    expect((await get(`${url}/v1/models`)).status).toBe(401);
  });

  it.each([
    ['POST', '/v1/completions'],
    ['GET', '/v1/chat/completions'],
    ['GET', '/'],
  ])('%s %s is 404 in the OpenAI shape, or the Anthropic one when the headers are Anthropic', async (method, path) => {
    const { url } = await start();
    const openai = await fetch(`${url}${path}`, { method, headers: openAiKey() });
    expect(openai.status).toBe(404);
    expect(await openai.json()).toEqual({
      error: { message: `Invalid URL (${method} ${path})`, type: 'invalid_request_error', param: null, code: null },
    });
    const anthropic = await fetch(`${url}${path}`, { method, headers: anthropicKey() });
    expect(anthropic.status).toBe(404);
    expect(await anthropic.json()).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: `Invalid URL (${method} ${path})` },
    });
  });
});

describe("LlmServer answers the pipeline's own tasks from the article, as the simulated provider does", () => {
  const expectedSummary = {
    summary: summarize(ARTICLE.title, ARTICLE.text),
    keywords: extractKeywords(`${ARTICLE.title}\n${ARTICLE.text}`, 5),
  };
  const { sentiment, score } = analyzeSentiment(`${ARTICLE.title}\n${ARTICLE.text}`);

  it('OpenAI: a json_schema response_format named after the task', async () => {
    const { url } = await start();
    const summary = await post(`${url}/v1/chat/completions`, chatRequest('summarize'), openAiKey());
    expect(summary.status).toBe(200);
    const content = summary.body.choices[0].message.content as string;
    expect(JSON.parse(content)).toEqual(expectedSummary);
    expect(summary.body).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, finish_reason: 'stop' }] });
    // The pipeline's own parse takes it as it is.
    expect(await readAnswer(taskRequest('summarize'), content)).toEqual(expectedSummary);
    expect(summary.body.usage).toEqual({
      prompt_tokens: countTokens(promptOf('summarize')),
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens: countTokens(content),
      total_tokens: countTokens(promptOf('summarize')) + countTokens(content),
    });

    const answer = await post(`${url}/v1/chat/completions`, chatRequest('sentiment'), openAiKey());
    expect(JSON.parse(answer.body.choices[0].message.content)).toEqual({ sentiment, score });
  });

  it('Anthropic: a forced tool named after the task', async () => {
    const { url } = await start();
    const summary = await post(`${url}/v1/messages`, messagesRequest('summarize'), anthropicKey());
    expect(summary.status).toBe(200);
    expect(summary.body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku',
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'summarize', input: expectedSummary }],
    });
    expect(summary.body.usage.input_tokens).toBe(countTokens(promptOf('summarize')));
    const answer = await post(`${url}/v1/messages`, messagesRequest('sentiment'), anthropicKey());
    expect(answer.body.content[0].input).toEqual({ sentiment, score });
    expect(await readAnswer(taskRequest('sentiment'), answer.body.content[0].input)).toEqual({ sentiment, score });
  });

  it("a same-named schema that asks for more than the task's answer gets a value made to fit it", async () => {
    const { url } = await start();
    const request = chatRequest('summarize');
    const schema = structuredClone(taskRequest('summarize').schema) as any;
    schema.properties.keywords.maxItems = 2;
    request.response_format.json_schema.schema = schema;
    const response = await post(`${url}/v1/chat/completions`, request, openAiKey());
    const value = JSON.parse(response.body.choices[0].message.content);
    expect(new Ajv2020({ strict: false }).validate(schema, value)).toBe(true);
    expect(value.keywords.length).toBeLessThanOrEqual(2);
  });

  it('a same-named schema that admits nothing is a 400, after the latency', async () => {
    const { url } = await start();
    const request = chatRequest('sentiment');
    const schema = structuredClone(taskRequest('sentiment').schema) as any;
    schema.properties.score = { type: 'number', minimum: 2, maximum: 1 };
    request.response_format.json_schema.schema = schema;
    const response = await post(`${url}/v1/chat/completions`, request, openAiKey());
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({
      param: 'response_format.json_schema.schema',
      message: expect.stringContaining('Invalid schema: no value'),
    });
  });

  it('free text gets the lead sentences of the last user message', async () => {
    const { url } = await start();
    const openai = await post(
      `${url}/v1/chat/completions`,
      { model: 'm', messages: [{ role: 'user', content: ARTICLE.text }] },
      openAiKey(),
    );
    expect(openai.body.choices[0].message.content).toBe(summarize('', ARTICLE.text));
    const anthropic = await post(
      `${url}/v1/messages`,
      { model: 'm', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: [{ type: 'text', text: ARTICLE.text }] }] },
      anthropicKey(),
    );
    expect(anthropic.body).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: summarize('', ARTICLE.text) }] });
    expect(anthropic.body.usage.input_tokens).toBe(countTokens(`Be brief.\n${ARTICLE.text}`));
  });

  it('an answer longer than the request allows is cut off there, with each API’s reason', async () => {
    const { url } = await start();
    const full = summarize('', ARTICLE.text);
    expect(countTokens(full)).toBeGreaterThan(5);
    const text = { model: 'm', messages: [{ role: 'user', content: ARTICLE.text }] };

    // OpenAI: max_completion_tokens wins over max_tokens; the text is the answer's first tokens.
    const cut = await post(`${url}/v1/chat/completions`, { ...text, max_tokens: 500, max_completion_tokens: 5 }, openAiKey());
    expect(cut.body.choices[0].finish_reason).toBe('length');
    const content: string = cut.body.choices[0].message.content;
    expect(full.startsWith(content)).toBe(true);
    expect(content.length).toBeLessThan(full.length);
    expect(cut.body.usage.completion_tokens).toBe(5);
    const roomy = await post(`${url}/v1/chat/completions`, { ...text, max_tokens: 500 }, openAiKey());
    expect(roomy.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: full } });

    // A structured answer cut off is JSON that does not parse.
    const task = await post(`${url}/v1/chat/completions`, { ...chatRequest('summarize'), max_completion_tokens: 4 }, openAiKey());
    expect(task.body.choices[0].finish_reason).toBe('length');
    expect(() => JSON.parse(task.body.choices[0].message.content)).toThrow();

    // Anthropic: stop_reason max_tokens; a forced tool's input never finished.
    const tool = await post(`${url}/v1/messages`, { ...messagesRequest('sentiment'), max_tokens: 3 }, anthropicKey());
    expect(tool.body).toMatchObject({ stop_reason: 'max_tokens', content: [{ type: 'tool_use', name: 'sentiment', input: {} }] });
    expect(tool.body.usage.output_tokens).toBe(3);
    const words = await post(`${url}/v1/messages`, { ...text, max_tokens: 5 }, anthropicKey());
    expect(words.body.stop_reason).toBe('max_tokens');
    expect(full.startsWith(words.body.content[0].text)).toBe(true);
  });
});

describe('LlmServer answers any schema with a value that validates', () => {
  const ajv = new Ajv2020({ strict: false });
  const schema = {
    type: 'object',
    properties: {
      headline: { type: 'string', maxLength: 30 },
      people: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 18 } },
          required: ['name', 'age'],
        },
        minItems: 2,
      },
      published: { type: ['string', 'null'], pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
    },
    required: ['headline', 'people', 'published'],
    additionalProperties: false,
  };

  it('OpenAI response_format json_schema, with strings from the prompt', async () => {
    const { url } = await start();
    const response = await post(
      `${url}/v1/chat/completions`,
      {
        model: 'm',
        messages: [{ role: 'user', content: ARTICLE.text }],
        // Not strict: `people.items` is an object strict mode would refuse without additionalProperties.
        response_format: { type: 'json_schema', json_schema: { name: 'extract', schema } },
      },
      openAiKey(),
    );
    const value = JSON.parse(response.body.choices[0].message.content);
    expect(ajv.validate(schema, value), JSON.stringify(ajv.errors)).toBe(true);
    expect(extractKeywords(ARTICLE.text, 8)).toContain(value.headline.split(' ')[0]);
  });

  it('OpenAI function tools: tool_calls whose arguments fit the parameters', async () => {
    const { url } = await start();
    const tools = [
      {
        type: 'function',
        function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } },
      },
      { type: 'function', function: { name: 'extract', parameters: schema } },
    ];
    const response = await post(
      `${url}/v1/chat/completions`,
      {
        model: 'm',
        messages: [{ role: 'user', content: 'Extract.' }],
        tools,
        tool_choice: { type: 'function', function: { name: 'extract' } },
      },
      openAiKey(),
    );
    const choice = response.body.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls[0]).toMatchObject({ type: 'function', function: { name: 'extract' } });
    expect(ajv.validate(schema, JSON.parse(choice.message.tool_calls[0].function.arguments))).toBe(true);
    // After the tool's result, `auto` answers in words.
    const followUp = await post(
      `${url}/v1/chat/completions`,
      {
        model: 'm',
        tools,
        messages: [
          { role: 'user', content: 'Look it up.' },
          { role: 'assistant', content: null, tool_calls: [choice.message.tool_calls[0]] },
          { role: 'tool', tool_call_id: choice.message.tool_calls[0].id, content: 'Found it. It is fine.' },
        ],
      },
      openAiKey(),
    );
    expect(followUp.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Look it up.' } });
  });

  it('Anthropic tools: the named tool, or the first with any and auto; words after a tool result', async () => {
    const { url } = await start();
    const tools = [
      { name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string', minLength: 3 } }, required: ['q'] } },
      { name: 'extract', input_schema: schema },
    ];
    const named = await post(
      `${url}/v1/messages`,
      // Room for the longest answer the schema may get: cut off, a tool's input would be {}.
      { ...HELLO_ANTHROPIC, max_tokens: 1024, tools, tool_choice: { type: 'tool', name: 'extract' } },
      anthropicKey(),
    );
    expect(named.body.content[0]).toMatchObject({ type: 'tool_use', name: 'extract' });
    expect(ajv.validate(schema, named.body.content[0].input)).toBe(true);
    for (const choice of [{ type: 'any' }, undefined]) {
      const first = await post(`${url}/v1/messages`, { ...HELLO_ANTHROPIC, tools, tool_choice: choice }, anthropicKey());
      expect(first.body.content[0]).toMatchObject({ type: 'tool_use', name: 'lookup' });
      expect(first.body.content[0].input.q.length).toBeGreaterThanOrEqual(3);
    }
    const afterResult = await post(
      `${url}/v1/messages`,
      {
        ...HELLO_ANTHROPIC,
        tools,
        messages: [
          { role: 'user', content: 'Look it up.' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'abc' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'All good.' }] },
        ],
      },
      anthropicKey(),
    );
    expect(afterResult.body).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'All good.' }] });
  });

  it('answers vary with the article: 300 articles, every topic, confidences across [0, 1]; the same request, the same answer, on either route', async () => {
    const { url } = await start({ rate: Infinity });
    const topicSchema = {
      type: 'object',
      properties: {
        topic: { type: 'string', enum: ['economy', 'politics', 'sport', 'science', 'culture'] },
        confidence: { type: 'number', minimum: 0, maximum: 1 },
      },
      required: ['topic', 'confidence'],
      additionalProperties: false,
    };
    const classify = (article: Article) => ({
      model: 'm',
      messages: [{ role: 'user', content: `Classify the article.\n\nTitle: ${article.title}\n\n${article.content}` }],
      response_format: { type: 'json_schema', json_schema: { name: 'classify', strict: true, schema: topicSchema } },
    });
    const answerOf = async (article: Article) => {
      const response = await post(`${url}/v1/chat/completions`, classify(article), openAiKey());
      expect(response.status).toBe(200);
      return JSON.parse(response.body.choices[0].message.content);
    };
    const articles = [...generateArticles(300)];
    const values = [];
    for (const article of articles) values.push(await answerOf(article));
    for (const value of values) expect(ajv.validate(topicSchema, value), JSON.stringify(value)).toBe(true);
    expect(new Set(values.map((value) => value.topic)).size).toBe(5);
    const confidences = values.map((value) => value.confidence);
    expect(Math.min(...confidences)).toBeLessThan(0.1);
    expect(Math.max(...confidences)).toBeGreaterThan(0.9);
    expect(new Set(confidences).size).toBeGreaterThan(50);
    // The same request again, after 300 others: the same answer; and as a forced tool on the Anthropic route.
    expect(await answerOf(articles[0]!)).toEqual(values[0]);
    const { messages } = classify(articles[0]!);
    const tool = await post(
      `${url}/v1/messages`,
      {
        model: 'm',
        max_tokens: 256,
        messages,
        tools: [{ name: 'classify', input_schema: topicSchema }],
        tool_choice: { type: 'tool', name: 'classify' },
      },
      anthropicKey(),
    );
    expect(tool.body.content[0].input).toEqual(values[0]);
  });

  it('OpenAI json_object: a JSON object', async () => {
    const { url } = await start();
    const response = await post(`${url}/v1/chat/completions`, { ...HELLO, response_format: { type: 'json_object' } }, openAiKey());
    expect(JSON.parse(response.body.choices[0].message.content)).toEqual({ summary: 'Hello. How are you?', keywords: ['hello'] });
  });
});

describe('LlmServer refuses bad requests in the API’s own shape, and keeps serving', () => {
  const openAiCases: [string, unknown, string, string | null][] = [
    ['malformed JSON', '{"model": "m", "messages": [', 'We could not parse the JSON body of your request: ', null],
    ['a body that is not an object', '[1, 2]', 'Invalid request body: expected a JSON object, but got array.', null],
    ['no model', { messages: HELLO.messages }, 'you must provide a model parameter', 'model'],
    [
      'a model that is not a string',
      { ...HELLO, model: 3 },
      "Invalid type for 'model': expected a non-empty string, but got number.",
      'model',
    ],
    ['no messages', { model: 'm' }, "Missing required parameter: 'messages'.", 'messages'],
    [
      'messages that are not a list',
      { model: 'm', messages: 'hi' },
      "Invalid type for 'messages': expected an array of objects, but got string.",
      'messages',
    ],
    [
      'no message at all',
      { model: 'm', messages: [] },
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
      'messages',
    ],
    ['a message without a role', { model: 'm', messages: [{ content: 'hi' }] }, "Invalid value for 'messages[0].role'", 'messages[0].role'],
    [
      'a message without content',
      { model: 'm', messages: [{ role: 'user' }] },
      "Invalid type for 'messages[0].content'",
      'messages[0].content',
    ],
    ['max_tokens of 0', { ...HELLO, max_tokens: 0 }, "Invalid 'max_tokens': expected an integer >= 1, got 0.", 'max_tokens'],
    [
      'an unknown response_format',
      { ...HELLO, response_format: { type: 'xml' } },
      'Invalid value for \'response_format.type\': "xml".',
      'response_format.type',
    ],
    [
      'a json_schema without a schema',
      { ...HELLO, response_format: { type: 'json_schema', json_schema: { name: 'x' } } },
      "Invalid 'response_format.json_schema.schema'",
      'response_format.json_schema.schema',
    ],
    [
      'a schema that does not compile',
      { ...HELLO, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'text' } } } },
      'Invalid schema: the schema is invalid: ',
      'response_format.json_schema.schema',
    ],
    [
      'a schema no value fits',
      {
        ...HELLO,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', minimum: 2, maximum: 1 } } },
      },
      'Invalid schema: no value was found that fits the schema (48 tried)',
      'response_format.json_schema.schema',
    ],
    [
      'a tool_choice naming no tool',
      { ...HELLO, tools: [], tool_choice: { type: 'function', function: { name: 'x' } } },
      "Invalid 'tool_choice'",
      'tool_choice',
    ],
    [
      'a field it does not know',
      { ...HELLO, reasoning: { effort: 'low' } },
      'Unrecognized request argument supplied: reasoning',
      'reasoning',
    ],
    [
      'a temperature out of range',
      { ...HELLO, temperature: 3 },
      "Invalid 'temperature': integer above maximum value. Expected a value <= 2, but got 3 instead.",
      'temperature',
    ],
    [
      'a temperature that is not a number',
      { ...HELLO, temperature: 'hot' },
      "Invalid type for 'temperature': expected a decimal, but got a string instead.",
      'temperature',
    ],
    [
      'logit_bias',
      { ...HELLO, logit_bias: { '50256': -100 } },
      "Unsupported parameter: 'logit_bias' is not supported by serve",
      'logit_bias',
    ],
    ['store', { ...HELLO, store: true }, "Unsupported parameter: 'store' is not supported by serve", 'store'],
    ['audio output', { ...HELLO, modalities: ['text', 'audio'] }, "Unsupported parameter: 'modalities'", 'modalities'],
    ['the deprecated functions', { ...HELLO, functions: [] }, "Unsupported parameter: 'functions' is deprecated", 'functions'],
    ['no choice at all', { ...HELLO, n: 0 }, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.", 'n'],
    [
      'five stop sequences',
      { ...HELLO, stop: ['a', 'b', 'c', 'd', 'e'] },
      "Invalid 'stop': array too long. Expected an array with maximum length 4",
      'stop',
    ],
    ['a stop that is not text', { ...HELLO, stop: 7 }, "Invalid type for 'stop': expected a string or an array of strings", 'stop'],
    [
      'top_logprobs without logprobs',
      { ...HELLO, top_logprobs: 2 },
      "Invalid value for 'top_logprobs': 'logprobs' must be set to true",
      'top_logprobs',
    ],
    [
      'too many top_logprobs',
      { ...HELLO, logprobs: true, top_logprobs: 21 },
      "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20",
      'top_logprobs',
    ],
    [
      'stream_options without stream',
      { ...HELLO, stream_options: { include_usage: true } },
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      'stream_options',
    ],
    [
      'a strict schema with a property left out of required',
      {
        ...HELLO,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'place',
            strict: true,
            schema: {
              type: 'object',
              properties: { city: { type: 'string' }, zip: { type: 'string' } },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
      },
      "Invalid schema for response_format 'place': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'zip'.",
      'response_format',
    ],
    [
      'a strict schema with an open nested object',
      {
        ...HELLO,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'place',
            strict: true,
            schema: {
              type: 'object',
              properties: { at: { type: 'object', properties: { lat: { type: 'number' } }, required: ['lat'] } },
              required: ['at'],
              additionalProperties: false,
            },
          },
        },
      },
      "Invalid schema for response_format 'place': In context=('properties', 'at'), 'additionalProperties' is required to be supplied and to be false.",
      'response_format',
    ],
    [
      'a strict schema with a keyword strict mode does not take',
      {
        ...HELLO,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'tags',
            strict: true,
            schema: {
              type: 'object',
              properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } },
              required: ['tags'],
              additionalProperties: false,
            },
          },
        },
      },
      "Invalid schema for response_format 'tags': In context=('properties', 'tags'), 'uniqueItems' is not permitted.",
      'response_format',
    ],
    [
      'a strict schema whose root is not an object',
      {
        ...HELLO,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'list', strict: true, schema: { type: 'array', items: { type: 'string' } } },
        },
      },
      `Invalid schema for response_format 'list': schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`,
      'response_format',
    ],
    [
      'a strict function whose parameters are open',
      {
        ...HELLO,
        tools: [
          {
            type: 'function',
            function: {
              name: 'lookup',
              strict: true,
              parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
            },
          },
        ],
      },
      "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to be supplied and to be false.",
      'tools[0].function.parameters',
    ],
  ];

  // A rate no request outlasts: the key's remaining count is its burst less one, however slow the machine.
  const NO_REFILL = { rate: 0.001 };

  it.each(openAiCases)('OpenAI, %s: 400', async (_, body, message, param) => {
    const { url } = await start(NO_REFILL);
    const response = await post(`${url}/v1/chat/completions`, body, openAiKey());
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(response.body.error.message).toContain(message);
    expect(response.body.error.message).not.toContain('\n');
    expect(response.headers['x-ratelimit-remaining-requests']).toBe(String(LLM_SERVER_DEFAULTS.burst - 1));
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey())).status).toBe(200);
  });

  const anthropicCases: [string, unknown, string][] = [
    ['malformed JSON', '{"model": ', 'We could not parse the JSON body of your request: '],
    ['a body that is not an object', '"hi"', 'Input should be a valid dictionary, got string'],
    ['no model', { messages: HELLO.messages, max_tokens: 5 }, 'model: Field required'],
    ['no messages', { model: 'm', max_tokens: 5 }, 'messages: Field required'],
    ['no max_tokens', HELLO, 'max_tokens: Field required'],
    ['no message at all', { ...HELLO_ANTHROPIC, messages: [] }, 'messages: at least one message is required'],
    [
      'a system role in messages',
      { ...HELLO_ANTHROPIC, messages: [{ role: 'system', content: 'x' }] },
      "messages.0.role: Input should be 'user' or 'assistant'",
    ],
    [
      'a block without a type',
      { ...HELLO_ANTHROPIC, messages: [{ role: 'user', content: [{ text: 'x' }] }] },
      'messages.0.content.0: Input should be a valid dictionary with a type',
    ],
    ['a field it does not know', { ...HELLO_ANTHROPIC, logprobs: true }, 'logprobs: Extra inputs are not permitted'],
    ['thinking', { ...HELLO_ANTHROPIC, thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking: serve does not think'],
    ['a temperature out of range', { ...HELLO_ANTHROPIC, temperature: 1.5 }, 'temperature: Input should be less than or equal to 1'],
    ['stop_sequences that are not a list', { ...HELLO_ANTHROPIC, stop_sequences: '.' }, 'stop_sequences: Input should be a valid list'],
    [
      'a blank stop sequence',
      { ...HELLO_ANTHROPIC, stop_sequences: [' '] },
      'stop_sequences: each stop sequence must contain non-whitespace',
    ],
    [
      'an output format that is not a JSON schema',
      { ...HELLO_ANTHROPIC, output_config: { format: { type: 'xml' } } },
      "output_config.format.type: Input should be 'json_schema'",
    ],
    [
      'an output format without a schema',
      { ...HELLO_ANTHROPIC, output_config: { format: { type: 'json_schema' } } },
      'output_config.format.schema: Field required',
    ],
    [
      'a server tool',
      { ...HELLO_ANTHROPIC, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      'tools.0.type: serve runs custom tools only',
    ],
    ['a tool without a name', { ...HELLO_ANTHROPIC, tools: [{ input_schema: {} }] }, 'tools.0.name: Field required'],
    [
      'tool_choice naming no tool',
      { ...HELLO_ANTHROPIC, tools: [{ name: 'a' }], tool_choice: { type: 'tool', name: 'b' } },
      'tool_choice.name: expected the name of a tool in tools',
    ],
    [
      'a tool schema that does not compile',
      { ...HELLO_ANTHROPIC, tools: [{ name: 'a', input_schema: { type: 'object', properties: { x: { type: 7 } } } }] },
      'Invalid schema: the schema is invalid: ',
    ],
  ];

  it.each(anthropicCases)('Anthropic, %s: 400', async (_, body, message) => {
    const { url } = await start(NO_REFILL);
    const response = await post(`${url}/v1/messages`, body, anthropicKey());
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(response.body.error.message).toContain(message);
    expect(response.body.error.message).not.toContain('\n');
    expect(response.body.request_id).toBe(response.headers['request-id']);
    expect(response.headers['anthropic-ratelimit-requests-remaining']).toBe(String(LLM_SERVER_DEFAULTS.burst - 1));
    expect((await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey())).status).toBe(200);
  });

  it('no key: 401 in each shape, and no quota spent', async () => {
    const { url } = await start({ rate: 1, burst: 1, clock: new ManualClock() });
    for (const headers of [{}, { authorization: 'Basic a2V5' }, { authorization: 'Bearer ' }] as Record<string, string>[]) {
      const response = await post(`${url}/v1/chat/completions`, HELLO, headers);
      expect(response.status).toBe(401);
      expect(response.body.error).toMatchObject({
        type: 'invalid_request_error',
        message: expect.stringContaining("You didn't provide an API key."),
      });
      expect(response.headers['x-ratelimit-limit-requests']).toBeUndefined();
    }
    const anthropic = await post(`${url}/v1/messages`, HELLO_ANTHROPIC, { 'anthropic-version': '2023-06-01' });
    expect(anthropic.status).toBe(401);
    expect(anthropic.body).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: 'x-api-key header is required' },
    });
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey())).status).toBe(200);
  });

  it("apiKeys: any other key gets the vendor's 401 on every route, quoted masked if at all, and takes no quota; the keys given are served", async () => {
    const accepted = 'sk-accepted-0001';
    const { url } = await start({ apiKeys: [accepted, 'sk-also-ok'], rate: 1, burst: 1, clock: new ManualClock() });
    const wrong = 'sk-wrong-key-7f3a9c2dXYZW';
    const openAiRefusal = {
      error: {
        message:
          'Incorrect API key provided: sk-******************XYZW. You can find your API key at https://platform.openai.com/account/api-keys.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    };
    const anthropicRefusal = { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } };
    const responses = { model: 'm', input: 'Hello.' };
    const exchanges: [string, Promise<JsonResponse>, object][] = [
      ['POST /v1/chat/completions', post(`${url}/v1/chat/completions`, HELLO, openAiKey(wrong)), openAiRefusal],
      ['POST /v1/responses', post(`${url}/v1/responses`, responses, openAiKey(wrong)), openAiRefusal],
      ['GET /v1/responses/{id}', get(`${url}/v1/responses/resp_1`, openAiKey(wrong)), openAiRefusal],
      ['GET /v1/models', get(`${url}/v1/models`, openAiKey(wrong)), openAiRefusal],
      ['GET /v1/models/{id}', get(`${url}/v1/models/m`, openAiKey(wrong)), openAiRefusal],
      ['POST /v1/messages', post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey(wrong)), anthropicRefusal],
      ['POST /v1/messages/count_tokens', post(`${url}/v1/messages/count_tokens`, HELLO, anthropicKey(wrong)), anthropicRefusal],
      ['GET /v1/models (Anthropic)', get(`${url}/v1/models`, anthropicKey(wrong)), anthropicRefusal],
      // Anthropic's route reads x-api-key first: a good bearer token does not stand in for a wrong one.
      [
        'POST /v1/messages, x-api-key wrong',
        post(`${url}/v1/messages`, HELLO_ANTHROPIC, { ...anthropicKey(wrong), ...openAiKey(accepted) }),
        anthropicRefusal,
      ],
    ];
    for (const [route, exchange, body] of exchanges) {
      const response = await exchange;
      expect(response.status, route).toBe(401);
      expect(response.body, route).toMatchObject(body);
      expect(JSON.stringify(response.body), route).not.toContain(wrong.slice(3, -4));
      // A key refused is no key: no quota is stated for it.
      expect(
        Object.keys(response.headers).filter((name) => name.includes('ratelimit')),
        route,
      ).toEqual([]);
    }
    // A short key is not quoted at all; no key is the missing-key 401, as without apiKeys.
    const short = await post(`${url}/v1/chat/completions`, HELLO, openAiKey('sk-short'));
    expect(short.body.error.message).toMatch(/^Incorrect API key provided: \*{8}\. /);
    const none = await post(`${url}/v1/chat/completions`, HELLO, {});
    expect(none).toMatchObject({ status: 401, body: { error: { message: expect.stringContaining("You didn't provide an API key.") } } });
    // The keys given are served, each with the whole of its quota (burst 1): the refusals took none.
    for (const key of [accepted, 'sk-also-ok']) {
      expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey(key))).status).toBe(200);
    }
    expect((await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey(accepted))).status).toBe(429);
  });

  const HUGE = 2 * 1024 * 1024;

  it.each([
    [
      '/v1/chat/completions',
      'authorization: Bearer key-a',
      (body: any) => expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large' }),
    ],
    [
      '/v1/messages',
      'x-api-key: key-a',
      (body: any) => expect(body).toMatchObject({ type: 'error', error: { type: 'request_too_large' } }),
    ],
  ])('%s: a declared length over 1 MiB gets 413 at once, the rest never read', async (path, keyHeader, checkShape) => {
    const { url } = await start();
    const head = `POST ${path} HTTP/1.1\r\nhost: x\r\n${keyHeader}\r\ncontent-type: application/json\r\ncontent-length: ${HUGE}\r\n\r\n`;
    // A kilobyte of the two megabytes declared: the server must not wait for the rest.
    const exchange = await rawExchange(url, head, ['{"model": "m", "messages": [', ' '.repeat(1024)], 10_000);
    const response = parseRaw(exchange.response);
    expect(response.status).toBe(413);
    checkShape(response.body);
    expect(response.body.error?.message ?? response.body.error.message).toContain('Request body too large: the limit is 1048576 bytes.');
    expect(response.headers.connection).toBe('close');
    expect(exchange.closedByServer).toBe(true);
  });

  it('a chunked body that grows past the cap gets 413 as it does, the rest never read', async () => {
    const { url } = await start();
    const head = 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer key-a\r\ntransfer-encoding: chunked\r\n\r\n';
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const chunks = Array.from({ length: 17 }, () =>
      Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]),
    );
    // 17 × 64 KiB is past 1 MiB, and the terminating chunk never comes.
    const exchange = await rawExchange(url, head, chunks, 10_000);
    expect(parseRaw(exchange.response).status).toBe(413);
    expect(exchange.closedByServer).toBe(true);
  });

  it('Expect: 100-continue with a length over the cap gets 413 instead of a go-ahead', async () => {
    const { url } = await start();
    const head = `POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: key-a\r\nexpect: 100-continue\r\ncontent-length: ${HUGE}\r\n\r\n`;
    const exchange = await rawExchange(url, head, [], 10_000);
    expect(exchange.response).not.toContain('100 Continue');
    expect(parseRaw(exchange.response).status).toBe(413);
  });

  it('the cap is maxBodyBytes: a body at it is read, one byte more is not', async () => {
    const body = JSON.stringify(HELLO);
    const { url } = await start({ maxBodyBytes: Buffer.byteLength(body) });
    expect((await post(`${url}/v1/chat/completions`, body, openAiKey())).status).toBe(200);
    expect((await post(`${url}/v1/chat/completions`, `${body} `, openAiKey())).status).toBe(413);
  });
});

describe('LlmServer quotas: a token bucket per API key, and the vendor’s headers', () => {
  it('OpenAI: the third call in a burst of 2 gets 429 with retry-after and retry-after-ms; another key is unaffected', async () => {
    const clock = new ManualClock();
    const { url } = await start({ rate: 1, burst: 2, clock });
    const first = await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-a'));
    // 1/s is 60 a minute; one of the two the burst allows is left, back in a second.
    expect(first.headers).toMatchObject({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '1s',
    });
    const second = await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-a'));
    expect(second.headers).toMatchObject({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2s' });
    const third = await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-a'));
    expect(third.status).toBe(429);
    expect(third.headers).toMatchObject({
      'retry-after': '1',
      'retry-after-ms': '1000',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-limit-requests': '60',
    });
    expect(third.body).toEqual({
      error: {
        message: 'Rate limit reached on requests per min (RPM): Limit 60, Remaining 0, Requested 1. Please try again in 1000ms.',
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    const other = await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-b'));
    expect(other.status).toBe(200);
    expect(other.headers['x-ratelimit-remaining-requests']).toBe('1');

    await clock.advance(999);
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-a'))).status).toBe(429);
    await clock.advance(1);
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-a'))).status).toBe(200);
  });

  it('Anthropic: anthropic-ratelimit-* headers, 429 with retry-after in whole seconds only', async () => {
    const clock = new ManualClock();
    const { url } = await start({ rate: 2, burst: 1, clock });
    const before = Date.now();
    const first = await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey());
    expect(first.headers).toMatchObject({ 'anthropic-ratelimit-requests-limit': '120', 'anthropic-ratelimit-requests-remaining': '0' });
    const resetMs = Date.parse(first.headers['anthropic-ratelimit-requests-reset']!) - before;
    expect(resetMs).toBeGreaterThanOrEqual(500);
    expect(resetMs).toBeLessThan(5_000);
    const second = await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey());
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBe('1');
    expect(second.headers['retry-after-ms']).toBeUndefined();
    expect(second.body).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringContaining('Please try again in 500ms') },
    });
    expect((await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey('key-b'))).status).toBe(200);
  });

  it('tokens per minute: each answer takes its usage, a 429 when a key has not enough, x-should-retry false when it never will', async () => {
    const probe = await start();
    const usage = (await post(`${probe.url}/v1/chat/completions`, HELLO, openAiKey())).body.usage;
    const perCall = usage.total_tokens as number;

    const clock = new ManualClock();
    const tpm = perCall + Math.floor(perCall / 2);
    const { url } = await start({ tokensPerMinute: tpm, clock });
    const first = await post(`${url}/v1/chat/completions`, HELLO, openAiKey());
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({ 'x-ratelimit-limit-tokens': String(tpm), 'x-ratelimit-remaining-tokens': String(tpm - perCall) });
    const second = await post(`${url}/v1/chat/completions`, HELLO, openAiKey());
    expect(second.status).toBe(429);
    expect(second.body.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
    // The tokens missing come back at tpm / 60 per second.
    const missing = perCall - (tpm - perCall);
    expect(Number(second.headers['retry-after-ms'])).toBe(Math.ceil((missing * 60_000) / tpm));
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey('key-b'))).status).toBe(200);

    const tooBig = { model: 'm', messages: [{ role: 'user', content: ARTICLE.text.repeat(5) }] };
    const never = await post(`${url}/v1/chat/completions`, tooBig, openAiKey('key-c'));
    expect(never.status).toBe(429);
    expect(never.headers['x-should-retry']).toBe('false');
    expect(never.headers['retry-after']).toBeUndefined();
    expect(never.body.error.message).toContain(`Request too large on tokens per min (TPM): Limit ${tpm}, Requested `);
  });

  it('rate inf: no 429 however fast, and no request limit stated', async () => {
    const { url } = await start({ rate: Infinity, burst: 1, tokensPerMinute: 1_000_000 });
    const statuses = await Promise.all(Array.from({ length: 30 }, () => post(`${url}/v1/chat/completions`, HELLO, openAiKey())));
    expect(statuses.map((response) => response.status)).toEqual(Array(30).fill(200));
    expect(statuses[29]!.headers['x-ratelimit-limit-requests']).toBeUndefined();
    expect(statuses[29]!.headers['x-ratelimit-limit-tokens']).toBe('1000000');
  });
});

describe('LlmServer simulates latency and failures as the in-process provider does', () => {
  it('waits at least the minimum latency', async () => {
    const { url } = await start({ simulation: { minLatencyMs: 150, maxLatencyMs: 160 } });
    const startedMs = performance.now();
    expect((await post(`${url}/v1/chat/completions`, HELLO, openAiKey())).status).toBe(200);
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(150);
  });

  const always = (field: 'rateLimitedProbability' | 'serverErrorProbability' | 'hangProbability') => ({
    rateLimitedProbability: 0,
    serverErrorProbability: 0,
    hangProbability: 0,
    [field]: 1,
  });

  it.each([
    ['a 429', 429, 'requests', 429, 'rate_limit_error', always('rateLimitedProbability')],
    ['a server error', 503, 'server_error', 529, 'overloaded_error', always('serverErrorProbability')],
    ['a hang', 504, 'server_error', 504, 'timeout_error', always('hangProbability')],
  ])(
    'the profile draws %s: OpenAI %i %s, Anthropic %i %s',
    async (_, openAiStatus, openAiType, anthropicStatus, anthropicType, profile) => {
      const { url } = await start({ simulation: { ...INSTANT, profile, hangMs: 20 } });
      const openai = await post(`${url}/v1/chat/completions`, HELLO, openAiKey());
      expect(openai.status).toBe(openAiStatus);
      expect(openai.body.error.type).toBe(openAiType);
      const anthropic = await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey());
      expect(anthropic.status).toBe(anthropicStatus);
      expect(anthropic.body.error.type).toBe(anthropicType);
      if (openAiStatus === 429) {
        expect(Number(openai.headers['retry-after-ms'])).toBeGreaterThanOrEqual(100);
        expect(Number(openai.headers['retry-after-ms'])).toBeLessThanOrEqual(1000);
        expect(anthropic.headers['retry-after']).toBe('1');
      }
    },
  );

  it('an outage window: 503 on the OpenAI route, 529 on the Anthropic one', async () => {
    const { url } = await start({ simulation: { ...INSTANT, outage: { startMs: 0, endMs: 60_000 } } });
    const openai = await post(`${url}/v1/chat/completions`, HELLO, openAiKey());
    expect(openai.status).toBe(503);
    expect(openai.body.error.message).toContain('outage');
    expect((await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey())).status).toBe(529);
  });

  it('a seed replays each call’s fate in arrival order, the same as the in-process provider', async () => {
    const simulation = { ...INSTANT, profile: 'production' as const, seed: 7, hangMs: 5 };
    const reference = new SimulatedProvider(simulation);
    const expected: number[] = [];
    for (let i = 0; i < 40; i++) {
      expected.push(
        await reference.call(builtinRequest('summarize', String(i), '', 'x')).then(
          () => 200,
          (error) => (error instanceof RateLimitError ? 429 : error instanceof ServerError ? 503 : error instanceof TimeoutError ? 504 : 0),
        ),
      );
    }
    expect(new Set(expected).size).toBeGreaterThan(2);
    const statuses = async (seed: number) => {
      const { url } = await start({ simulation: { ...simulation, seed }, rate: Infinity });
      const seen: number[] = [];
      for (let i = 0; i < 40; i++) seen.push((await post(`${url}/v1/chat/completions`, HELLO, openAiKey())).status);
      return seen;
    };
    expect(await statuses(7)).toEqual(expected);
    expect(await statuses(8)).not.toEqual(expected);
  });
});

describe('LlmServer metrics and logs name keys by fingerprint only', () => {
  it('GET /metrics: requests by route, status and key; latency; tokens left per key', async () => {
    const { url } = await start({ rate: 1, burst: 2, tokensPerMinute: 10_000, clock: new ManualClock() });
    for (let i = 0; i < 3; i++) await post(`${url}/v1/chat/completions`, HELLO, openAiKey('sk-secret-a'));
    await post(`${url}/v1/messages`, HELLO_ANTHROPIC, anthropicKey('sk-secret-b'));
    await post(`${url}/v1/chat/completions`, HELLO, {});
    const scrape = await get(`${url}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers['content-type']).toContain('text/plain');
    const a = keyFingerprint('sk-secret-a');
    const b = keyFingerprint('sk-secret-b');
    expect(scrape.text).toContain(`serve_requests_total{route="/v1/chat/completions",status="200",key="${a}"} 2`);
    expect(scrape.text).toContain(`serve_requests_total{route="/v1/chat/completions",status="429",key="${a}"} 1`);
    expect(scrape.text).toContain(`serve_requests_total{route="/v1/messages",status="200",key="${b}"} 1`);
    expect(scrape.text).toContain('serve_requests_total{route="/v1/chat/completions",status="401",key=""} 1');
    expect(scrape.text).toContain('serve_request_duration_seconds_count{route="/v1/chat/completions"} 4');
    expect(scrape.text).toContain(`serve_rate_limit_remaining{key="${a}",limit="requests"} 0`);
    expect(scrape.text).toContain(`serve_rate_limit_remaining{key="${b}",limit="requests"} 1`);
    expect(scrape.text).toMatch(new RegExp(`serve_rate_limit_remaining\\{key="${b}",limit="tokens"\\} \\d+`));
    expect(scrape.text).not.toContain('sk-secret');
  });

  it('keys past maxKeyLabels are counted under "other"', async () => {
    const { url } = await start({ maxKeyLabels: 1 });
    await post(`${url}/v1/chat/completions`, HELLO, openAiKey('first'));
    await post(`${url}/v1/chat/completions`, HELLO, openAiKey('second'));
    await post(`${url}/v1/chat/completions`, HELLO, openAiKey('third'));
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="200",key="${keyFingerprint('first')}"} 1`);
    expect(text).toContain('serve_requests_total{route="/v1/chat/completions",status="200",key="other"} 2');
  });

  it('logs a line per request at info, with the key’s fingerprint and never the key', async () => {
    const lines: any[] = [];
    const sink = new Writable({
      write(chunk, _, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const { url } = await start({ logger: pino({ level: 'info' }, sink) });
    await post(`${url}/v1/chat/completions`, HELLO, openAiKey('sk-live-123'));
    await post(`${url}/v1/chat/completions?x=1`, '{', openAiKey('sk-live-123'));
    await get(`${url}/healthz`);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      msg: 'request',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      key: keyFingerprint('sk-live-123'),
    });
    expect(lines[1]).toMatchObject({ path: '/v1/chat/completions?x=1', status: 400 });
    expect(lines[2]).toMatchObject({ path: '/healthz', status: 200 });
    expect(lines[2].key).toBeUndefined();
    expect(JSON.stringify(lines)).not.toContain('sk-live-123');
  });
});

describe('LlmServer.close', () => {
  it('lets requests in flight finish, then refuses connections', async () => {
    const { server, url } = await start({ simulation: { minLatencyMs: 300, maxLatencyMs: 300 } });
    const inFlight = post(`${url}/v1/chat/completions`, HELLO, openAiKey());
    while (server.inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(response.headers.connection).toBe('close');
    await closing;
    expect(closed).toBe(true);
    expect(server.url).toBeUndefined();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('a client that goes away mid-answer is counted as 499 and frees its slot', async () => {
    const { server, url } = await start({ simulation: { minLatencyMs: 5_000, maxLatencyMs: 5_000 } });
    const controller = new AbortController();
    const request = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: openAiKey(),
      body: JSON.stringify(HELLO),
      signal: controller.signal,
    }).catch((error: Error) => error);
    while (server.inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await request;
    while (server.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain(`serve_requests_total{route="/v1/chat/completions",status="499",key="${keyFingerprint('key-a')}"} 1`);
  });
});

describe('LlmServer options', () => {
  it.each([
    [{ rate: 0 }, 'Expected rate to be a number > 0 (requests per second), got 0'],
    [{ burst: 1.5 }, 'Expected burst to be an integer >= 1, got 1.5'],
    [{ tokensPerMinute: 0 }, 'Expected tokensPerMinute to be an integer >= 1, got 0'],
    [{ tokensPerSecond: 0 }, 'Expected tokensPerSecond to be a number > 0 (tokens per second), got 0'],
    [{ failMidStream: 1.5 }, 'Expected failMidStream to be a finite number in [0, 1], got 1.5'],
    [{ lenientSchemas: 'yes' }, 'Expected lenientSchemas to be a boolean, got "yes"'],
    [{ maxBodyBytes: -1 }, 'Expected maxBodyBytes to be an integer >= 1, got -1'],
    [{ batchDurationMs: -1 }, 'Expected batchDurationMs to be a finite number >= 0 (ms), got -1'],
    [{ batchWindowMs: 0 }, 'Expected batchWindowMs to be a finite number > 0 (ms), got 0'],
    [{ batchQueueTokens: 0.5 }, 'Expected batchQueueTokens to be an integer >= 1, got 0.5'],
    [{ maxBatchBytes: 0 }, 'Expected maxBatchBytes to be an integer >= 1, got 0'],
    [{ models: 'gpt' }, 'Expected models to be an array of model ids, got "gpt"'],
    [{ models: [''] }, 'Expected each model to be a non-empty string, got ""'],
    [{ simulation: { minLatencyMs: 5, maxLatencyMs: 1 } }, 'Expected minLatencyMs to be at most maxLatencyMs (1), got 5'],
    // Keys are secrets: never quoted back.
    [{ apiKeys: [] }, 'Expected apiKeys to be a non-empty array of API keys, got an empty one'],
    [{ apiKeys: 'sk-secret' }, 'Expected apiKeys to be a non-empty array of API keys, got string'],
    [{ apiKeys: ['sk-fine', 'sk secret'] }, 'Expected apiKeys[1] to be printable ASCII without spaces, got a string of 9 characters'],
    [{ apiKeys: [''] }, 'Expected apiKeys[0] to be printable ASCII without spaces, got a string of 0 characters'],
    [{ apiKeys: [42] }, 'Expected apiKeys[0] to be printable ASCII without spaces, got number'],
  ])('%j: TypeError', (options, message) => {
    expect(() => new LlmServer(options as LlmServerOptions)).toThrow(new TypeError(message));
  });

  it('listen: a bad port is a TypeError, a taken one rejects with EADDRINUSE', async () => {
    const { url } = await start();
    await expect(new LlmServer().listen({ port: 70_000 })).rejects.toThrow(
      new TypeError('Expected port to be an integer in [0, 65535], got 70000'),
    );
    const taken = new LlmServer();
    await expect(taken.listen({ port: Number(new URL(url).port) })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await taken.close();
  });
});
