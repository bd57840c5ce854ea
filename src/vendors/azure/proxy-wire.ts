/**
 * Azure OpenAI as a member of `proxy`: OpenAI's clients, their bodies sent on to the deployment
 * (`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`) with the key in
 * `api-key`; the answers, streams and usage are OpenAI's.
 */

import { OPENAI_PROXY_CLIENT, OPENAI_USAGE, openAiUpstreamBody } from '../openai/proxy-wire.ts';
import type { ProxyRequestFacts, ProxyWire, UpstreamTarget } from '../proxy-wire.ts';

export const AZURE_PROXY_WIRE: ProxyWire = Object.freeze({
  client: OPENAI_PROXY_CLIENT,
  upstream: Object.freeze({
    ...OPENAI_USAGE,
    request: (body: Record<string, unknown>, target: UpstreamTarget, facts: ProxyRequestFacts, maxOutputTokens: number) => ({
      url: `${target.baseUrl.replace(/\/+$/, '')}/openai/deployments/${encodeURIComponent(target.model)}/chat/completions?api-version=${encodeURIComponent(target.apiVersion ?? '')}`,
      headers: { 'content-type': 'application/json', 'api-key': target.apiKey },
      body: openAiUpstreamBody(body, target.model, facts, maxOutputTokens),
    }),
  }),
});
