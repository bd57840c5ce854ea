import type { Vendor } from '../vendor.ts';
import { GEMINI_BATCH_CAPS } from './batch-caps.ts';
import { decodeGemini } from './decode.ts';
import { GEMINI_DEFAULTS } from './defaults.ts';
import { encodeGemini } from './encode.ts';
import { readGeminiErrorBody } from './errors.ts';
import { GeminiProvider } from './gemini-provider.ts';
import { GEMINI_SDK_PACKAGE, geminiJson, modelsUrl } from './gemini-wire.ts';
import { GEMINI_HEADERS } from './rate-limit-headers.ts';

/** Google's Gemini API (v1beta), as the registry knows it. */
export const GEMINI_VENDOR: Vendor = Object.freeze({
  defaults: GEMINI_DEFAULTS,
  headers: GEMINI_HEADERS,
  sdkPackage: GEMINI_SDK_PACKAGE,
  createProvider: (options) => new GeminiProvider(options),
  encode: encodeGemini,
  decode: decodeGemini,
  readErrorBody: readGeminiErrorBody,
  batch: {
    ...GEMINI_BATCH_CAPS,
    cancelUrl: (baseUrl) => `${baseUrl.replace(/\/+$/, '')}/v1beta/batches/ID:cancel`,
    load: async () => {
      const { GeminiBatchApi } = await import('./batch-api.ts');
      return (options) => new GeminiBatchApi(options, GEMINI_VENDOR, { modelsUrl, request: geminiJson });
    },
  },
  serve: {
    summary:
      'POST /v1beta/models/MODEL:generateContent, POST /v1beta/models/MODEL:streamGenerateContent; its Batch API: ' +
      'POST /v1beta/models/MODEL:batchGenerateContent (inline requests), GET|DELETE /v1beta/batches/ID, POST /v1beta/batches/ID:cancel. ' +
      'Key: x-goog-api-key: KEY',
    load: async () => (await import('./serve-dialect.ts')).geminiDialect({ headers: GEMINI_HEADERS }),
  },
  helpExamples: ['$ news-processor --provider=gemini --input articles.jsonl --rate=5   Gemini (key in GEMINI_API_KEY)'],
} satisfies Vendor);
