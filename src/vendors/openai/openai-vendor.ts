import type { Vendor } from '../vendor.ts';
import { OPENAI_BATCH_CAPS } from './batch-caps.ts';
import { decodeOpenAi } from './decode.ts';
import { OPENAI_DEFAULTS } from './defaults.ts';
import { encodeOpenAi } from './encode.ts';
import { readOpenAiErrorBody } from './errors.ts';
import { OpenAiProvider } from './openai-provider.ts';
import { OPENAI_SDK_PACKAGE } from './openai-wire.ts';
import { OPENAI_HEADERS } from './rate-limit-headers.ts';
import { HOST_DIALECT_NAMES, HOST_DIALECTS, isHostDialectName } from './host-dialects/host-dialects.ts';
import { strictSchemaProblem } from './strict-schema.ts';

/** OpenAI's chat completions API (and any server that speaks it), as the registry knows it. */
export const OPENAI_VENDOR: Vendor = Object.freeze({
  defaults: OPENAI_DEFAULTS,
  headers: OPENAI_HEADERS,
  sdkPackage: OPENAI_SDK_PACKAGE,
  createProvider: (options) => new OpenAiProvider(options),
  encode: encodeOpenAi,
  decode: decodeOpenAi,
  readErrorBody: readOpenAiErrorBody,
  batch: {
    ...OPENAI_BATCH_CAPS,
    cancelUrl: (baseUrl) => `${baseUrl}/batches/ID/cancel`,
    load: async () => {
      const { OpenAiBatchApi } = await import('./batch-api.ts');
      return (options) => new OpenAiBatchApi(options, OPENAI_VENDOR);
    },
  },
  serve: {
    summary:
      'POST /v1/chat/completions, POST /v1/responses, GET /v1/responses/ID; its Batch API: POST /v1/files (purpose=batch), ' +
      'GET|DELETE /v1/files/ID, GET /v1/files/ID/content, POST|GET /v1/batches, GET /v1/batches/ID, POST /v1/batches/ID/cancel. ' +
      'Key: Authorization: Bearer KEY',
    hostHeaders: HOST_DIALECT_NAMES,
    load: async (options = {}) => {
      const host = HOST_DIALECTS[isHostDialectName(options.headers) ? options.headers : 'openai'];
      return (await import('./serve-dialect.ts')).openAiDialect({
        headers: host.headers,
        strictSchemaProblem,
        overQuota: host.statesLimits ? 'refuse' : 'queue',
        overloadedStatus: host.overloadedStatus,
      });
    },
  },
  proxy: { client: 'openai', load: async () => (await import('./proxy-wire.ts')).OPENAI_PROXY_WIRE },
  helpExamples: [
    '$ news-processor --provider=openai --input articles.jsonl --rate=5 --tpm=200000   OpenAI (key in OPENAI_API_KEY)',
    '$ news-processor --provider=openai --base-url http://localhost:11434/v1 --model llama3.2 --api-key-env OLLAMA_KEY',
  ],
} satisfies Vendor);
