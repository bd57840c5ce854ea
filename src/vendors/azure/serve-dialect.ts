import type { IncomingHttpHeaders } from 'node:http';
import { openAiChatApi, type OpenAiServeParts } from '../openai/serve-chat.ts';
import type { ChatApi } from '../serve/chat-api.ts';
import type { VendorDialect } from '../serve/dialect.ts';

/**
 * Azure OpenAI's chat completions (`POST /openai/deployments/{deployment}/chat/completions?api-version=…`):
 * OpenAI's request, answer, stream, errors and rate-limit headers, the key in an `api-key` header.
 * The deployment stands for the model, as each Azure deployment has one.
 */
export function azureChatApi(parts: OpenAiServeParts): ChatApi {
  return Object.freeze({
    ...openAiChatApi(parts),
    missingKeyMessage:
      'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
    refusedKeyMessage: () =>
      'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
    keyOf: (headers: IncomingHttpHeaders): string | undefined => {
      const key = headers['api-key'];
      return typeof key === 'string' && key.trim() !== '' ? key.trim() : undefined;
    },
  });
}

/** Azure OpenAI as `serve` speaks it: its deployments' chat route; a request elsewhere with an `api-key` header is answered in its words. */
export function azureDialect(parts: OpenAiServeParts): VendorDialect {
  const api = azureChatApi(parts);
  return {
    api,
    claims: (headers) => headers['api-key'] !== undefined,
    mount: () => ({
      routes: [
        // The deployment in the path, `?api-version=` required.
        { method: 'POST', path: '/openai/deployments/{id}/chat/completions', api, handle: 'chat', query: ['api-version'] },
      ],
    }),
  };
}
