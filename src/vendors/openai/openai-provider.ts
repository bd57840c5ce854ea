import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import type { HttpProviderOptions } from '../http-api.ts';
import { bindSdk } from '../sdk-wire.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { OPENAI_WIRE } from './openai-wire.ts';
import { OPENAI_HEADERS } from './rate-limit-headers.ts';
import { openAiSchemaProblem } from './strict-schema.ts';

const OPENAI_SDK: SdkBinding = {
  defaults: OPENAI_DEFAULTS,
  headers: OPENAI_HEADERS,
  schemaProblem: openAiSchemaProblem,
  bind: (settings) => bindSdk(OPENAI_WIRE, settings),
};

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
