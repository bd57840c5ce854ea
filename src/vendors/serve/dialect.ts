/**
 * How a vendor's dialect plugs into `serve`: the routes it adds, each answered by the server's own
 * chat steps or by a handler of the dialect's, over what the server lends it ({@link ServeHost}).
 * The server (`src/server/`) implements the host and mounts the dialects of the registry; a dialect
 * knows nothing of the server beyond this file.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { BatchTiming, RowAnswer } from './batch-job.ts';
import type { ChatApi } from './chat-api.ts';
import type { Exchange } from './exchange.ts';
import type { FileStore, StoredFile } from './file-store.ts';

/** A route's handler: it answers the exchange (`id` is the path's `{id}` segment, `''` without one). */
export type RouteHandler = (exchange: Exchange, id: string) => Promise<void> | void;

/** One route a dialect adds. */
export interface ServeRoute {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** The path, `{id}` standing for the one segment that is an id. */
  readonly path: string;
  /** The API whose shapes its answers and errors take. */
  readonly api: ChatApi;
  /** `'chat'`: the server's chat steps (key, quota, parse, answer, stream) in `api`'s words; else the dialect's own handler. */
  readonly handle: 'chat' | RouteHandler;
  /** Query parameters the route cannot do without (Azure's `api-version`): without them, no route matches. @default none */
  readonly query?: readonly string[] | undefined;
}

/** One API's batches and their rows, counted by status in that API's words. */
export interface BatchCounts {
  readonly batches: Record<string, number>;
  readonly rows: Record<string, number>;
}

/** What a dialect's Batch API needs of the server: its files, its timing and queue limit, and a row answered as the live route answers it. */
export interface BatchServices {
  readonly files: FileStore;
  readonly timing: BatchTiming;
  /** Input tokens a key may have enqueued; undefined for no limit. */
  readonly queueTokens: number | undefined;
  /** Work that goes on after the answer (a validation, files being written): its failure is the server's to log. */
  background(work: Promise<void>): void;
  /** The row's body answered as the route of `api` answers it live. */
  answerRow(api: ChatApi, body: unknown): Promise<RowAnswer>;
  /** The input tokens of a request with this body (0 when the API would refuse it). */
  inputTokens(api: ChatApi, body: unknown): number;
}

/** What the server lends a dialect's handlers. */
export interface ServeHost {
  /**
   * Runs a route that needs a key: authenticated (401 otherwise); with `maxBodyBytes`, refused 413
   * by the declared length before anything is read; with `admit`, a request taken from the key's
   * quota (429). `work` answers with a body, or a {@link FileAnswer} to stream; what it throws — a
   * `Refusal`, an `InvalidRequestError` — is answered in the route's API's words.
   */
  keyed(
    exchange: Exchange,
    options: { readonly admit?: boolean; readonly maxBodyBytes?: number },
    work: (key: string) => unknown,
  ): Promise<void>;
  /** The body, read up to `maxBytes` (413 past them). */
  readBody(exchange: Exchange, maxBytes: number): Promise<Buffer>;
  /** The body, read up to `maxBytes` and parsed as JSON (400 when it does not parse). @default the chat routes' cap */
  readJson(exchange: Exchange, maxBytes?: number): Promise<unknown>;
  /** The largest body of a chat request, bytes. */
  readonly maxBodyBytes: number;
  /** The largest batch upload, bytes. */
  readonly maxBatchBytes: number;
  /** The tokens of a text, as the answers' usage counts them. */
  countTokens(text: string): number;
  /** An answer kept for `key` under `id` (the APIs that keep theirs: `ChatApi.keptAs`), as it was sent. */
  keptAnswer(key: string, id: string): unknown;
  /** What a dialect's Batch API runs on. */
  readonly batches: BatchServices;
}

/** A dialect mounted on one server: its routes, and its batches' counts for `/metrics`. */
export interface MountedDialect {
  readonly routes: readonly ServeRoute[];
  /** Batches and rows by status, when the dialect has a Batch API. @default none */
  batchCounts?(): BatchCounts;
  /** What `/metrics` calls the dialect's Batch API (`the Batch API`, `Message Batches`). @default none */
  readonly batchApiName?: string | undefined;
}

/** How `serve` speaks one vendor's API: its routes and answers, loaded when a server starts. */
export interface VendorDialect {
  /** The words of a request outside every route (a 404, `/v1/models`) when {@link claims} holds. */
  readonly api: ChatApi;
  /** Whether a request outside the dialect's routes speaks it, by its headers (its key's header). @default false: the first vendor's is the default */
  claims?(headers: IncomingHttpHeaders): boolean;
  /** The dialect on one server: its routes over `host`, and whatever state they keep (its batches). */
  mount(host: ServeHost): MountedDialect;
}

/** The request's query. */
export function queryOf(exchange: Exchange): URLSearchParams {
  return new URLSearchParams((exchange.req.url ?? '').split('?')[1] ?? '');
}

/** The server's address as the client reached it: where the results of a batch are to be had. */
export function originOf(exchange: Exchange): string {
  return `http://${exchange.req.headers.host ?? 'localhost'}`;
}

/** A route's answer that is a kept file, sent as it is on disk. */
export class FileAnswer {
  constructor(
    readonly file: StoredFile,
    readonly type: string,
  ) {}
}
