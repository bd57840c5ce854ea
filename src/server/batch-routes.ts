import type { Exchange } from './exchange.ts';
import type { AnthropicBatches } from './anthropic-batches.ts';
import type { StoredFile } from './file-store.ts';
import type { OpenAiBatches } from './openai-batches.ts';
import type { RouteHandler } from './routes.ts';

/** What the batch routes need of the server: its batch route's steps, its body readers, the vendors' batches. */
export interface BatchHost {
  /** Runs a batch route: authenticated, an upload admitted against the key's quota; `work` answers with a body or a {@link FileAnswer}. */
  route(exchange: Exchange, options: { readonly upload?: boolean }, work: (key: string) => unknown): Promise<void>;
  readBody(exchange: Exchange, maxBytes: number): Promise<Buffer>;
  readJson(exchange: Exchange, maxBytes?: number): Promise<unknown>;
  openAi(): OpenAiBatches;
  anthropic(): AnthropicBatches;
  maxBatchBytes(): number;
}

/** The routes of both Batch APIs (see `ROUTES`), each a step of {@link BatchHost.route}. */
export type BatchRouteHandler = Exclude<
  RouteHandler,
  'chat' | 'count-tokens' | 'retrieve-response' | 'models' | 'model' | 'health' | 'metrics'
>;

/** What each batch route runs: OpenAI's Files and Batches, Anthropic's Message Batches. */
export function batchHandlers(host: BatchHost): Record<BatchRouteHandler, (exchange: Exchange, id: string) => Promise<void>> {
  return {
    'upload-file': (exchange) =>
      host.route(exchange, { upload: true }, async (key) => {
        const body = await host.readBody(exchange, host.maxBatchBytes());
        return host.openAi().upload(key, body, exchange.req.headers['content-type']);
      }),
    file: (exchange, id) => host.route(exchange, {}, (key) => host.openAi().file(key, id)),
    'file-content': (exchange, id) =>
      host.route(exchange, {}, (key) => new FileAnswer(host.openAi().fileOf(key, id), 'application/octet-stream')),
    'delete-file': (exchange, id) => host.route(exchange, {}, (key) => host.openAi().deleteFile(key, id)),
    'create-batch': (exchange) =>
      host.route(exchange, { upload: true }, async (key) => host.openAi().create(key, await host.readJson(exchange))),
    batch: (exchange, id) => host.route(exchange, {}, (key) => host.openAi().retrieve(key, id)),
    'list-batches': (exchange) => host.route(exchange, {}, (key) => host.openAi().list(key, queryOf(exchange))),
    'cancel-batch': (exchange, id) => host.route(exchange, {}, (key) => host.openAi().cancel(key, id)),
    'create-message-batch': (exchange) =>
      host.route(exchange, { upload: true }, async (key) => {
        const body = await host.readJson(exchange, host.maxBatchBytes());
        return host.anthropic().create(key, body, originOf(exchange));
      }),
    'message-batch': (exchange, id) => host.route(exchange, {}, (key) => host.anthropic().retrieve(key, id)),
    'list-message-batches': (exchange) => host.route(exchange, {}, (key) => host.anthropic().list(key, queryOf(exchange))),
    'message-batch-results': (exchange, id) =>
      host.route(exchange, {}, async (key) => new FileAnswer(await host.anthropic().results(key, id), 'application/x-jsonl')),
    'cancel-message-batch': (exchange, id) => host.route(exchange, {}, (key) => host.anthropic().cancel(key, id)),
    'delete-message-batch': (exchange, id) => host.route(exchange, {}, (key) => host.anthropic().delete(key, id)),
  };
}

/** The request's query. */
export function queryOf(exchange: Exchange): URLSearchParams {
  return new URLSearchParams((exchange.req.url ?? '').split('?')[1] ?? '');
}

/** The server's address as the client reached it: where the results of a batch are to be had. */
export function originOf(exchange: Exchange): string {
  return `http://${exchange.req.headers.host ?? 'localhost'}`;
}

/** A batch route's answer that is a kept file, sent as it is on disk. */
export class FileAnswer {
  constructor(
    readonly file: StoredFile,
    readonly type: string,
  ) {}
}
