import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchQueueFullError,
  type BatchApi,
  type BatchProgress,
  type BatchRow,
  type RowOutcome,
  type SubmittedBatch,
} from '../../provider/batch-api.ts';
import type { LlmRequest, LlmResponse, PromptCacheRatios } from '../../provider/provider.ts';
import type { Vendor, VendorBatchApiOptions } from '../vendor.ts';

/** Where {@link GeminiBatchApi} sends its batches, with which key and model. */
export type GeminiBatchApiOptions = VendorBatchApiOptions;

/** What the Batch API is made with from the rest of the vendor's folder: handed over, not imported (see the constructor). */
export interface GeminiBatchParts {
  /** `{baseUrl}/v1beta/models/{model}`. */
  modelsUrl(baseUrl: string, model: string): string;
  /** One request to the API, its JSON object answer, or the provider error its failure is. */
  request(url: string, apiKey: string, init: { readonly method: 'GET' | 'POST'; readonly body?: string | undefined }): Promise<object>;
}

/** A batch's states that are over: its results can be read. */
const ENDED: ReadonlySet<unknown> = new Set([
  'BATCH_STATE_SUCCEEDED',
  'BATCH_STATE_FAILED',
  'BATCH_STATE_CANCELLED',
  'BATCH_STATE_EXPIRED',
]);
/** Attempts of a poll, a results read or a cancel that meet a blip (a 5xx, a 429, a connection lost). */
const READ_ATTEMPTS = 3;
const READ_BACKOFF_MS = 500;

/**
 * The Gemini Batch API over `fetch`: rows sent inline in one `batchGenerateContent` request
 * (`batch.inputConfig.requests.requests[]` of `{request, metadata: {key}}`, under 20 MB — the run
 * cuts its rows into batches under the cap, so the Files API is not needed), polled at
 * `GET batches/{id}` (`metadata.state`, `metadata.batchStats`), its rows' outcomes read from
 * `response.inlinedResponses.inlinedResponses[]` by `metadata.key`, cancelled with `:cancel`.
 */
export class GeminiBatchApi implements BatchApi {
  /** {@inheritDoc BatchApi.name} */
  readonly name: string;
  /** {@inheritDoc BatchApi.model} */
  readonly model: string;
  /** {@inheritDoc BatchApi.promptCacheRatios} */
  readonly promptCacheRatios: PromptCacheRatios;
  /** {@inheritDoc BatchApi.maxRows} */
  readonly maxRows: number | undefined;
  /** {@inheritDoc BatchApi.maxBytes} */
  readonly maxBytes: number | undefined;
  readonly #options: GeminiBatchApiOptions;
  readonly #vendor: Vendor;
  readonly #parts: GeminiBatchParts;
  /** `{baseUrl}/v1beta`. */
  readonly #apiUrl: string;

  /**
   * `vendor` and `parts`: whose requests the rows are and how a request is sent — handed over
   * rather than imported, so that this module, loaded only by a run that batches, shares no module
   * with a plain run (in the command's bundle, each would cut the run's chunks in more).
   */
  constructor(options: GeminiBatchApiOptions, vendor: Vendor, parts: GeminiBatchParts) {
    this.#options = options;
    this.#vendor = vendor;
    this.#parts = parts;
    this.model = options.model;
    this.name = options.name ?? vendor.defaults.name;
    this.promptCacheRatios = vendor.defaults.promptCacheRatios;
    this.maxRows = vendor.batch?.maxRows;
    this.maxBytes = vendor.batch?.maxBytes;
    this.#apiUrl = parts.modelsUrl(options.baseUrl, options.model).replace(/\/models\/[^/]*$/, '');
  }

  /** {@inheritDoc BatchApi.encode} */
  encode(request: LlmRequest, maxOutputTokens: number): object {
    return this.#vendor.encode(request, this.#options.model, maxOutputTokens);
  }

  /** {@inheritDoc BatchApi.decode} */
  decode(request: LlmRequest, body: object, maxOutputTokens: number): Promise<LlmResponse> {
    return this.#vendor.decode(request, body, { headers: {} }, maxOutputTokens);
  }

  /** {@inheritDoc BatchApi.submit} */
  async submit(rows: readonly BatchRow[]): Promise<SubmittedBatch> {
    let requests = '';
    for (const row of rows) {
      const request = row.bodyJson ?? JSON.stringify(row.body);
      requests += `${requests === '' ? '' : ','}{"request":${request},"metadata":{"key":${JSON.stringify(row.customId)}}}`;
    }
    const displayName = JSON.stringify(`news-processor ${rows[0]?.customId ?? ''}`.trim());
    const body = `{"batch":{"displayName":${displayName},"inputConfig":{"requests":{"requests":[${requests}]}}}}`;
    const url = `${this.#parts.modelsUrl(this.#options.baseUrl, this.#options.model)}:batchGenerateContent`;
    try {
      const operation = (await this.#parts.request(url, this.#options.apiKey, { method: 'POST', body })) as { name?: unknown };
      if (typeof operation.name !== 'string') throw new Error('the Gemini Batch API answered without the batch’s name');
      return { batchId: operation.name.replace(/^batches\//, '') };
    } catch (error) {
      // Gemini's queue of enqueued tokens, full: the rows wait for earlier batches.
      if ((error as { status?: unknown }).status === 429) throw new BatchQueueFullError((error as Error).message, { cause: error });
      throw error;
    }
  }

  /** {@inheritDoc BatchApi.poll} */
  async poll(batchId: string): Promise<BatchProgress> {
    const { metadata } = (await this.#get(batchId)) as { metadata?: { state?: unknown; batchStats?: Record<string, unknown> } };
    const state = metadata?.state;
    const stats = metadata?.batchStats ?? {};
    const count = (value: unknown) => (Number.isFinite(Number(value ?? 0)) ? Number(value ?? 0) : 0);
    return {
      status: typeof state === 'string' ? state.replace(/^BATCH_STATE_/, '').toLowerCase() : 'unknown',
      ended: ENDED.has(state),
      total: count(stats.requestCount),
      completed: count(stats.successfulRequestCount),
      failed: count(stats.failedRequestCount),
    };
  }

  /** {@inheritDoc BatchApi.results} */
  async results(batchId: string): Promise<RowOutcome[]> {
    const operation = (await this.#get(batchId)) as {
      response?: { inlinedResponses?: { inlinedResponses?: unknown } };
      metadata?: { output?: { inlinedResponses?: { inlinedResponses?: unknown } } };
    };
    const listed = operation.response?.inlinedResponses?.inlinedResponses ?? operation.metadata?.output?.inlinedResponses?.inlinedResponses;
    const outcomes: RowOutcome[] = [];
    for (const item of Array.isArray(listed) ? listed : []) {
      const { response, error, metadata } = (item ?? {}) as { response?: unknown; error?: unknown; metadata?: { key?: unknown } };
      const customId = metadata?.key;
      if (typeof customId !== 'string') continue;
      if (typeof response === 'object' && response !== null) outcomes.push({ customId, body: response });
      else {
        const { status, message } = (error ?? {}) as { status?: unknown; message?: unknown };
        outcomes.push({ customId, error: `${String(status ?? 'error')}: ${String(message ?? 'the row has no response')}` });
      }
    }
    return outcomes;
  }

  /** {@inheritDoc BatchApi.cancel} */
  async cancel(batchId: string): Promise<void> {
    await this.#read(`${this.#apiUrl}/batches/${encodeURIComponent(batchId)}:cancel`, 'POST');
  }

  #get(batchId: string): Promise<object> {
    return this.#read(`${this.#apiUrl}/batches/${encodeURIComponent(batchId)}`, 'GET');
  }

  /** A request that changes nothing the second time: tried again after a blip, a few times. */
  async #read(url: string, method: 'GET' | 'POST'): Promise<object> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#parts.request(url, this.#options.apiKey, { method, body: method === 'POST' ? '{}' : undefined });
      } catch (error) {
        if (attempt >= READ_ATTEMPTS || (error as { retryable?: unknown }).retryable !== true) throw error;
        await sleep(READ_BACKOFF_MS * attempt);
      }
    }
  }
}
