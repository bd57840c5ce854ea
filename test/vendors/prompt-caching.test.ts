import { describe, expect, it } from 'vitest';
import { usageNanoUsd, withCachePrices, worstCaseNanoUsd } from '../../src/gate/call-cost.ts';
import { ManualClock } from '../../src/clock.ts';
import { gateCaller } from '../gate-caller.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { decodeAnthropic } from '../../src/vendors/anthropic/decode.ts';
import { ANTHROPIC_DEFAULTS, ANTHROPIC_MIN_CACHE_TOKENS, minCacheTokens } from '../../src/vendors/anthropic/defaults.ts';
import { encodeAnthropic } from '../../src/vendors/anthropic/encode.ts';
import { decodeOpenAi } from '../../src/vendors/openai/decode.ts';
import { OPENAI_DEFAULTS } from '../../src/vendors/openai/defaults.ts';
import { encodeOpenAi } from '../../src/vendors/openai/encode.ts';

const SCHEMA = { type: 'object', properties: { label: { type: 'string' } }, required: ['label'], additionalProperties: false } as const;
/** About 1,500 tokens at four characters a token: past the minimum of most Claude models, short of Haiku 4.5's. */
const LONG_HEAD = `You label news articles. ${'Follow the house rules closely. '.repeat(190)}Article: `;

function request(head: string, article: string, task = 'label'): LlmRequest {
  return { task, articleId: '1', prompt: head + article, promptHeadLength: head.length, schema: SCHEMA };
}

describe('encodeAnthropic() marks the prompt head', () => {
  it('sends a head as long as the model caches as the first block, marked cache_control ephemeral, the rest after it', () => {
    const body = encodeAnthropic(request(LONG_HEAD, 'Rain in Paris.'), 'claude-sonnet-4-5', 100);
    expect(body.messages[0]!.content).toEqual([
      { type: 'text', text: LONG_HEAD, cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Rain in Paris.' },
    ]);
  });

  it('leaves a head shorter than the model’s minimum unmarked, the prompt one string', () => {
    // Haiku 4.5 caches 4,096 tokens or more; the same head is long enough for Sonnet 4.5 above.
    expect(minCacheTokens('claude-haiku-4-5')).toBe(4096);
    expect(encodeAnthropic(request(LONG_HEAD, 'Rain.'), 'claude-haiku-4-5', 100).messages[0]!.content).toBe(`${LONG_HEAD}Rain.`);
    expect(encodeAnthropic(request('Label: ', 'Rain.'), 'claude-sonnet-4-5', 100).messages[0]!.content).toBe('Label: Rain.');
  });

  it('sends a prompt that is all head as the marked block alone (Anthropic refuses an empty text block)', () => {
    expect(encodeAnthropic(request(LONG_HEAD, ''), 'claude-sonnet-4-5', 100).messages[0]!.content).toEqual([
      { type: 'text', text: LONG_HEAD, cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('takes an unlisted model at the minimum of most Claude models', () => {
    expect(minCacheTokens('claude-sonnet-4-5-20250929')).toBe(ANTHROPIC_MIN_CACHE_TOKENS);
    expect(minCacheTokens('claude-3-5-haiku-latest')).toBe(2048);
  });
});

describe('encodeOpenAi() names the prompt cache', () => {
  it('gives every request of a task with the same head the same prompt_cache_key, another head or task another', () => {
    const first = encodeOpenAi(request(LONG_HEAD, 'Rain.'), 'gpt-4.1-mini', 100);
    const second = encodeOpenAi(request(LONG_HEAD, 'Snow in Oslo.'), 'gpt-4.1-mini', 100);
    expect(first.prompt_cache_key).toMatch(/^label-[0-9a-f]{32}$/);
    expect(second.prompt_cache_key).toBe(first.prompt_cache_key);
    expect(encodeOpenAi(request('Other rules: ', 'Rain.'), 'gpt-4.1-mini', 100).prompt_cache_key).not.toBe(first.prompt_cache_key);
    expect(encodeOpenAi(request(LONG_HEAD, 'Rain.', 'tag'), 'gpt-4.1-mini', 100).prompt_cache_key).not.toBe(first.prompt_cache_key);
    // The prompt itself is sent whole, its head first: OpenAI caches the prefix by itself.
    expect(first.messages).toEqual([{ role: 'user', content: `${LONG_HEAD}Rain.` }]);
  });

  it('sends no key for a prompt without a head', () => {
    expect(encodeOpenAi({ ...request('', 'Rain.'), promptHeadLength: undefined }, 'gpt-4.1-mini', 100)).not.toHaveProperty(
      'prompt_cache_key',
    );
  });
});

describe('the decoders read the prompt cache into the usage', () => {
  const anthropicMessage = (usage: Record<string, unknown>) => ({
    id: 'msg_1',
    model: 'claude-sonnet-4-5',
    stop_reason: 'tool_use',
    content: [{ type: 'tool_use', id: 't', name: 'label', input: { label: 'rain' } }],
    usage,
  });

  it('Anthropic: input_tokens leave the cache’s reads and writes out, the usage counts them all', async () => {
    const read = await decodeAnthropic(
      request(LONG_HEAD, 'Rain.'),
      anthropicMessage({ input_tokens: 12, output_tokens: 5, cache_read_input_tokens: 1500, cache_creation_input_tokens: 0 }),
      { headers: {} },
      100,
    );
    expect(read.usage).toEqual({ inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1500 });
    const written = await decodeAnthropic(
      request(LONG_HEAD, 'Rain.'),
      anthropicMessage({ input_tokens: 12, output_tokens: 5, cache_read_input_tokens: null, cache_creation_input_tokens: 1500 }),
      { headers: {} },
      100,
    );
    expect(written.usage).toEqual({ inputTokens: 1512, outputTokens: 5, cacheWriteTokens: 1500 });
  });

  it('OpenAI: cached_tokens are among prompt_tokens', async () => {
    const completion = {
      id: 'chatcmpl-1',
      model: 'gpt-4.1-mini',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: '{"label":"rain"}', refusal: null } }],
      usage: { prompt_tokens: 1512, completion_tokens: 5, total_tokens: 1517, prompt_tokens_details: { cached_tokens: 1408 } },
    };
    const answer = await decodeOpenAi(request(LONG_HEAD, 'Rain.'), completion, { headers: {} }, 100);
    expect(answer.usage).toEqual({ inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1408 });
  });
});

describe('the cost of a call from its prompt cache fields', () => {
  const price = { inputPerMTok: 3, outputPerMTok: 15 };

  it('Anthropic’s ratios: reads at 0.1× the input price, writes at 1.25×', () => {
    const priced = withCachePrices(price, ANTHROPIC_DEFAULTS.promptCacheRatios);
    expect(priced.cachedInputPerMTok).toBeCloseTo(0.3, 12);
    expect(priced.cacheWritePerMTok).toBe(3.75);
    // 12 plain tokens at $3, 1,500 read at $0.30, 5 out at $15 (per million), in nano-dollars.
    expect(usageNanoUsd({ inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1500 }, priced)).toBe(12 * 3000 + 1500 * 300 + 5 * 15_000);
    expect(usageNanoUsd({ inputTokens: 1512, outputTokens: 5, cacheWriteTokens: 1500 }, priced)).toBe(12 * 3000 + 1500 * 3750 + 5 * 15_000);
    // The same call without the cache: every input token at the input price.
    expect(usageNanoUsd({ inputTokens: 1512, outputTokens: 5 }, priced)).toBe(1512 * 3000 + 5 * 15_000);
  });

  it('OpenAI’s: cached input at half the input price unless stated, writes at the input price', () => {
    const priced = withCachePrices(price, OPENAI_DEFAULTS.promptCacheRatios);
    expect(priced).toMatchObject({ cachedInputPerMTok: 1.5, cacheWritePerMTok: 3 });
    expect(usageNanoUsd({ inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1408 }, priced)).toBe(104 * 3000 + 1408 * 1500 + 5 * 15_000);
    // A price that states its cached input (GPT-4.1's quarter) wins over the ratio.
    expect(withCachePrices({ ...price, cachedInputPerMTok: 0.75 }, OPENAI_DEFAULTS.promptCacheRatios).cachedInputPerMTok).toBe(0.75);
  });

  it('a provider that states no ratios bills its cache at the input price', () => {
    expect(withCachePrices(price)).toMatchObject({ cachedInputPerMTok: 3, cacheWritePerMTok: 3 });
  });

  it('holds a request with a head at its worst: all its input written at the dearer write price', () => {
    const priced = withCachePrices(price, ANTHROPIC_DEFAULTS.promptCacheRatios);
    const headed = request(LONG_HEAD, 'Rain.');
    const plain = { ...headed, promptHeadLength: undefined };
    expect(worstCaseNanoUsd(headed, 100, priced)).toBeGreaterThan(worstCaseNanoUsd(plain, 100, priced));
    expect(worstCaseNanoUsd(plain, 100, priced)).toBe(worstCaseNanoUsd(plain, 100, price));
  });
});

describe('CallGate prices the prompt cache at its provider’s ratios', () => {
  it('bills a call that read the cache at the cached-input price, the budget settling at it', async () => {
    const usage = { inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1500 };
    const provider = {
      name: 'claude',
      promptCacheRatios: ANTHROPIC_DEFAULTS.promptCacheRatios,
      call: async () => ({ output: { label: 'rain' }, usage }),
    };
    const budget = new LocalBudget({ maxUsd: 1 });
    const { call } = gateCaller({ provider, limits: requestLimit(Infinity, 1), price: { inputPerMTok: 3, outputPerMTok: 15 }, budget });
    const costs: (number | undefined)[] = [];
    await call(request(LONG_HEAD, 'Rain.'), { onAttempt: (event) => costs.push(event.costUsd) });
    const nano = 12 * 3000 + 1500 * 300 + 5 * 15_000;
    expect(costs).toEqual([nano / 1e9]);
    expect(budget.spentUsd).toBeCloseTo(nano / 1e9, 12);
  });
});

describe('the limits settle on what the vendor counts', () => {
  async function settledInput(limitsCountCacheReads: boolean | undefined): Promise<number> {
    const clock = new ManualClock();
    const limits = new LocalLimits({ limits: [{ kind: 'input-tokens', rate: 1, burst: 10_000 }], clock });
    const provider = {
      name: 'p',
      limitsCountCacheReads,
      call: async () => ({ output: { label: 'rain' }, usage: { inputTokens: 1512, outputTokens: 5, cacheReadTokens: 1500 } }),
    };
    const { call } = gateCaller({ provider, limits, clock, estimateInputTokens: () => 2000 });
    await call(request(LONG_HEAD, 'Rain.'));
    return 10_000 - limits.bucket('input-tokens')!.tokens();
  }

  it('Anthropic’s input-token limits leave out the tokens the cache served; OpenAI’s, and by default, count them all', async () => {
    expect(ANTHROPIC_DEFAULTS.limitsCountCacheReads).toBe(false);
    expect(OPENAI_DEFAULTS.limitsCountCacheReads).toBe(true);
    expect(await settledInput(false)).toBeCloseTo(12, 6);
    expect(await settledInput(true)).toBeCloseTo(1512, 6);
    expect(await settledInput(undefined)).toBeCloseTo(1512, 6);
  });
});
