/**
 * Anthropic's Messages API as `proxy` speaks it: clients' `POST /v1/messages` read for the model,
 * the stream and `max_tokens` (which the API requires), errors in Anthropic's shape (money run out:
 * its 402 `billing_error`); upstream, the body sent on to `{baseUrl}/v1/messages` with the member's
 * model and key, the usage read from the answer or from the stream's `message_start` and
 * `message_delta` events (which Anthropic always sends).
 */

import type { IncomingHttpHeaders } from 'node:http';
import { type Failure, InvalidRequestError, isRecord, jsonType, readTokenLimit } from '../serve/chat-api.ts';
import {
  type ProxyClientApi,
  type ProxyRequestFacts,
  type ProxyWire,
  type UpstreamTarget,
  eventJson,
  proxyKeyOf,
  proxyUsage,
} from '../proxy-wire.ts';
import { anthropicFailure } from './serve-messages.ts';

/** The API version the upstream is asked for when the client named none. */
const API_VERSION = '2023-06-01';

const usageOfMessage = (usage: unknown, outputTokens?: unknown) => {
  if (!isRecord(usage)) return undefined;
  const read = typeof usage.cache_read_input_tokens === 'number' ? usage.cache_read_input_tokens : 0;
  const write = typeof usage.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : 0;
  const input = typeof usage.input_tokens === 'number' ? usage.input_tokens + read + write : undefined;
  return proxyUsage(input, outputTokens ?? usage.output_tokens, read, write);
};

export const ANTHROPIC_PROXY_CLIENT: ProxyClientApi = Object.freeze({
  name: 'anthropic',
  path: '/v1/messages',
  requestIdHeader: 'request-id',
  keyOf: proxyKeyOf,
  read(body: unknown): ProxyRequestFacts {
    if (!isRecord(body)) throw new InvalidRequestError(`Input should be a valid dictionary, got ${jsonType(body)}`);
    const { model, messages, stream } = body;
    if (typeof model !== 'string' || model === '') throw new InvalidRequestError('model: Field required', 'model');
    if (!Array.isArray(messages)) throw new InvalidRequestError('messages: Field required', 'messages');
    if (stream !== undefined && typeof stream !== 'boolean')
      throw new InvalidRequestError('stream: Input should be a valid boolean', 'stream');
    const maxOutputTokens = readTokenLimit(body, 'max_tokens');
    if (maxOutputTokens === undefined) throw new InvalidRequestError('max_tokens: Field required', 'max_tokens');
    return { model, stream: stream === true, maxOutputTokens };
  },
  fail: (failure: Failure, requestId: string) => anthropicFailure(failure, requestId),
});

export const ANTHROPIC_PROXY_WIRE: ProxyWire = Object.freeze({
  client: ANTHROPIC_PROXY_CLIENT,
  upstream: Object.freeze({
    request: (
      body: Record<string, unknown>,
      target: UpstreamTarget,
      _facts: ProxyRequestFacts,
      _maxOutputTokens: number,
      clientHeaders: IncomingHttpHeaders,
    ) => {
      const version = clientHeaders['anthropic-version'];
      const beta = clientHeaders['anthropic-beta'];
      return {
        url: `${target.baseUrl.replace(/\/+$/, '')}/v1/messages`,
        headers: {
          'content-type': 'application/json',
          'x-api-key': target.apiKey,
          'anthropic-version': typeof version === 'string' ? version : API_VERSION,
          ...(typeof beta === 'string' ? { 'anthropic-beta': beta } : {}),
        },
        body: JSON.stringify({ ...body, model: target.model }),
      };
    },
    usageOf: (body: unknown) => (isRecord(body) ? usageOfMessage(body.usage) : undefined),
    watchStream() {
      let start: Record<string, unknown> | undefined;
      let output: unknown;
      return {
        pass(data: string) {
          if (data.includes('"message_start"')) {
            const message = eventJson(data)?.message;
            if (isRecord(message) && isRecord(message.usage)) start = message.usage;
          } else if (data.includes('"message_delta"')) {
            const usage = eventJson(data)?.usage;
            if (isRecord(usage)) output = usage.output_tokens;
          }
          return true;
        },
        usage: () => (start === undefined || output === undefined ? undefined : usageOfMessage(start, output)),
      };
    },
  }),
});
