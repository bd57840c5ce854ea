// What the proxy's tests share: `serve` instances as the upstream, a gateway over them, SDK clients.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { parseGatewayConfig, ProxyServer, type ProxyServerOptions } from '../../src/proxy/index.ts';

export interface Started {
  readonly close: () => Promise<void>;
}

const started: Started[] = [];

/** Stops whatever the test started (for `afterEach`). */
export async function stopAll(): Promise<void> {
  await Promise.all(started.splice(0).map((one) => one.close()));
}

/** A `serve` on a free port, answering at once. */
export async function upstream(options: LlmServerOptions = {}): Promise<{ url: string; server: LlmServer }> {
  const server = new LlmServer({
    simulation: { minLatencyMs: 0, maxLatencyMs: 0 },
    rate: Number.POSITIVE_INFINITY,
    tokensPerSecond: Number.POSITIVE_INFINITY,
    ...options,
  });
  started.push(server);
  return { url: await server.listen({ port: 0 }), server };
}

/** A gateway over `config` (its providers' upstream keys all `upstream-key`), listening on a free port. */
export async function gateway(
  config: unknown,
  options: Partial<Omit<ProxyServerOptions, 'config'>> = {},
): Promise<{ url: string; proxy: ProxyServer }> {
  const parsed = parseGatewayConfig(config, { env: {} });
  const proxy = await ProxyServer.create({
    config: parsed,
    apiKeys: Object.fromEntries(parsed.providers.map((provider) => [provider.name, 'upstream-key'])),
    ...options,
  });
  started.push(proxy);
  return { url: await proxy.listen({ port: 0 }), proxy };
}

export const openai = (url: string, apiKey: string, maxRetries = 0) => new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries });
export const anthropic = (url: string, apiKey: string, maxRetries = 0) => new Anthropic({ apiKey, baseURL: url, maxRetries });

/** Providers of both vendors' APIs at `serve` URLs, priced. */
export function twoVendors(openaiUrl: string, anthropicUrl: string) {
  return [
    {
      name: 'oa',
      type: 'openai',
      baseUrl: `${openaiUrl}/v1`,
      model: 'gpt-4.1-mini',
      limits: [{ kind: 'requests', rate: 'inf' }],
      price: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
    },
    {
      name: 'an',
      type: 'anthropic',
      baseUrl: anthropicUrl,
      model: 'claude-haiku-4-5',
      limits: [{ kind: 'requests', rate: 'inf' }],
      price: { inputPerMTok: 1, outputPerMTok: 5 },
    },
  ];
}
