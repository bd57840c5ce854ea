import type { Anthropic } from '@anthropic-ai/sdk';
import { loadOptional } from '../../optional-package.ts';
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

/** Where {@link AnthropicBatchApi} sends its batches, with which key and model. */
export type AnthropicBatchApiOptions = VendorBatchApiOptions;

/**
 * Anthropic's Message Batches through the official `@anthropic-ai/sdk`: rows sent as `requests[]`
 * of `{custom_id, params}`, the results JSONL read back once the batch has ended. Needs the
 * `@anthropic-ai/sdk` package.
 */
export class AnthropicBatchApi implements BatchApi {
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
  readonly #options: AnthropicBatchApiOptions;
  /** The vendor whose request bodies the rows carry: its encode, decode, defaults and SDK package. */
  readonly #vendor: Vendor;
  #client: Promise<Anthropic> | undefined;

  /**
   * `vendor`: whose requests the rows are (`VENDORS.anthropic`, or one whose wire is the same) —
   * handed over rather than imported, so that this module, loaded only by a run that batches, shares
   * no module with a plain run (in the command's bundle, each would cut the run's chunks in more).
   */
  constructor(options: AnthropicBatchApiOptions, vendor: Vendor) {
    this.#options = options;
    this.#vendor = vendor;
    this.model = options.model;
    this.name = options.name ?? vendor.defaults.name;
    this.promptCacheRatios = vendor.defaults.promptCacheRatios;
    this.maxRows = vendor.batch?.maxRows;
    this.maxBytes = vendor.batch?.maxBytes;
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
    const client = await this.#sdk();
    const requests = rows.map((row) => ({ custom_id: row.customId, params: row.body as Anthropic.MessageCreateParamsNonStreaming }));
    try {
      // No retries of the SDK's own: a full queue is waited out by the run, batch by batch.
      const batch = await client.messages.batches.create({ requests }, { maxRetries: 0 });
      return { batchId: batch.id };
    } catch (error) {
      if ((error as { status?: unknown }).status === 429) throw new BatchQueueFullError((error as Error).message, { cause: error });
      throw error;
    }
  }

  /** {@inheritDoc BatchApi.poll} */
  async poll(batchId: string): Promise<BatchProgress> {
    const client = await this.#sdk();
    const batch = await client.messages.batches.retrieve(batchId);
    const counts = batch.request_counts;
    const failed = counts.errored + counts.canceled + counts.expired;
    return {
      status: batch.processing_status,
      ended: batch.processing_status === 'ended',
      total: counts.processing + counts.succeeded + failed,
      completed: counts.succeeded,
      failed,
    };
  }

  /** {@inheritDoc BatchApi.results} */
  async results(batchId: string): Promise<RowOutcome[]> {
    const client = await this.#sdk();
    const outcomes: RowOutcome[] = [];
    for await (const line of await client.messages.batches.results(batchId)) {
      const customId = line.custom_id;
      const { result } = line;
      if (result.type === 'succeeded') outcomes.push({ customId, body: result.message });
      else if (result.type === 'errored') {
        const error = result.error.error;
        outcomes.push({ customId, error: `${error.type}: ${error.message}` });
      } else outcomes.push({ customId, error: `the row was ${result.type}`, expired: true });
    }
    return outcomes;
  }

  /** {@inheritDoc BatchApi.cancel} */
  async cancel(batchId: string): Promise<void> {
    const client = await this.#sdk();
    await client.messages.batches.cancel(batchId);
  }

  #sdk(): Promise<Anthropic> {
    this.#client ??= loadOptional(this.#vendor.sdkPackage, 'the Anthropic Message Batches API', () => import('@anthropic-ai/sdk')).then(
      // The SDK's own retries on: a poll that meets a blip tries again rather than ending the wait.
      (sdk) => new sdk.Anthropic({ apiKey: this.#options.apiKey, baseURL: this.#options.baseUrl, logLevel: 'off', webhookKey: null }),
    );
    return this.#client;
  }
}
