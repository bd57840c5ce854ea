// The Vercel AI SDK 6 and LangChain JS against `LlmServer` on loopback, on their default paths:
// what code written with them sees pointed at serve instead of the vendors.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, streamText, type LanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { LlmServer } from '../../src/server/index.ts';
import { summarize } from '../../src/simulator/text-analysis.ts';

let server: LlmServer;
let url: string;
beforeAll(async () => {
  server = new LlmServer({ rate: Infinity, simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, tokensPerSecond: 10_000 });
  url = await server.listen({ port: 0 });
});
afterAll(() => server.close());

const PROMPT = 'The city council approved a new budget on Monday. Residents welcomed the plan. Critics warned of debt.';
const ANSWER = summarize('', PROMPT);

/** Objects, arrays with bounds, enums, bounded numbers and nullable fields, nested. */
const REPORT = z.object({
  headline: z.string(),
  tone: z.enum(['hopeful', 'worried', 'neutral']),
  confidence: z.number().min(0).max(1),
  sources: z
    .array(z.object({ name: z.string(), trust: z.number().int().min(1).max(5), url: z.string().nullable() }))
    .min(1)
    .max(3),
  tags: z.array(z.string()).min(2).max(4),
  followUp: z.object({ needed: z.boolean(), by: z.string().nullable() }),
});

const openai = () => createOpenAI({ apiKey: 'sk-ai-sdk', baseURL: `${url}/v1` });
const anthropic = () => createAnthropic({ apiKey: 'sk-ai-sdk', baseURL: `${url}/v1` });
const models: [string, () => LanguageModel][] = [
  ['openai.chat()', () => openai().chat('gpt-4o-mini')],
  ['openai() (the Responses API)', () => openai()('gpt-4o-mini')],
  ['anthropic()', () => anthropic()('claude-haiku-4-5')],
];

describe.each(models)('the AI SDK, %s', (_, model) => {
  it('generateText: the answer and its usage', async () => {
    const result = await generateText({ model: model(), prompt: PROMPT, maxRetries: 0 });
    expect(result.text).toBe(ANSWER);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('generateObject with a nested zod schema: an object the schema parses', async () => {
    const { object } = await generateObject({ model: model(), schema: REPORT, prompt: PROMPT, maxRetries: 0 });
    expect(REPORT.parse(object)).toEqual(object);
  });

  it('streamText: the answer in pieces, then the usage', async () => {
    const result = streamText({ model: model(), prompt: PROMPT, maxRetries: 0 });
    const pieces: string[] = [];
    for await (const piece of result.textStream) pieces.push(piece);
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe(ANSWER);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    expect(await result.finishReason).toBe('stop');
  });
});

const chatOpenAI = (options: { useResponsesApi?: boolean } = {}) =>
  new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-langchain', configuration: { baseURL: `${url}/v1` }, maxRetries: 0, ...options });
const chatAnthropic = () => new ChatAnthropic({ model: 'claude-haiku-4-5', apiKey: 'sk-langchain', anthropicApiUrl: url, maxRetries: 0 });
/** JSON mode writes what the prompt asks for: LangChain's way is the schema in the prompt. */
const ASK_FOR_JSON = `${PROMPT}\n\nAnswer with JSON that fits this schema:\n\`\`\`json\n${JSON.stringify(z.toJSONSchema(REPORT))}\n\`\`\``;

describe.each([
  ['ChatOpenAI', () => chatOpenAI()],
  ['ChatOpenAI with useResponsesApi', () => chatOpenAI({ useResponsesApi: true })],
  ['ChatAnthropic', () => chatAnthropic()],
] as const)('LangChain %s', (_, chat) => {
  it('invoke: the answer and its usage', async () => {
    const message = await chat().invoke(PROMPT);
    expect(message.text).toBe(ANSWER);
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
  });

  it('.stream(): the answer in chunks', async () => {
    let text = '';
    let chunks = 0;
    for await (const chunk of await chat().stream(PROMPT)) {
      text += chunk.text;
      chunks++;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe(ANSWER);
  });
});

describe('LangChain withStructuredOutput', () => {
  it.each(['jsonSchema', 'functionCalling', 'jsonMode'] as const)('ChatOpenAI, method %s: an object the schema parses', async (method) => {
    const object = await chatOpenAI()
      .withStructuredOutput(REPORT, { method })
      .invoke(method === 'jsonMode' ? ASK_FOR_JSON : PROMPT);
    expect(REPORT.parse(object)).toEqual(object);
  });

  it.each(['jsonSchema', 'functionCalling'] as const)('ChatAnthropic, method %s: an object the schema parses', async (method) => {
    const object = await chatAnthropic().withStructuredOutput(REPORT, { method }).invoke(PROMPT);
    expect(REPORT.parse(object)).toEqual(object);
  });

  it('ChatAnthropic, method jsonMode: LangChain takes jsonSchema instead (Anthropic has no JSON mode), and it works', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const object = await chatAnthropic().withStructuredOutput(REPORT, { method: 'jsonMode' }).invoke(PROMPT);
      expect(REPORT.parse(object)).toEqual(object);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('Falling back to "jsonSchema"'));
    } finally {
      warn.mockRestore();
    }
  });
});
