import type { Anthropic } from '@anthropic-ai/sdk';
import { loadOptional, type PackageSpec } from '../../optional-package.ts';
import { sdkClientOptions } from '../http-api.ts';
import { WARM_UP_ANSWER, WARM_UP_REQUEST, type SdkWire } from '../sdk-wire.ts';
import { decodeAnthropic } from './decode.ts';
import { ANTHROPIC_DEFAULTS } from './defaults.ts';
import { encodeAnthropic, type AnthropicBody } from './encode.ts';
import { readAnthropicErrorBody } from './errors.ts';

// Apart from the provider class, so that the SDK's types stay out of the declarations the package's root ships.

/** Anthropic's official SDK, an optional peer: the version the package is tested with. */
export const ANTHROPIC_SDK_PACKAGE: PackageSpec = Object.freeze({ name: '@anthropic-ai/sdk', version: '1.14.0' });

/**
 * The Anthropic Messages API through the official `@anthropic-ai/sdk`, loaded when a provider is
 * made (not when the library is imported), its own retries off.
 */
export const ANTHROPIC_WIRE: SdkWire<Anthropic, AnthropicBody> = {
  defaults: ANTHROPIC_DEFAULTS,
  load: async (settings) => {
    const sdk = await loadOptional(ANTHROPIC_SDK_PACKAGE, 'the Anthropic provider', () => import('@anthropic-ai/sdk'));
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
