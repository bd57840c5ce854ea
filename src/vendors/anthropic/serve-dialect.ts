import type { VendorDialect } from '../serve/dialect.ts';
import { FileAnswer, originOf, queryOf } from '../serve/dialect.ts';
import { AnthropicBatches } from './serve-batches.ts';
import { type AnthropicServeParts, anthropicMessagesApi, countTokensPrompt } from './serve-messages.ts';

/**
 * Anthropic as `serve` speaks it: the Messages API (`POST /v1/messages`), `count_tokens`, and
 * Message Batches. A request outside every route that carries Anthropic's key header (`x-api-key`)
 * or its version header is answered in Anthropic's words.
 */
export function anthropicDialect(parts: AnthropicServeParts): VendorDialect {
  const anthropicApi = anthropicMessagesApi(parts);
  return {
    api: anthropicApi,
    claims: (headers) => headers['x-api-key'] !== undefined || headers['anthropic-version'] !== undefined,
    mount(host) {
      const batches = new AnthropicBatches(host.batches, anthropicApi);
      return {
        batchApiName: 'Message Batches',
        batchCounts: () => batches.counts(),
        routes: [
          { method: 'POST', path: '/v1/messages', api: anthropicApi, handle: 'chat' },
          {
            method: 'POST',
            path: '/v1/messages/count_tokens',
            api: anthropicApi,
            // Anthropic limits it apart from messages: it takes nothing from the key's quota.
            handle: (exchange) =>
              host.keyed(exchange, { maxBodyBytes: host.maxBodyBytes }, async () => ({
                input_tokens: host.countTokens(countTokensPrompt(await host.readJson(exchange))),
              })),
          },
          {
            method: 'POST',
            path: '/v1/messages/batches',
            api: anthropicApi,
            handle: (exchange) =>
              host.keyed(exchange, { admit: true, maxBodyBytes: host.maxBatchBytes }, async (key) =>
                batches.create(key, await host.readJson(exchange, host.maxBatchBytes), originOf(exchange)),
              ),
          },
          {
            method: 'GET',
            path: '/v1/messages/batches',
            api: anthropicApi,
            handle: (exchange) => host.keyed(exchange, {}, (key) => batches.list(key, queryOf(exchange))),
          },
          {
            method: 'GET',
            path: '/v1/messages/batches/{id}',
            api: anthropicApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.retrieve(key, id)),
          },
          {
            method: 'GET',
            path: '/v1/messages/batches/{id}/results',
            api: anthropicApi,
            handle: (exchange, id) =>
              host.keyed(exchange, {}, async (key) => new FileAnswer(await batches.results(key, id), 'application/x-jsonl')),
          },
          {
            method: 'POST',
            path: '/v1/messages/batches/{id}/cancel',
            api: anthropicApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.cancel(key, id)),
          },
          {
            method: 'DELETE',
            path: '/v1/messages/batches/{id}',
            api: anthropicApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.delete(key, id)),
          },
        ],
      };
    },
  };
}
