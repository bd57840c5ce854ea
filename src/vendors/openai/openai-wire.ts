import type { OpenAI } from 'openai';
import { loadOptional, type PackageSpec } from '../../optional-package.ts';
import { sdkClientOptions } from '../http-api.ts';
import { WARM_UP_ANSWER, type SdkWire } from '../sdk-wire.ts';
import { decodeOpenAi } from './decode.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { encodeOpenAi, type OpenAiBody } from './encode.ts';
import { readOpenAiErrorBody } from './errors.ts';

// Apart from the provider class, so that the SDK's types stay out of the declarations the package's root ships.

/** OpenAI's official SDK, an optional peer (Azure OpenAI's client is in it too): the version the package is tested with. */
export const OPENAI_SDK_PACKAGE: PackageSpec = Object.freeze({ name: 'openai', version: '6.49.0' });

/**
 * The OpenAI chat completions API through the official `openai` SDK, loaded when a provider is
 * made (not when the library is imported), its own retries off. Azure OpenAI's wire is this one with
 * its own client.
 */
export const OPENAI_WIRE: SdkWire<OpenAI, OpenAiBody> = {
  defaults: OPENAI_DEFAULTS,
  load: async (settings) => {
    const sdk = await loadOptional(OPENAI_SDK_PACKAGE, 'the OpenAI provider', () => import('openai'));
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
