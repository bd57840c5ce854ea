// The AI SDK and LangChain pointed at the proxy, unchanged: their chat models over both vendors' APIs, whole and streamed.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText, type LanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateway, stopAll, twoVendors, upstream } from './gateway.ts';

let url: string;

beforeAll(async () => {
  const up = await upstream();
  ({ url } = await gateway({
    providers: twoVendors(up.url, up.url),
    models: { 'gpt-4o-mini': 'oa', 'claude-haiku-4-5': 'an' },
    keys: [{ name: 'frameworks', key: 'sk-frameworks', maxCostUsd: 1 }],
  }));
});

afterAll(stopAll);

const PROMPT = 'Summarise: the council approved the new bridge after a long debate.';

describe.each<[string, () => LanguageModel]>([
  ['the AI SDK over chat completions', () => createOpenAI({ apiKey: 'sk-frameworks', baseURL: `${url}/v1` }).chat('gpt-4o-mini')],
  ['the AI SDK over messages', () => createAnthropic({ apiKey: 'sk-frameworks', baseURL: `${url}/v1` })('claude-haiku-4-5')],
])('%s', (_name, model) => {
  it('generateText: the answer and its usage', async () => {
    const result = await generateText({ model: model(), prompt: PROMPT, maxRetries: 0 });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('streamText: the answer in pieces, then the usage', async () => {
    const result = streamText({ model: model(), prompt: PROMPT, maxRetries: 0 });
    let text = '';
    for await (const piece of result.textStream) text += piece;
    expect(text.length).toBeGreaterThan(0);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
  });
});

describe.each([
  [
    'ChatOpenAI',
    () => new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-frameworks', configuration: { baseURL: `${url}/v1` }, maxRetries: 0 }),
  ],
  ['ChatAnthropic', () => new ChatAnthropic({ model: 'claude-haiku-4-5', apiKey: 'sk-frameworks', anthropicApiUrl: url, maxRetries: 0 })],
])('LangChain %s', (_name, chat) => {
  it('invoke: the answer and its usage', async () => {
    const message = await chat().invoke(PROMPT);
    expect(String(message.content).length).toBeGreaterThan(0);
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
  });

  it('.stream(): the answer in chunks', async () => {
    let text = '';
    for await (const chunk of await chat().stream(PROMPT)) text += String(chunk.content);
    expect(text.length).toBeGreaterThan(0);
  });
});
