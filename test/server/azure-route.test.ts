// Azure OpenAI's URL form at `LlmServer`, through the official `openai` SDK's AzureOpenAI client:
// a pool of "regions" can be tried offline.
import { AuthenticationError, AzureOpenAI, RateLimitError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { AzureOpenAiProvider } from '../../src/vendors/azure/azure-provider.ts';
import { builtinRequest } from '../requests.ts';

const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: LlmServerOptions = {}): Promise<string> {
  const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, ...options });
  servers.push(server);
  return server.listen({ port: 0 });
}

const azure = (endpoint: string, apiKey: string, deployment = 'gpt-41-mini') =>
  new AzureOpenAI({ endpoint, apiKey, apiVersion: '2024-10-21', deployment, maxRetries: 0 });

describe('serve at Azure OpenAI’s URL form', () => {
  it('answers the AzureOpenAI client’s structured output at /openai/deployments/{deployment}/chat/completions', async () => {
    const endpoint = await start();
    const Verdict = z.object({ verdict: z.enum(['yes', 'no']), confidence: z.number().min(0).max(1) });
    const { data, response } = await azure(endpoint, 'azure-key-1')
      .chat.completions.create({
        model: 'gpt-41-mini',
        messages: [{ role: 'user', content: 'Is the sky blue? The sky is blue on a clear day.' }],
        response_format: zodResponseFormat(Verdict, 'verdict'),
      })
      .withResponse();
    expect(response.url).toMatch(/\/openai\/deployments\/gpt-41-mini\/chat\/completions\?api-version=2024-10-21$/);
    expect(Verdict.parse(JSON.parse(data.choices[0]!.message.content!))).toBeTruthy();
    // OpenAI's rate-limit headers, retry-after-ms on 429s: what Azure sends.
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600');
  });

  it('refuses another key with a 401 the SDK reads as AuthenticationError, and takes the key only from api-key', async () => {
    const endpoint = await start({ apiKeys: ['azure-key-1'] });
    const error = await azure(endpoint, 'azure-key-2')
      .chat.completions.create({ model: 'd', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    const bearer = await fetch(`${endpoint}/openai/deployments/d/chat/completions?api-version=2024-10-21`, {
      method: 'POST',
      headers: { authorization: 'Bearer azure-key-1', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'd', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(bearer.status).toBe(401);
  });

  it('is no route without api-version (404, as Azure answers), nor for another method', async () => {
    const endpoint = await start();
    const post = (query: string) =>
      fetch(`${endpoint}/openai/deployments/d/chat/completions${query}`, {
        method: 'POST',
        headers: { 'api-key': 'k', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'd', messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await post('')).status).toBe(404);
    expect((await post('?api-version=')).status).toBe(404);
    expect((await post('?api-version=2024-10-21')).status).toBe(200);
  });

  it('gives a 429 with retry-after-ms over the quota, which the SDK reads as RateLimitError', async () => {
    const endpoint = await start({ rate: 1, burst: 1 });
    const client = azure(endpoint, 'azure-key-1');
    const call = () => client.chat.completions.create({ model: 'd', messages: [{ role: 'user', content: 'hi' }] });
    await call();
    const error = (await call().catch((e: unknown) => e)) as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(Number(error.headers?.get('retry-after-ms'))).toBeGreaterThan(0);
  });
});

describe('AzureOpenAiProvider', () => {
  it('calls a deployment with the api-version and the api-key header, and reads the task’s answer', async () => {
    const endpoint = await start({ apiKeys: ['azure-key-1'] });
    const provider = new AzureOpenAiProvider({ apiKey: 'azure-key-1', baseUrl: endpoint, model: 'east-deploy', apiVersion: '2024-10-21' });
    expect(provider.name).toBe('azure');
    await provider.ready();
    const response = await provider.call(builtinRequest('sentiment', 'a1'), { maxOutputTokens: 100 });
    expect(['positive', 'negative', 'neutral']).toContain((response.output as { sentiment: string }).sentiment);
    expect(response.usage?.inputTokens).toBeGreaterThan(0);
  });

  it.each([
    [{ apiKey: 'k', model: 'd', apiVersion: 'v' }, /Expected baseUrl to be given \(azure has no default: name the endpoint\)/],
    [{ apiKey: 'k', baseUrl: 'http://x', apiVersion: 'v' }, /Expected model to be given \(azure has no default: name the deployment\)/],
    [{ apiKey: 'k', baseUrl: 'http://x', model: 'd' }, /apiVersion/],
  ])('refuses %j with a TypeError naming what is missing', (options, message) => {
    expect(() => new AzureOpenAiProvider(options)).toThrow(message);
  });
});
