import { decodeOpenAi } from '../openai/decode.ts';
import { encodeOpenAi } from '../openai/encode.ts';
import { readOpenAiErrorBody } from '../openai/errors.ts';
import { OPENAI_SDK_PACKAGE } from '../openai/openai-wire.ts';
import { OPENAI_HEADERS } from '../openai/rate-limit-headers.ts';
import { strictSchemaProblem } from '../openai/strict-schema.ts';
import type { Vendor } from '../vendor.ts';
import { AzureOpenAiProvider } from './azure-provider.ts';
import { AZURE_DEFAULTS } from './defaults.ts';

/**
 * Azure OpenAI: OpenAI's chat completions at a deployment of one's own resource, as the registry
 * knows it. No Batch API here: Azure's takes its own deployments (global batch) and routes.
 */
export const AZURE_VENDOR: Vendor = Object.freeze({
  defaults: AZURE_DEFAULTS,
  headers: OPENAI_HEADERS,
  sdkPackage: OPENAI_SDK_PACKAGE,
  createProvider: (options) => new AzureOpenAiProvider(options),
  encode: encodeOpenAi,
  decode: decodeOpenAi,
  readErrorBody: readOpenAiErrorBody,
  proxy: { client: 'openai', load: async () => (await import('./proxy-wire.ts')).AZURE_PROXY_WIRE },
  serve: {
    summary: 'POST /openai/deployments/ID/chat/completions?api-version=…, as OpenAI answers it. Key: api-key: KEY',
    load: async () => (await import('./serve-dialect.ts')).azureDialect({ headers: OPENAI_HEADERS, strictSchemaProblem }),
  },
} satisfies Vendor);
