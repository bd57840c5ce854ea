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
import type { LlmRequest, LlmResponse } from '../../provider/provider.ts';
import type { VendorBatchApiOptions } from '../vendor.ts';
import { ANTHROPIC_SDK_PACKAGE } from './anthropic-wire.ts';
import { ANTHROPIC_BATCH_CAPS } from './batch-caps.ts';
import { decodeAnthropic } from './decode.ts';
import { ANTHROPIC_DEFAULTS } from './defaults.ts';
import { encodeAnthropic } from './encode.ts';

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
  readonly promptCacheRatios = ANTHROPIC_DEFAULTS.promptCacheRatios;
  /** {@inheritDoc BatchApi.maxRows} */
  readonly maxRows = ANTHROPIC_BATCH_CAPS.maxRows;
  /** {@inheritDoc BatchApi.maxBytes} */
  readonly maxBytes = ANTHROPIC_BATCH_CAPS.maxBytes;
  readonly #options: AnthropicBatchApiOptions;
  #client: Promise<Anthropic> | undefined;

  constructor(options: AnthropicBatchApiOptions) {
    this.#options = options;
    this.model = options.model;
    this.name = options.name ?? ANTHROPIC_DEFAULTS.name;
  }

  /** {@inheritDoc BatchApi.encode} */
  encode(request: LlmRequest, maxOutputTokens: number): object {
    return encodeAnthropic(request, this.#options.model, maxOutputTokens);
  }

  /** {@inheritDoc BatchApi.decode} */
  decode(request: LlmRequest, body: object, maxOutputTokens: number): Promise<LlmResponse> {
    return decodeAnthropic(request, body, { headers: {} }, maxOutputTokens);
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
    this.#client ??= loadOptional(ANTHROPIC_SDK_PACKAGE, 'the Anthropic Message Batches API', () => import('@anthropic-ai/sdk')).then(
      // The SDK's own retries on: a poll that meets a blip tries again rather than ending the wait.
      (sdk) => new sdk.Anthropic({ apiKey: this.#options.apiKey, baseURL: this.#options.baseUrl, logLevel: 'off', webhookKey: null }),
    );
    return this.#client;
  }
}
