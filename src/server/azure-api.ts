import type { IncomingHttpHeaders } from 'node:http';
import type { ChatApi } from './chat-api.ts';
import { openAiApi } from './openai-api.ts';

/**
 * Azure OpenAI's chat completions (`POST /openai/deployments/{deployment}/chat/completions?api-version=…`):
 * OpenAI's request, answer, stream, errors and rate-limit headers, the key in an `api-key` header.
 * The deployment stands for the model, as each Azure deployment has one.
 */
export const azureApi: ChatApi = Object.freeze({
  ...openAiApi,
  missingKeyMessage: 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
  refusedKeyMessage: () =>
    'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
  keyOf: (headers: IncomingHttpHeaders): string | undefined => {
    const key = headers['api-key'];
    return typeof key === 'string' && key.trim() !== '' ? key.trim() : undefined;
  },
});
