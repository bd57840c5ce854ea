import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import type { HttpProviderOptions } from '../http-api.ts';
import { bindSdk } from '../sdk-wire.ts';
import { GEMINI_DEFAULTS } from './defaults.ts';
import { GEMINI_WIRE } from './gemini-wire.ts';
import { GEMINI_HEADERS } from './rate-limit-headers.ts';

const GEMINI_BINDING: SdkBinding = {
  defaults: GEMINI_DEFAULTS,
  headers: GEMINI_HEADERS,
  bind: (settings) => bindSdk(GEMINI_WIRE, settings),
};

/**
 * A provider over the Gemini API (`POST {baseUrl}/v1beta/models/{model}:generateContent`, the key
 * in `x-goog-api-key`) over `fetch`, one attempt a call, so that the call gate's limiter, breaker
 * and retries see every attempt. A task's schema goes as structured output
 * (`responseJsonSchema`); the answer is checked against it again; a 429's `RetryInfo` is waited
 * as a `retry-after` is; a key refused with a 400 (`API_KEY_INVALID`) stops the run as a 401 does.
 * Needs no package.
 */
export class GeminiProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, GEMINI_BINDING);
  }
}
