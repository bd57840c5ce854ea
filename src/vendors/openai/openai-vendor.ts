import type { Vendor } from '../vendor.ts';
import { decodeOpenAi } from './decode.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { encodeOpenAi } from './encode.ts';
import { readOpenAiErrorBody } from './errors.ts';
import { OpenAiProvider } from './openai-provider.ts';
import { OPENAI_HEADERS } from './rate-limit-headers.ts';

/** OpenAI's chat completions API (and any server that speaks it), as the registry knows it. */
export const OPENAI_VENDOR: Vendor = Object.freeze({
  defaults: OPENAI_DEFAULTS,
  headers: OPENAI_HEADERS,
  createProvider: (options) => new OpenAiProvider(options),
  encode: encodeOpenAi,
  decode: decodeOpenAi,
  readErrorBody: readOpenAiErrorBody,
} satisfies Vendor);
