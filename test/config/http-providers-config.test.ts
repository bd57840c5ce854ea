import { describe, expect, it } from 'vitest';
import { ConfigError, parseProvidersConfig } from '../../src/index.ts';
import { ANTHROPIC_DEFAULTS } from '../../src/vendors/anthropic/defaults.ts';
import { OPENAI_DEFAULTS } from '../../src/vendors/openai/defaults.ts';

const limits = [{ kind: 'requests', rate: 5 }];

/** Two vendors, each serving one task: the file docs/providers.md shows. */
const twoVendors = {
  providers: [
    { name: 'gpt', type: 'openai', model: 'gpt-4.1-nano', maxConcurrent: 8, limits },
    { name: 'claude', type: 'anthropic', baseUrl: 'http://127.0.0.1:8080', apiKeyEnv: 'CLAUDE_KEY', limits },
  ],
  routes: { summarize: 'gpt', sentiment: 'claude' },
};

describe('parseProvidersConfig(): what a provider is and how it is called', () => {
  it('reads type, baseUrl, model, apiKeyEnv and maxConcurrent, the vendor defaults filled in', () => {
    const config = parseProvidersConfig(twoVendors, 'providers.json');
    expect(config.routes).toEqual({ summarize: 'gpt', sentiment: 'claude' });
    expect(config.providers[0]).toMatchObject({
      type: 'openai',
      api: { baseUrl: OPENAI_DEFAULTS.baseUrl, model: 'gpt-4.1-nano', apiKeyEnv: OPENAI_DEFAULTS.apiKeyEnv },
      maxConcurrent: 8,
    });
    expect(config.providers[1]).toMatchObject({
      type: 'anthropic',
      api: { baseUrl: 'http://127.0.0.1:8080', model: ANTHROPIC_DEFAULTS.model, apiKeyEnv: 'CLAUDE_KEY' },
      maxConcurrent: undefined,
    });
  });

  it('makes a provider without a type the simulation, with no API and an optional cap on calls in flight', () => {
    const config = parseProvidersConfig({ providers: [{ name: 'sim', limits, maxConcurrent: 2 }] });
    expect(config.providers[0]).toMatchObject({ type: 'simulated', api: undefined, maxConcurrent: 2 });
  });

  it.each([
    [{ type: 'vertex' }, 'providers[0].type: expected one of "simulated", "openai", "anthropic", "azure", "gemini", got "vertex"'],
    [
      { type: 'openai', baseUrl: 'api.openai.com/v1' },
      'providers[0].baseUrl: expected an http:// or https:// URL, got "api.openai.com/v1"',
    ],
    [{ type: 'openai', baseUrl: 42 }, 'providers[0].baseUrl: expected an http:// or https:// URL, got 42'],
    [
      { type: 'openai', baseUrl: 'http://me:hunter2@localhost:8000/v1' },
      'providers[0].baseUrl: expected a URL without user:password (the key is read from apiKeyEnv), got "http://***@localhost:8000/v1"',
    ],
    [{ type: 'anthropic', model: ' ' }, 'providers[0].model: expected a model name, got " "'],
    [
      { type: 'anthropic', apiKeyEnv: 'MY-KEY' },
      'providers[0].apiKeyEnv: expected an environment variable name (letters, digits, _), got "MY-KEY"',
    ],
    [{ maxConcurrent: 0 }, 'providers[0].maxConcurrent: expected a whole number >= 1, got 0'],
    [{ maxConcurrent: 1.5 }, 'providers[0].maxConcurrent: expected a whole number >= 1, got 1.5'],
    [{ model: 'gpt-4.1-mini' }, 'providers[0].model: expected nothing on a simulated provider (it is for a real API), got "gpt-4.1-mini"'],
    [
      { type: 'openai', simulated: { profile: 'stress' } },
      'providers[0].simulated: expected nothing on an "openai" provider (it is for "simulated"), got {"profile":"stress"}',
    ],
    [{ type: 'openai', apiKey: 'sk-in-the-file' }, 'providers[0].apiKey: unknown field (expected one of'],
  ])('refuses %j with one line naming the field', (fields, message) => {
    const parse = () => parseProvidersConfig({ providers: [{ name: 'p', limits, ...fields }] }, 'providers.json');
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(`providers.json: ${message}`);
  });
});
