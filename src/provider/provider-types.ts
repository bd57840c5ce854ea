import type { HttpProviderDefaults, HttpProviderOptions, HttpProviderType } from './http-api.ts';
import { AnthropicProvider, OpenAiProvider, type HttpApiProvider } from './http-api-provider.ts';
import { ANTHROPIC_DEFAULTS, OPENAI_DEFAULTS } from './vendor-defaults.ts';

/** What a provider is: the in-process simulation, or an HTTP API (OpenAI and compatible servers, or Anthropic). */
export type ProviderType = 'simulated' | HttpProviderType;

export type { HttpProviderType };

export const PROVIDER_TYPES: readonly ProviderType[] = Object.freeze(['simulated', 'openai', 'anthropic'] as ProviderType[]);

/** A provider's type when nothing says: the simulation, which needs no server and no key. */
export const PROVIDER_DEFAULTS = Object.freeze({ type: 'simulated' as ProviderType });

/** Each HTTP API's defaults: its name, base URL, model, and the environment variable its key is read from. */
export const HTTP_PROVIDER_DEFAULTS: Readonly<Record<HttpProviderType, HttpProviderDefaults>> = Object.freeze({
  openai: OPENAI_DEFAULTS,
  anthropic: ANTHROPIC_DEFAULTS,
});

export const isHttpProviderType = (value: unknown): value is HttpProviderType =>
  typeof value === 'string' && Object.hasOwn(HTTP_PROVIDER_DEFAULTS, value);

/** A provider over the HTTP API `type`. Throws `TypeError` for bad options (never showing the key). */
export function createHttpProvider(type: HttpProviderType, options: HttpProviderOptions): HttpApiProvider {
  return type === 'openai' ? new OpenAiProvider(options) : new AnthropicProvider(options);
}

/** Whether `text` can name an environment variable: letters, digits and `_`, not starting with a digit. */
export const isEnvVariableName = (text: unknown): text is string => typeof text === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(text);
