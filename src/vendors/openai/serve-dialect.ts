import type { VendorDialect } from '../serve/dialect.ts';
import { FileAnswer, queryOf } from '../serve/dialect.ts';
import { Refusal } from '../serve/exchange.ts';
import { OpenAiBatches } from './serve-batches.ts';
import { openAiChatApi, type OpenAiServeParts } from './serve-chat.ts';
import type { ChatApi } from '../serve/chat-api.ts';
import { openAiResponsesApi } from './serve-responses.ts';

/**
 * OpenAI as `serve` speaks it: Chat Completions (`POST /v1/chat/completions`), the Responses API
 * (`POST /v1/responses`, `GET /v1/responses/{id}`), and the Files and Batch APIs, a batch running
 * on either endpoint. The default dialect: a request outside every route that no other vendor's
 * headers claim is answered in OpenAI's words.
 */
export function openAiDialect(parts: OpenAiServeParts): VendorDialect {
  const openAiApi = hosted(openAiChatApi(parts), parts);
  const responsesApi = hosted(openAiResponsesApi(parts), parts);
  return {
    api: openAiApi,
    mount(host) {
      const batches = new OpenAiBatches(host.batches, { '/v1/chat/completions': openAiApi, '/v1/responses': responsesApi });
      return {
        batchApiName: 'the Batch API',
        batchCounts: () => batches.counts(),
        routes: [
          { method: 'POST', path: '/v1/chat/completions', api: openAiApi, handle: 'chat' },
          { method: 'POST', path: '/v1/responses', api: responsesApi, handle: 'chat' },
          {
            method: 'GET',
            path: '/v1/responses/{id}',
            api: responsesApi,
            handle: (exchange, id) =>
              host.keyed(exchange, {}, (key) => {
                const kept = host.keptAnswer(key, id);
                if (kept === undefined)
                  throw new Refusal({ kind: 'not-found', message: `Response with id '${id}' not found.`, param: 'response_id' });
                return kept;
              }),
          },
          {
            method: 'POST',
            path: '/v1/files',
            api: openAiApi,
            handle: (exchange) =>
              host.keyed(exchange, { admit: true, maxBodyBytes: host.maxBatchBytes }, async (key) => {
                const body = await host.readBody(exchange, host.maxBatchBytes);
                return batches.upload(key, body, exchange.req.headers['content-type']);
              }),
          },
          {
            method: 'GET',
            path: '/v1/files/{id}',
            api: openAiApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.file(key, id)),
          },
          {
            method: 'GET',
            path: '/v1/files/{id}/content',
            api: openAiApi,
            handle: (exchange, id) =>
              host.keyed(exchange, {}, (key) => new FileAnswer(batches.fileOf(key, id), 'application/octet-stream')),
          },
          {
            method: 'DELETE',
            path: '/v1/files/{id}',
            api: openAiApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.deleteFile(key, id)),
          },
          {
            method: 'POST',
            path: '/v1/batches',
            api: openAiApi,
            handle: (exchange) =>
              host.keyed(exchange, { admit: true, maxBodyBytes: host.maxBatchBytes }, async (key) =>
                batches.create(key, await host.readJson(exchange)),
              ),
          },
          {
            method: 'GET',
            path: '/v1/batches',
            api: openAiApi,
            handle: (exchange) => host.keyed(exchange, {}, (key) => batches.list(key, queryOf(exchange))),
          },
          {
            method: 'GET',
            path: '/v1/batches/{id}',
            api: openAiApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.retrieve(key, id)),
          },
          {
            method: 'POST',
            path: '/v1/batches/{id}/cancel',
            api: openAiApi,
            handle: (exchange, id) => host.keyed(exchange, {}, (key) => batches.cancel(key, id)),
          },
        ],
      };
    },
  };
}

/** `api` as the host `serve --headers` imitates answers: its quota's answer, its status for a provider down. */
function hosted(api: ChatApi, { overQuota, overloadedStatus }: OpenAiServeParts): ChatApi {
  if (overQuota === undefined && overloadedStatus === undefined) return api;
  return {
    ...api,
    overQuota,
    fail(failure, requestId) {
      const answer = api.fail(failure, requestId);
      return failure.kind === 'overloaded' && overloadedStatus !== undefined ? { ...answer, status: overloadedStatus } : answer;
    },
  };
}
