import type { OpenAI } from 'openai';
import { loadOptional } from '../../optional-package.ts';
import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import { sdkClientOptions, type HttpProviderOptions } from '../http-api.ts';
import { bindSdk, WARM_UP_ANSWER, type SdkWire } from '../sdk-wire.ts';
import { decodeOpenAi } from './decode.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { encodeOpenAi, type OpenAiBody } from './encode.ts';
import { readOpenAiErrorBody } from './errors.ts';

/**
 * The OpenAI chat completions API through the official `openai` SDK, loaded when a provider is
 * made (not when the library is imported), its own retries off. Azure OpenAI's wire is this one with
 * its own client.
 */
export const OPENAI_WIRE: SdkWire<OpenAI, OpenAiBody> = {
  defaults: OPENAI_DEFAULTS,
  load: async (settings) => {
    const sdk = await loadOptional('openai', 'the OpenAI provider', () => import('openai'));
    return { client: new sdk.OpenAI(sdkClientOptions(settings)), errors: sdk };
  },
  encode: encodeOpenAi,
  post: (client, body, options) => client.chat.completions.create(body, options).withResponse(),
  decode: decodeOpenAi,
  /** A completion answering the warm-up call. */
  cannedAnswer: (): OpenAI.ChatCompletion => ({
    id: 'warm-up',
    object: 'chat.completion',
    created: 0,
    model: 'warm-up',
    choices: [
      {
        index: 0,
        finish_reason: 'stop',
        logprobs: null,
        message: { role: 'assistant', content: JSON.stringify(WARM_UP_ANSWER), refusal: null },
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  }),
  readErrorBody: readOpenAiErrorBody,
};

const OPENAI_SDK: SdkBinding = { defaults: OPENAI_DEFAULTS, bind: (settings) => bindSdk(OPENAI_WIRE, settings) };

/**
 * A provider over the OpenAI chat completions API (`POST {baseUrl}/chat/completions`), or any
 * server that speaks it (vLLM, Ollama, LiteLLM), through the official `openai` SDK — its own retries
 * off, so that the call gate's limiter, breaker and retries see every attempt. Each task is asked
 * for in strict structured output (`response_format: json_schema`); the answer is read only when it
 * finished, and checked against the task's schema again. Response headers (rate-limit status,
 * retry-after) come back on the response and on every error. Needs the `openai` package.
 */
export class OpenAiProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, OPENAI_SDK);
  }
}
