/**
 * The Gemini Batch API as `serve` speaks it: `POST /v1beta/models/{model}:batchGenerateContent`
 * with inline requests (`batch.inputConfig.requests.requests[]` of `{request, metadata: {key}}`;
 * a batch over the upload cap refused 400, a key's queue full 429 `RESOURCE_EXHAUSTED`), answered
 * with a long-running operation (`batches/{id}`) whose `metadata` is the batch — its `state`
 * `BATCH_STATE_RUNNING`, then `SUCCEEDED`, `CANCELLED` or `EXPIRED`, its `batchStats` — and, once
 * `done`, its `response.inlinedResponses.inlinedResponses[]` (`{response, metadata}` or `{error,
 * metadata}`) in input order; `batches/{id}:cancel`; `DELETE batches/{id}`.
 */

import { type BatchEnd, BatchJob, type EndedRow } from '../serve/batch-job.ts';
import type { ChatApi } from '../serve/chat-api.ts';
import { isRecord, jsonType } from '../serve/chat-api.ts';
import type { BatchCounts, BatchServices } from '../serve/dialect.ts';
import { Refusal } from '../serve/exchange.ts';
import type { StoredFile } from '../serve/file-store.ts';
import { randomId } from '../serve/file-store.ts';

const BATCH_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch';
const OUTPUT_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput';
const ID_ALPHABET_LENGTH = 20;

interface GeminiBatch {
  readonly job: BatchJob;
  readonly model: string;
  readonly displayName: string;
  /** The rows' outcomes once the batch has ended, a JSON line each, in input order. */
  results: StoredFile | undefined;
}

export class GeminiBatches {
  readonly #services: BatchServices;
  readonly #api: ChatApi;
  readonly #batches = new Map<string, GeminiBatch>();

  /** `api`: the `generateContent` API the rows are answered through. */
  constructor(services: BatchServices, api: ChatApi) {
    this.#services = services;
    this.#api = api;
  }

  /** `POST /v1beta/models/{model}:batchGenerateContent`: checked whole (400, 429), then its rows run after the answer. */
  create(key: string, model: string, body: unknown): unknown {
    if (!isRecord(body)) throw invalid(`Invalid JSON payload received. Expected an object, got ${jsonType(body)}.`);
    for (const field of Object.keys(body))
      if (field !== 'batch') throw invalid(`Invalid JSON payload received. Unknown name "${field}": Cannot find field.`);
    const { batch } = body;
    if (!isRecord(batch)) throw invalid('* BatchGenerateContentRequest.batch: batch is required');
    const input = batch.inputConfig;
    if (!isRecord(input)) throw invalid('* BatchGenerateContentRequest.batch.input_config: input_config is required');
    if (input.fileName !== undefined)
      throw invalid('* BatchGenerateContentRequest.batch.input_config.file_name: serve takes inline requests only');
    const requests = isRecord(input.requests) ? input.requests.requests : undefined;
    if (!Array.isArray(requests) || requests.length === 0) {
      throw invalid('* BatchGenerateContentRequest.batch.input_config.requests.requests: at least one request is required');
    }
    let inputTokens = 0;
    const rows = requests.map((item: unknown, index) => {
      const at = `batch.input_config.requests.requests[${index}]`;
      if (!isRecord(item) || !isRecord(item.request)) throw invalid(`* BatchGenerateContentRequest.${at}.request: request is required`);
      const { key: said } = (isRecord(item.metadata) ? item.metadata : {}) as { key?: unknown };
      const request = { ...item.request, model: item.request.model ?? `models/${model}` };
      inputTokens += this.#services.inputTokens(this.#api, request);
      return { customId: typeof said === 'string' ? said : String(index), body: { request, metadata: item.metadata } };
    });
    const limit = this.#services.queueTokens;
    const enqueued = this.#enqueued(key);
    if (limit !== undefined && enqueued + inputTokens > limit) {
      throw new Refusal({
        kind: 'rate-limited',
        message: `Resource has been exhausted: this batch would pass your limit of ${limit} batch enqueued tokens (${enqueued} enqueued, ${inputTokens} asked for). Retry once earlier batches have ended.`,
      });
    }
    const job = new BatchJob(randomId('', ID_ALPHABET_LENGTH).toLowerCase(), key, this.#services.timing);
    job.inputTokens = inputTokens;
    job.start(
      rows.length,
      rows.map(({ customId, body: row }) => ({ customId, body: row.request })),
      (request) => this.#services.answerRow(this.#api, request),
      this.#services.files,
      'creation',
    );
    const entry: GeminiBatch = {
      job,
      model,
      displayName: typeof batch.displayName === 'string' ? batch.displayName : job.id,
      results: undefined,
    };
    this.#batches.set(job.id, entry);
    return this.#describe(entry, undefined);
  }

  /** `GET /v1beta/batches/{id}`: the operation, its results in it once done. */
  async retrieve(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    return this.#describe(batch, await this.#outcomes(batch));
  }

  /** `POST /v1beta/batches/{id}:cancel`: the rows not finished end unanswered, the batch `CANCELLED`. */
  async cancel(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    if (batch.job.phase === 'ended')
      throw new Refusal({ kind: 'invalid-request', message: `Batch batches/${id} has already ended: there is nothing to cancel.` });
    batch.job.cancel();
    this.#services.background(this.#look(batch));
    return {};
  }

  /** `DELETE /v1beta/batches/{id}`: the batch and its results gone (a running one is cancelled first). */
  async delete(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    batch.job.cancel();
    await this.#look(batch);
    this.#batches.delete(id);
    if (batch.results !== undefined) await this.#services.files.delete(key, batch.results.id);
    return {};
  }

  /** Batches and rows by state, for `/metrics`. */
  counts(): BatchCounts {
    const counts: BatchCounts = { batches: {}, rows: {} };
    for (const batch of this.#batches.values()) {
      const state = stateOf(batch.job);
      counts.batches[state] = (counts.batches[state] ?? 0) + 1;
      for (const [name, count] of Object.entries(stats(batch.job))) counts.rows[name] = (counts.rows[name] ?? 0) + Number(count);
    }
    return counts;
  }

  #batchOf(key: string, id: string): GeminiBatch {
    const batch = this.#batches.get(id);
    if (batch === undefined || batch.job.key !== key) throw new Refusal({ kind: 'not-found', message: `Batch batches/${id} not found.` });
    return batch;
  }

  /** Brings the batch up to the clock: past its end, it is read once its results are written. */
  #look(batch: GeminiBatch): Promise<void> {
    return batch.job.refresh(this.#services.files, (rows, end) => this.#writeResults(batch, rows, end));
  }

  #enqueued(key: string): number {
    let enqueued = 0;
    for (const { job } of this.#batches.values()) if (job.key === key && job.enqueued) enqueued += job.inputTokens;
    return enqueued;
  }

  async #writeResults(batch: GeminiBatch, rows: AsyncIterable<EndedRow>, _end: BatchEnd): Promise<void> {
    const { key, id } = batch.job;
    const results = this.#services.files.open(key, { filename: `${id}_responses.jsonl`, purpose: 'results' });
    for await (const { customId, answer } of rows) {
      // A row the batch never ran (cancelled, expired) has no entry, as Gemini lists none for it.
      if (answer === undefined) continue;
      const ok = answer.statusCode >= 200 && answer.statusCode < 300;
      const metadata = { key: customId };
      const error = (answer.body as { error?: unknown } | null)?.error;
      await results.write(`${JSON.stringify(ok ? { response: answer.body, metadata } : { error, metadata })}\n`);
    }
    batch.results = await results.close();
  }

  async #outcomes(batch: GeminiBatch): Promise<unknown[] | undefined> {
    if (batch.job.phase !== 'ended') return undefined;
    const outcomes: unknown[] = [];
    if (batch.results !== undefined) {
      for await (const line of this.#services.files.lines(batch.results)) if (line !== '') outcomes.push(JSON.parse(line));
    }
    return outcomes;
  }

  #describe(batch: GeminiBatch, outcomes: unknown[] | undefined): unknown {
    const { job } = batch;
    const at = (ms: number | undefined) =>
      ms === undefined ? undefined : new Date(job.createdSeconds * 1000 + (ms - job.createdMs)).toISOString();
    const name = `batches/${job.id}`;
    const output = outcomes === undefined ? undefined : { inlinedResponses: { inlinedResponses: outcomes } };
    const metadata = {
      '@type': BATCH_TYPE,
      model: `models/${batch.model}`,
      displayName: batch.displayName,
      createTime: at(job.createdMs),
      updateTime: at(job.times.endedMs ?? job.createdMs),
      ...(job.times.endedMs !== undefined && { endTime: at(job.times.endedMs) }),
      batchStats: stats(job),
      state: stateOf(job),
      name,
      ...(output !== undefined && { output }),
    };
    return { name, metadata, ...(output !== undefined && { done: true, response: { '@type': OUTPUT_TYPE, ...output } }) };
  }
}

function stateOf(job: BatchJob): string {
  if (job.phase === 'failed') return 'BATCH_STATE_FAILED';
  if (job.phase !== 'ended') return job.total === 0 ? 'BATCH_STATE_PENDING' : 'BATCH_STATE_RUNNING';
  return { completed: 'BATCH_STATE_SUCCEEDED', cancelled: 'BATCH_STATE_CANCELLED', expired: 'BATCH_STATE_EXPIRED' }[job.end!];
}

/** `batchStats`, int64 counts as Google's JSON writes them (strings): the rows finished so far. */
function stats(job: BatchJob): Record<string, string> {
  const { rows, errored } = job.finished();
  const ended = job.phase === 'ended';
  return {
    requestCount: String(job.total),
    successfulRequestCount: String(rows - errored),
    failedRequestCount: String(errored),
    pendingRequestCount: String(ended ? 0 : job.total - rows),
  };
}

function invalid(message: string): Refusal {
  return new Refusal({ kind: 'invalid-request', message });
}
