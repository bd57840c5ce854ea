import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import type { HttpProviderOptions } from '../http-api.ts';
import { bindSdk } from '../sdk-wire.ts';
import { checkOneOf } from '../../validation/checks.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { chooseHostDialect, HOST_DIALECT_NAMES, type ChosenDialect } from './host-dialects/host-dialects.ts';
import { OPENAI_WIRE } from './openai-wire.ts';
import { openAiSchemaProblem } from './strict-schema.ts';

/** OpenAI's SDK bound to a host's limit dialect: its headers read, its statuses meant as it means them. */
function openAiSdk({ dialect, guessedFrom }: ChosenDialect): SdkBinding {
  const { statuses } = dialect;
  const wire = Object.keys(statuses).length === 0 ? OPENAI_WIRE : { ...OPENAI_WIRE, statusMeaning: (status: number) => statuses[status] };
  return {
    defaults: OPENAI_DEFAULTS,
    headers: dialect.headers,
    schemaProblem: openAiSchemaProblem,
    bind: (settings) => bindSdk(wire, settings),
    dialect: { name: dialect.name, label: dialect.label, guessedFrom, statesLimits: dialect.statesLimits },
  };
}

/** The dialect `options` tell, or the one their base URL's host speaks; a bad `headers` throws `TypeError`. */
function dialectOf(options: HttpProviderOptions): ChosenDialect {
  // Options that are no object are the base class's to refuse, with its message.
  const { headers, baseUrl } = (typeof options === 'object' && options !== null ? options : {}) as Partial<HttpProviderOptions>;
  if (headers !== undefined) checkOneOf('headers', headers, HOST_DIALECT_NAMES);
  return chooseHostDialect(headers, typeof baseUrl === 'string' ? baseUrl : (OPENAI_DEFAULTS.baseUrl as string));
}

/**
 * A provider over the OpenAI chat completions API (`POST {baseUrl}/chat/completions`), or any
 * server that speaks it (vLLM, Ollama, LiteLLM, Groq, Together, Mistral), through the official
 * `openai` SDK — its own retries off, so that the call gate's limiter, breaker and retries see
 * every attempt. Each task is asked for in strict structured output (`response_format:
 * json_schema`); the answer is read only when it finished, and checked against the task's schema
 * again. Response headers (rate-limit status, retry-after) come back on the response and on every
 * error, read in the host's limit dialect (`headers`, else guessed from the base URL's host).
 * Needs the `openai` package.
 */
export class OpenAiProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, openAiSdk(dialectOf(options)));
  }
}
