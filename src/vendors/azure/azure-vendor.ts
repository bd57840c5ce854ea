import { decodeOpenAi } from '../openai/decode.ts';
import { encodeOpenAi } from '../openai/encode.ts';
import { readOpenAiErrorBody } from '../openai/errors.ts';
import { OPENAI_HEADERS } from '../openai/rate-limit-headers.ts';
import type { Vendor } from '../vendor.ts';
import { AzureOpenAiProvider } from './azure-provider.ts';
import { AZURE_DEFAULTS } from './defaults.ts';

/** Azure OpenAI: OpenAI's chat completions at a deployment of one's own resource, as the registry knows it. */
export const AZURE_VENDOR: Vendor = Object.freeze({
  defaults: AZURE_DEFAULTS,
  headers: OPENAI_HEADERS,
  createProvider: (options) => new AzureOpenAiProvider(options),
  encode: encodeOpenAi,
  decode: decodeOpenAi,
  readErrorBody: readOpenAiErrorBody,
} satisfies Vendor);
