import type { Anthropic } from '@anthropic-ai/sdk';
import { loadOptional } from '../../optional-package.ts';
import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import { sdkClientOptions, type HttpProviderOptions } from '../http-api.ts';
import { bindSdk, WARM_UP_ANSWER, WARM_UP_REQUEST, type SdkWire } from '../sdk-wire.ts';
import { decodeAnthropic } from './decode.ts';
import { ANTHROPIC_DEFAULTS } from './defaults.ts';
import { encodeAnthropic, type AnthropicBody } from './encode.ts';
import { readAnthropicErrorBody } from './errors.ts';
import { ANTHROPIC_HEADERS } from './rate-limit-headers.ts';

/**
 * The Anthropic Messages API through the official `@anthropic-ai/sdk`, loaded when a provider is
 * made (not when the library is imported), its own retries off.
 */
const ANTHROPIC_WIRE: SdkWire<Anthropic, AnthropicBody> = {
  defaults: ANTHROPIC_DEFAULTS,
  load: async (settings) => {
    const sdk = await loadOptional('@anthropic-ai/sdk', 'the Anthropic provider', () => import('@anthropic-ai/sdk'));
    // No webhook key: the SDK would otherwise look for one in the environment.
    return { client: new sdk.Anthropic({ ...sdkClientOptions(settings), webhookKey: null }), errors: sdk };
  },
  encode: encodeAnthropic,
  post: (client, body, options) => client.messages.create(body, options).withResponse(),
  decode: decodeAnthropic,
  /** A message answering the warm-up call, its tool used: the fields the SDK and the decoder read. */
  cannedAnswer: (): Record<string, unknown> => ({
    id: 'warm-up',
    type: 'message',
    role: 'assistant',
    model: 'warm-up',
    content: [{ type: 'tool_use', id: 'warm-up', name: WARM_UP_REQUEST.task, input: WARM_UP_ANSWER }],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 0, output_tokens: 0 },
  }),
  readErrorBody: readAnthropicErrorBody,
};

const ANTHROPIC_SDK: SdkBinding = {
  defaults: ANTHROPIC_DEFAULTS,
  headers: ANTHROPIC_HEADERS,
  bind: (settings) => bindSdk(ANTHROPIC_WIRE, settings),
};

/**
 * A provider over the Anthropic Messages API (`POST {baseUrl}/v1/messages`) through the official
 * `@anthropic-ai/sdk` — its own retries off, so that the call gate's limiter, breaker and retries
 * see every attempt. Each task is one tool the model is made to use; its input is checked against
 * the task's schema again; 529 overloaded is a server error like a 503. Needs the
 * `@anthropic-ai/sdk` package.
 */
export class AnthropicProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, ANTHROPIC_SDK);
  }
}
