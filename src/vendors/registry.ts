import { ANTHROPIC_VENDOR } from './anthropic/anthropic-vendor.ts';
import { AZURE_VENDOR } from './azure/azure-vendor.ts';
import { GEMINI_VENDOR } from './gemini/gemini-vendor.ts';
import type { HttpApiProvider } from './http-api-provider.ts';
import type { HttpProviderDefaults, HttpProviderOptions } from './http-api.ts';
import { OPENAI_VENDOR } from './openai/openai-vendor.ts';
import type { Vendor } from './vendor.ts';

/**
 * Every vendor API a provider can speak, by the `type` the command line and the providers file
 * name it with. A new vendor is a folder of its own beside these and one line here: the types,
 * the command line's choices, the providers file's and the rate-limit header styles follow.
 */
export const VENDORS = Object.freeze({
  openai: OPENAI_VENDOR,
  anthropic: ANTHROPIC_VENDOR,
  azure: AZURE_VENDOR,
  gemini: GEMINI_VENDOR,
} satisfies Record<string, Vendor>);

/** The HTTP APIs a provider can speak: the registry's vendors. */
export type HttpProviderType = keyof typeof VENDORS;

/** What a provider is: the in-process simulation, or a vendor's HTTP API (OpenAI's also means any compatible server). */
export type ProviderType = 'simulated' | HttpProviderType;

export const PROVIDER_TYPES: readonly ProviderType[] = Object.freeze(['simulated', ...(Object.keys(VENDORS) as HttpProviderType[])]);

/** A provider's type when nothing says: the simulation, which needs no server and no key. */
export const PROVIDER_DEFAULTS = Object.freeze({ type: 'simulated' as ProviderType });

/** Each HTTP API's defaults: its name, base URL, model, and the environment variable its key is read from. */
export const HTTP_PROVIDER_DEFAULTS: Readonly<Record<HttpProviderType, HttpProviderDefaults>> = Object.freeze(
  Object.fromEntries(Object.entries(VENDORS).map(([type, vendor]) => [type, vendor.defaults])) as Record<
    HttpProviderType,
    HttpProviderDefaults
  >,
);

export const isHttpProviderType = (value: unknown): value is HttpProviderType => typeof value === 'string' && Object.hasOwn(VENDORS, value);

/** A provider over the HTTP API `type`. Throws `TypeError` for bad options (never showing the key). */
export function createHttpProvider(type: HttpProviderType, options: HttpProviderOptions): HttpApiProvider {
  return VENDORS[type].createProvider(options);
}

/** Whether `text` can name an environment variable: letters, digits and `_`, not starting with a digit. */
export const isEnvVariableName = (text: unknown): text is string => typeof text === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(text);
