import type { Vendor } from '../vendor.ts';
import { AnthropicProvider } from './anthropic-provider.ts';
import { decodeAnthropic } from './decode.ts';
import { ANTHROPIC_DEFAULTS } from './defaults.ts';
import { encodeAnthropic } from './encode.ts';
import { readAnthropicErrorBody } from './errors.ts';
import { ANTHROPIC_HEADERS } from './rate-limit-headers.ts';

/** Anthropic's Messages API, as the registry knows it. */
export const ANTHROPIC_VENDOR: Vendor = Object.freeze({
  defaults: ANTHROPIC_DEFAULTS,
  headers: ANTHROPIC_HEADERS,
  createProvider: (options) => new AnthropicProvider(options),
  encode: encodeAnthropic,
  decode: decodeAnthropic,
  readErrorBody: readAnthropicErrorBody,
} satisfies Vendor);
