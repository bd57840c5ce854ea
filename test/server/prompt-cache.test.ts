import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import type { Tokenizer } from '../../src/server/answer-choices.ts';
import type { ChatAnswer, ChatRequest } from '../../src/vendors/serve/chat-api.ts';
import { LlmServer } from '../../src/server/index.ts';
import { PromptCache } from '../../src/server/prompt-cache.ts';
import { minCacheTokens } from '../../src/vendors/anthropic/defaults.ts';
import { markedPrefix } from '../../src/vendors/anthropic/serve-messages.ts';
import { automaticPrefix } from '../../src/vendors/openai/serve-chat.ts';
import { encodeAnthropic } from '../../src/vendors/anthropic/encode.ts';
import { encodeOpenAi } from '../../src/vendors/openai/encode.ts';
import { post } from './http.ts';

/** One token a word: counts that can be checked by eye. */
const WORDS: Tokenizer = {
  encode: (text) =>
    text
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => word.length),
  decode: () => '',
  pieces: () => [],
};
const words = (count: number, word = 'rule') => Array.from({ length: count }, () => word).join(' ');
const ANSWER: ChatAnswer = { choices: [], inputTokens: 0, outputTokens: 5, createdSeconds: 0 };
const SHAPE = { kind: 'text' } as const;

function anthropic(head: string, rest: string, model = 'claude-sonnet-4-5'): { request: ChatRequest; answer: ChatAnswer } {
  const body = {
    model,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: head, cache_control: { type: 'ephemeral' } },
          { type: 'text', text: rest },
        ],
      },
    ],
  };
  const promptText = `${head}\n${rest}`;
  return {
    request: { model, promptText, lastUserText: promptText, shape: SHAPE, cachePrefix: markedPrefix(body, minCacheTokens(model)) },
    answer: { ...ANSWER, inputTokens: WORDS.encode(promptText).length },
  };
}

function openAi(prompt: string, key = 'task-a'): { request: ChatRequest; answer: ChatAnswer } {
  return {
    request: {
      model: 'gpt-4.1-mini',
      promptText: prompt,
      lastUserText: prompt,
      shape: SHAPE,
      cachePrefix: automaticPrefix({ prompt_cache_key: key }),
    },
    answer: { ...ANSWER, inputTokens: WORDS.encode(prompt).length },
  };
}

describe('PromptCache (Anthropic: the marked prefix)', () => {
  it('writes the prefix on the first request and reads it on the next within the TTL, each key its own', () => {
    const cache = new PromptCache(300_000, new ManualClock());
    const first = anthropic(words(1100), 'one article');
    expect(cache.apply('key-a', first.request, first.answer, WORDS)).toMatchObject({ inputTokens: 1102, cacheWriteTokens: 1100 });
    const second = anthropic(words(1100), 'another article here');
    expect(cache.apply('key-a', second.request, second.answer, WORDS)).toMatchObject({ inputTokens: 1103, cacheReadTokens: 1100 });
    // Another key has its own cache: it writes.
    expect(cache.apply('key-b', second.request, second.answer, WORDS)).toMatchObject({ cacheWriteTokens: 1100 });
  });

  it('forgets a prefix unused for the TTL; each use keeps it another TTL', async () => {
    const clock = new ManualClock();
    const cache = new PromptCache(300_000, clock);
    const { request, answer } = anthropic(words(1100), 'article');
    cache.apply('key-a', request, answer, WORDS);
    await clock.advance(299_999);
    expect(cache.apply('key-a', request, answer, WORDS).cacheReadTokens).toBe(1100);
    await clock.advance(299_999);
    expect(cache.apply('key-a', request, answer, WORDS).cacheReadTokens).toBe(1100);
    await clock.advance(300_000);
    const after = cache.apply('key-a', request, answer, WORDS);
    expect(after.cacheReadTokens).toBeUndefined();
    expect(after.cacheWriteTokens).toBe(1100);
  });

  it('caches nothing short of the model’s minimum, and nothing unmarked', () => {
    const cache = new PromptCache(300_000, new ManualClock());
    const short = anthropic(words(1000), 'article');
    expect(cache.apply('key-a', short.request, short.answer, WORDS)).toBe(short.answer);
    // Haiku 4.5 caches 4,096 tokens or more.
    const haiku = anthropic(words(1100), 'article', 'claude-haiku-4-5');
    expect(cache.apply('key-a', haiku.request, haiku.answer, WORDS)).toBe(haiku.answer);
    const { request, answer } = anthropic(words(1100), 'article');
    const unmarked = { ...request, cachePrefix: undefined };
    expect(cache.apply('key-a', unmarked, answer, WORDS)).toBe(answer);
  });

  it('takes a changed prefix for another one', () => {
    const cache = new PromptCache(300_000, new ManualClock());
    const first = anthropic(words(1100), 'article');
    cache.apply('key-a', first.request, first.answer, WORDS);
    const changed = anthropic(words(1100, 'norm'), 'article');
    expect(cache.apply('key-a', changed.request, changed.answer, WORDS).cacheWriteTokens).toBe(1100);
  });
});

describe('PromptCache (OpenAI: the shared prefix, by prompt_cache_key)', () => {
  it('serves the prefix a prompt shares with the last one of its key, in steps of 128 from 1,024, and reports no writes', () => {
    const cache = new PromptCache(300_000, new ManualClock());
    const first = openAi(`${words(1300)} first article`);
    const none = cache.apply('key-a', first.request, first.answer, WORDS);
    expect(none).toBe(first.answer);
    const second = openAi(`${words(1300)} second article`);
    // 1,300 tokens shared: served 1,280 (1,024 + 2 × 128).
    expect(cache.apply('key-a', second.request, second.answer, WORDS)).toMatchObject({ inputTokens: 1302, cacheReadTokens: 1280 });
    // Another cache key, or another API key, starts cold.
    const other = openAi(`${words(1300)} third`, 'task-b');
    expect(cache.apply('key-a', other.request, other.answer, WORDS).cacheReadTokens).toBeUndefined();
    expect(cache.apply('key-b', second.request, second.answer, WORDS).cacheReadTokens).toBeUndefined();
  });

  it('caches no prompt under 1,024 tokens, nor after the TTL', async () => {
    const clock = new ManualClock();
    const cache = new PromptCache(300_000, clock);
    const short = openAi(words(1000));
    cache.apply('key-a', short.request, short.answer, WORDS);
    expect(cache.apply('key-a', short.request, short.answer, WORDS).cacheReadTokens).toBeUndefined();
    const long = openAi(words(1100));
    cache.apply('key-a', long.request, long.answer, WORDS);
    await clock.advance(300_000);
    expect(cache.apply('key-a', long.request, long.answer, WORDS).cacheReadTokens).toBeUndefined();
  });
});

describe('serve reports the prompt cache in each vendor’s usage fields', () => {
  const servers: LlmServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  const SCHEMA = { type: 'object', properties: { label: { type: 'string' } }, required: ['label'], additionalProperties: false };
  const HEAD = `You label news articles. ${'Follow the house rules closely and say nothing else. '.repeat(120)}Article: `;
  const request = (article: string): LlmRequest => ({
    task: 'label',
    articleId: '1',
    prompt: HEAD + article,
    promptHeadLength: HEAD.length,
    schema: SCHEMA,
  });

  async function start(): Promise<string> {
    const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 } });
    servers.push(server);
    return server.listen({ port: 0 });
  }

  it('Anthropic: the first request writes the marked head, the second reads it, another key writes its own', async () => {
    const url = await start();
    const send = (article: string, key = 'key-a') =>
      post(`${url}/v1/messages`, encodeAnthropic(request(article), 'claude-sonnet-4-5', 100), { 'x-api-key': key });
    const first = (await send('Rain in Paris.')).body.usage;
    expect(first.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(first.cache_read_input_tokens).toBe(0);
    const second = (await send('Snow falls on Oslo tonight.')).body.usage;
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    // input_tokens are what the cache did not serve: the article's words.
    expect(second.input_tokens).toBeLessThan(20);
    expect((await send('Rain in Paris.', 'key-b')).body.usage.cache_creation_input_tokens).toBe(first.cache_creation_input_tokens);
  });

  it('OpenAI: the second request with the same prompt_cache_key and head reports cached_tokens among its prompt tokens', async () => {
    const url = await start();
    const send = (article: string) =>
      post(`${url}/v1/chat/completions`, encodeOpenAi(request(article), 'gpt-4.1-mini', 100), { authorization: 'Bearer key-a' });
    const first = (await send('Rain in Paris.')).body.usage;
    expect(first.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    const second = (await send('Snow falls on Oslo tonight.')).body.usage;
    expect(second.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(1024);
    expect(second.prompt_tokens_details.cached_tokens % 128).toBe(0);
    expect(second.prompt_tokens_details.cached_tokens).toBeLessThanOrEqual(second.prompt_tokens);
  });
});
