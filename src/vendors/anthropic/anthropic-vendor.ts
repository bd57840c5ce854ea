import type { Vendor } from '../vendor.ts';
import { AnthropicProvider } from './anthropic-provider.ts';
import { ANTHROPIC_SDK_PACKAGE } from './anthropic-wire.ts';
import { ANTHROPIC_BATCH_CAPS } from './batch-caps.ts';
import { decodeAnthropic } from './decode.ts';
import { ANTHROPIC_DEFAULTS, minCacheTokens } from './defaults.ts';
import { encodeAnthropic } from './encode.ts';
import { readAnthropicErrorBody } from './errors.ts';
import { ANTHROPIC_HEADERS } from './rate-limit-headers.ts';

/** Anthropic's Messages API, as the registry knows it. */
export const ANTHROPIC_VENDOR: Vendor = Object.freeze({
  defaults: ANTHROPIC_DEFAULTS,
  headers: ANTHROPIC_HEADERS,
  sdkPackage: ANTHROPIC_SDK_PACKAGE,
  createProvider: (options) => new AnthropicProvider(options),
  encode: encodeAnthropic,
  decode: decodeAnthropic,
  readErrorBody: readAnthropicErrorBody,
  batch: {
    ...ANTHROPIC_BATCH_CAPS,
    cancelUrl: (baseUrl) => `${baseUrl}/v1/messages/batches/ID/cancel`,
    load: async () => {
      const { AnthropicBatchApi } = await import('./batch-api.ts');
      return (options) => new AnthropicBatchApi(options, ANTHROPIC_VENDOR);
    },
  },
  proxy: { client: 'anthropic', load: async () => (await import('./proxy-wire.ts')).ANTHROPIC_PROXY_WIRE },
  serve: {
    summary:
      'POST /v1/messages, POST /v1/messages/count_tokens; Message Batches: POST|GET /v1/messages/batches, ' +
      'GET|DELETE /v1/messages/batches/ID, GET /v1/messages/batches/ID/results, POST …/ID/cancel. Key: x-api-key: KEY',
    load: async () => (await import('./serve-dialect.ts')).anthropicDialect({ headers: ANTHROPIC_HEADERS, minCacheTokens }),
  },
} satisfies Vendor);
