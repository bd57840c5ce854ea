/**
 * OpenAI's Chat Completions API as `proxy` speaks it: clients' `POST /v1/chat/completions` read for
 * the model, the stream and the token cap, errors in OpenAI's shape; upstream, the body sent on with
 * the member's model, `max_completion_tokens` when the client set no cap, and a stream's final
 * usage chunk asked for (and kept from a client that did not ask for it).
 */

import { type Failure, InvalidRequestError, isRecord, jsonType, readTokenLimit } from '../serve/chat-api.ts';
import {
  type ProxyClientApi,
  type ProxyRequestFacts,
  type ProxyUpstream,
  type ProxyWire,
  type UpstreamTarget,
  eventJson,
  proxyKeyOf,
  proxyUsage,
} from '../proxy-wire.ts';
import { openAiErrorBody } from './serve-chat.ts';
import { FAILURE_STATUS } from '../serve/chat-api.ts';

/** OpenAI's chat route as a proxy's clients call it. */
export const OPENAI_PROXY_CLIENT: ProxyClientApi = Object.freeze({
  name: 'openai',
  path: '/v1/chat/completions',
  requestIdHeader: 'x-request-id',
  keyOf: proxyKeyOf,
  read(body: unknown): ProxyRequestFacts {
    if (!isRecord(body)) throw new InvalidRequestError(`Invalid request body: expected a JSON object, but got ${jsonType(body)}.`);
    const { model, messages, stream } = body;
    if (typeof model !== 'string' || model === '') throw new InvalidRequestError('you must provide a model parameter', 'model');
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new InvalidRequestError("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
    }
    if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
      throw new InvalidRequestError(`Invalid type for 'stream': expected a boolean, but got ${jsonType(stream)}.`, 'stream');
    }
    const maxOutputTokens = readTokenLimit(body, 'max_completion_tokens') ?? readTokenLimit(body, 'max_tokens');
    return { model, stream: stream === true, maxOutputTokens };
  },
  fail: (failure: Failure) => ({ status: FAILURE_STATUS[failure.kind], body: openAiErrorBody(failure) }),
});

/** The body a member of OpenAI's API (or one that speaks it) is sent. */
export function openAiUpstreamBody(
  body: Record<string, unknown>,
  model: string,
  facts: ProxyRequestFacts,
  maxOutputTokens: number,
): string {
  const sent: Record<string, unknown> = { ...body, model };
  if (facts.maxOutputTokens === undefined) sent.max_completion_tokens = maxOutputTokens;
  if (facts.stream) {
    const options = isRecord(body.stream_options) ? body.stream_options : {};
    sent.stream_options = { ...options, include_usage: true };
  }
  return JSON.stringify(sent);
}

const usageOfCompletion = (usage: unknown) => {
  if (!isRecord(usage)) return undefined;
  const details = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  return proxyUsage(usage.prompt_tokens, usage.completion_tokens, details.cached_tokens);
};

/** What every OpenAI-speaking member shares: the usage of an answer and of a stream. */
export const OPENAI_USAGE: Pick<ProxyUpstream, 'usageOf' | 'watchStream'> = Object.freeze({
  usageOf: (body: unknown) => (isRecord(body) ? usageOfCompletion(body.usage) : undefined),
  watchStream(body: Record<string, unknown>) {
    const asked = isRecord(body.stream_options) && body.stream_options.include_usage === true;
    let usage: ReturnType<typeof usageOfCompletion>;
    return {
      pass(data: string) {
        // Only the last chunk carries a usage object; the others say `"usage":null`.
        if (!data.includes('"usage":{')) return true;
        const event = eventJson(data);
        usage = usageOfCompletion(event?.usage) ?? usage;
        return asked || !(Array.isArray(event?.choices) && event.choices.length === 0);
      },
      usage: () => usage,
    };
  },
});

/** OpenAI's API upstream: `{baseUrl}/chat/completions`, the key as a bearer token. */
export const OPENAI_PROXY_UPSTREAM: ProxyUpstream = Object.freeze({
  ...OPENAI_USAGE,
  request: (body: Record<string, unknown>, target: UpstreamTarget, facts: ProxyRequestFacts, maxOutputTokens: number) => ({
    url: `${target.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${target.apiKey}` },
    body: openAiUpstreamBody(body, target.model, facts, maxOutputTokens),
  }),
});

export const OPENAI_PROXY_WIRE: ProxyWire = Object.freeze({ client: OPENAI_PROXY_CLIENT, upstream: OPENAI_PROXY_UPSTREAM });
