import type { VendorDialect } from '../serve/dialect.ts';
import { GeminiBatches } from './serve-batches.ts';
import { type GeminiServeParts, geminiGenerateApi } from './serve-generate.ts';

/**
 * Gemini as `serve` speaks it: `generateContent`, `streamGenerateContent` and the Batch API
 * (`batchGenerateContent` with inline requests, `batches/{id}`, `:cancel`). A request outside
 * every route that carries Gemini's key header (`x-goog-api-key`) is answered in its words.
 */
export function geminiDialect(parts: GeminiServeParts): VendorDialect {
  const generate = geminiGenerateApi(parts, false);
  const stream = geminiGenerateApi(parts, true);
  return {
    api: generate,
    claims: (headers) => headers['x-goog-api-key'] !== undefined,
    mount(host) {
      const batches = new GeminiBatches(host.batches, generate);
      return {
        batchApiName: 'the Gemini Batch API',
        batchCounts: () => batches.counts(),
        routes: [
          { method: 'POST', path: '/v1beta/models/{id}:generateContent', api: generate, handle: 'chat' },
          { method: 'POST', path: '/v1beta/models/{id}:streamGenerateContent', api: stream, handle: 'chat' },
          {
            method: 'POST',
            path: '/v1beta/models/{id}:batchGenerateContent',
            api: generate,
            handle: (exchange, id) =>
              host.keyed(exchange, { admit: true, maxBodyBytes: host.maxBatchBytes }, async (key) =>
                batches.create(key, id, await host.readJson(exchange, host.maxBatchBytes)),
              ),
          },
          {
            method: 'GET',
            path: '/v1beta/batches/{id}',
            api: generate,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.retrieve(key, id)),
          },
          {
            method: 'POST',
            path: '/v1beta/batches/{id}:cancel',
            api: generate,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.cancel(key, id)),
          },
          {
            method: 'DELETE',
            path: '/v1beta/batches/{id}',
            api: generate,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.delete(key, id)),
          },
        ],
      };
    },
  };
}
