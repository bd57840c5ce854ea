import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import type { HttpProviderOptions } from '../http-api.ts';
import { bindSdk } from '../sdk-wire.ts';
import { ANTHROPIC_WIRE } from './anthropic-wire.ts';
import { ANTHROPIC_DEFAULTS } from './defaults.ts';
import { ANTHROPIC_HEADERS } from './rate-limit-headers.ts';

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
