import { describe, expect, it } from 'vitest';
import { HEADER_STYLES } from '../../src/vendors/rate-limit-headers.ts';
import { createHttpProvider, HTTP_PROVIDER_DEFAULTS, isHttpProviderType, PROVIDER_TYPES, VENDORS } from '../../src/vendors/registry.ts';
import { builtinRequest } from '../requests.ts';

const types = Object.keys(VENDORS) as (keyof typeof VENDORS)[];

describe('the vendor registry', () => {
  it('is where the provider types, their defaults and the header styles come from', () => {
    expect(types).toEqual(['openai', 'anthropic', 'azure', 'gemini']);
    expect(PROVIDER_TYPES).toEqual(['simulated', ...types]);
    expect(HEADER_STYLES).toEqual([...types, 'ietf']);
    for (const type of types) {
      expect(isHttpProviderType(type)).toBe(true);
      expect(HTTP_PROVIDER_DEFAULTS[type]).toBe(VENDORS[type].defaults);
    }
    expect(isHttpProviderType('simulated')).toBe(false);
    expect(isHttpProviderType('constructor')).toBe(false);
  });

  it.each(types)('%s: createHttpProvider() makes the vendor’s provider, named by its defaults', (type) => {
    const { defaults } = VENDORS[type];
    // Azure has no default endpoint nor deployment, and needs an API version.
    const given =
      defaults.baseUrl === undefined ? { baseUrl: 'https://example.openai.azure.com', model: 'deploy', apiVersion: '2024-10-21' } : {};
    const provider = createHttpProvider(type, { apiKey: 'sk-test-key-1234', ...given });
    expect(provider.name).toBe(defaults.name);
    expect(provider.model).toBe(defaults.model ?? 'deploy');
  });

  it('refuses an apiVersion for a vendor that takes none', () => {
    expect(() => createHttpProvider('openai', { apiKey: 'sk-test-key-1234', apiVersion: '2024-10-21' })).toThrow(
      'Expected apiVersion to be left out (openai takes none)',
    );
  });
});

describe('a vendor’s encode and decode, apart (a batch row and a batch result)', () => {
  const request = builtinRequest('sentiment', 'a1');
  const answer = { sentiment: 'positive', score: 0.9 };

  it('openai: the body names the model, the schema strictly and the output cap; a completion decodes to the answer', async () => {
    const body = VENDORS.openai.encode(request, 'gpt-x', 77) as Record<string, unknown>;
    expect(body).toMatchObject({
      model: 'gpt-x',
      max_completion_tokens: 77,
      messages: [{ role: 'user', content: request.prompt }],
      response_format: { type: 'json_schema', json_schema: { name: 'sentiment', schema: request.schema, strict: true } },
    });
    const completion = {
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: JSON.stringify(answer), refusal: null } }],
      usage: { prompt_tokens: 12, completion_tokens: 5 },
    };
    const response = await VENDORS.openai.decode(request, completion, { headers: {} }, 77);
    expect(response.output).toEqual(answer);
    expect(response.usage).toEqual({ inputTokens: 12, outputTokens: 5 });
    const cut = { ...completion, choices: [{ ...completion.choices[0], finish_reason: 'length' }] };
    await expect(VENDORS.openai.decode(request, cut, { headers: {} }, 77)).rejects.toThrow('max_completion_tokens 77');
  });

  it('anthropic: the body makes the task a tool the model must use; a message using it decodes to the answer', async () => {
    const body = VENDORS.anthropic.encode(request, 'claude-x', 55) as Record<string, unknown>;
    expect(body).toMatchObject({
      model: 'claude-x',
      max_tokens: 55,
      tools: [{ name: 'sentiment', input_schema: request.schema }],
      tool_choice: { type: 'tool', name: 'sentiment' },
    });
    const message = {
      content: [{ type: 'tool_use', id: 't1', name: 'sentiment', input: answer }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 20, output_tokens: 9 },
    };
    const response = await VENDORS.anthropic.decode(request, message, { headers: {} }, 55);
    expect(response.output).toEqual(answer);
    expect(response.usage).toEqual({ inputTokens: 20, outputTokens: 9 });
    await expect(VENDORS.anthropic.decode(request, { ...message, content: [] }, { headers: {} }, 55)).rejects.toThrow(
      'did not use the sentiment tool',
    );
  });
});
