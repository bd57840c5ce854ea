/**
 * Anthropic's Message Batches as `serve` speaks them: 1 to 100,000 requests `{custom_id, params}`
 * checked when the batch is made (a bad or repeated custom id, `stream: true` or a missing
 * `max_tokens` refused with 400; a key's queue full, 429), `in_progress → ended` (or `canceling`),
 * every count but `processing` 0 until the end, then a results JSONL of `succeeded`, `errored`,
 * `canceled` and `expired` rows. A request's other faults are found when it runs: an errored row.
 */

import { type BatchEnd, BatchJob, type EndedRow } from '../serve/batch-job.ts';
import { pageLimit, pageOf } from '../serve/batch-list.ts';
import type { ChatApi } from '../serve/chat-api.ts';
import { isRecord, jsonType } from '../serve/chat-api.ts';
import type { BatchCounts, BatchServices } from '../serve/dialect.ts';
import { Refusal } from '../serve/exchange.ts';
import type { StoredFile } from '../serve/file-store.ts';
import { randomId } from '../serve/file-store.ts';

/** Anthropic's limit of requests in one batch. */
const MAX_REQUESTS = 100_000;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
/** The page size of a list at most (Anthropic's). */
const MAX_PAGE = 1000;

interface MessageBatch {
  readonly job: BatchJob;
  results: StoredFile | undefined;
  /** The address `results_url` gives, once there are results. */
  readonly resultsUrl: string;
}

export class AnthropicBatches {
  readonly #services: BatchServices;
  readonly #api: ChatApi;
  /** Every batch, oldest first: a key's list reads it backwards. */
  readonly #batches = new Map<string, MessageBatch>();

  /** `api`: the Messages API the rows are answered through. */
  constructor(services: BatchServices, api: ChatApi) {
    this.#services = services;
    this.#api = api;
  }

  /** `POST /v1/messages/batches`: checked whole (400, 429), then its rows run after the answer. `origin`: the server's address as the client reached it. */
  create(key: string, body: unknown, origin: string): unknown {
    if (!isRecord(body)) throw invalid(`Input should be a valid dictionary, got ${jsonType(body)}`);
    const { requests } = body;
    if (requests === undefined) throw invalid('requests: Field required');
    if (!Array.isArray(requests)) throw invalid(`requests: Input should be a valid list, got ${jsonType(requests)}`);
    if (requests.length === 0) throw invalid('requests: List should have at least 1 item after validation, not 0');
    if (requests.length > MAX_REQUESTS) {
      throw invalid(`requests: List should have at most ${MAX_REQUESTS} items after validation, not ${requests.length}`);
    }
    for (const field of Object.keys(body)) if (field !== 'requests') throw invalid(`${field}: Extra inputs are not permitted`);
    const seen = new Set<string>();
    let inputTokens = 0;
    requests.forEach((request: unknown, index) => {
      const at = `requests.${index}`;
      if (!isRecord(request)) throw invalid(`${at}: Input should be a valid dictionary, got ${jsonType(request)}`);
      const { custom_id: customId, params } = request;
      if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
        throw invalid(`${at}.custom_id: String should match pattern '${CUSTOM_ID.source}'`);
      }
      if (seen.has(customId)) throw invalid(`${at}.custom_id: Duplicate custom_id '${customId}': each request's custom_id must be unique.`);
      seen.add(customId);
      if (!isRecord(params)) throw invalid(`${at}.params: Input should be a valid dictionary, got ${jsonType(params)}`);
      if (params.stream === true) throw invalid(`${at}.params.stream: Streaming is not supported in the Message Batches API.`);
      if (params.max_tokens === undefined) throw invalid(`${at}.params.max_tokens: Field required`);
      inputTokens += this.#services.inputTokens(this.#api, params);
    });
    const limit = this.#services.queueTokens;
    const enqueued = this.#enqueued(key);
    if (limit !== undefined && enqueued + inputTokens > limit) {
      throw new Refusal({
        kind: 'rate-limited',
        message: `This batch would pass your queue limit of ${limit} input tokens enqueued in Message Batches: ${enqueued} enqueued, ${inputTokens} asked for. Retry once earlier batches have ended.`,
      });
    }
    const job = new BatchJob(randomId('msgbatch_', 24), key, this.#services.timing);
    job.inputTokens = inputTokens;
    const rows = (requests as { custom_id: string; params: unknown }[]).map((request) => ({
      customId: request.custom_id,
      body: request.params,
    }));
    job.start(rows.length, rows, (params) => this.#services.answerRow(this.#api, params), this.#services.files, 'creation');
    const batch: MessageBatch = { job, results: undefined, resultsUrl: `${origin}/v1/messages/batches/${job.id}/results` };
    this.#batches.set(job.id, batch);
    return this.#describe(batch);
  }

  /** `GET /v1/messages/batches/{id}`. */
  async retrieve(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    return this.#describe(batch);
  }

  /** `GET /v1/messages/batches?before_id=&after_id=&limit=`: the key's batches, newest first. */
  async list(key: string, query: URLSearchParams): Promise<unknown> {
    const limit = pageLimit(query.get('limit'), MAX_PAGE);
    const mine = [...this.#batches.values()].filter((batch) => batch.job.key === key).reverse();
    const cursor = { after: query.get('after_id') ?? undefined, before: query.get('before_id') ?? undefined, limit };
    const { items, hasMore } = pageOf(mine, (batch) => batch.job.id, cursor);
    await Promise.all(items.map((batch) => this.#look(batch)));
    const data = items.map((batch) => this.#describe(batch));
    return { data, has_more: hasMore, first_id: items[0]?.job.id ?? null, last_id: items.at(-1)?.job.id ?? null };
  }

  /** `GET /v1/messages/batches/{id}/results`: the results file, once the batch has ended. */
  async results(key: string, id: string): Promise<StoredFile> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    if (batch.results === undefined) {
      throw invalid(
        `Message batch ${id} is still ${batch.job.phase === 'cancelling' ? 'canceling' : 'in_progress'}: its results are available once it has ended.`,
      );
    }
    return batch.results;
  }

  /** `POST /v1/messages/batches/{id}/cancel`: `canceling`, then `ended` with the rows not finished `canceled`. */
  async cancel(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    if (batch.job.phase === 'ended') throw invalid(`Message batch ${id} has already ended: there is nothing to cancel.`);
    batch.job.cancel();
    const description = this.#describe(batch);
    this.#services.background(this.#writing(batch));
    return description;
  }

  /** `DELETE /v1/messages/batches/{id}`: only an ended batch, its results with it. */
  async delete(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    if (batch.job.phase !== 'ended') {
      throw invalid(`Message batch ${id} cannot be deleted while it is processing: cancel it, and delete it once it has ended.`);
    }
    this.#batches.delete(id);
    if (batch.results !== undefined) await this.#services.files.delete(key, batch.results.id);
    return { id, type: 'message_batch_deleted' };
  }

  /** Batches and rows by status, for `/metrics`. */
  counts(): BatchCounts {
    const counts: BatchCounts = { batches: {}, rows: {} };
    for (const batch of this.#batches.values()) {
      const status = statusOf(batch.job);
      counts.batches[status] = (counts.batches[status] ?? 0) + 1;
      for (const [name, count] of Object.entries(rowCounts(batch.job, true))) counts.rows[name] = (counts.rows[name] ?? 0) + count;
    }
    return counts;
  }

  #batchOf(key: string, id: string): MessageBatch {
    const batch = this.#batches.get(id);
    if (batch === undefined || batch.job.key !== key)
      throw new Refusal({ kind: 'not-found', message: `No message batch with id '${id}'.` });
    return batch;
  }

  /** Brings the batch up to the clock: past its end, it is read once its results are written (Anthropic shows no step between). */
  #look(batch: MessageBatch): Promise<void> {
    return this.#writing(batch);
  }

  #writing(batch: MessageBatch): Promise<void> {
    return batch.job.refresh(this.#services.files, (rows, end) => this.#writeResults(batch, rows, end));
  }

  #enqueued(key: string): number {
    let enqueued = 0;
    for (const { job } of this.#batches.values()) if (job.key === key && job.enqueued) enqueued += job.inputTokens;
    return enqueued;
  }

  async #writeResults(batch: MessageBatch, rows: AsyncIterable<EndedRow>, end: BatchEnd): Promise<void> {
    const { key, id } = batch.job;
    const results = this.#services.files.open(key, { filename: `${id}_results.jsonl`, purpose: 'results' });
    const notRun = { type: end === 'expired' ? 'expired' : 'canceled' };
    for await (const { customId, answer } of rows) {
      const ok = answer !== undefined && answer.statusCode >= 200 && answer.statusCode < 300;
      const result =
        answer === undefined ? notRun : ok ? { type: 'succeeded', message: answer.body } : { type: 'errored', error: answer.body };
      await results.write(`${JSON.stringify({ custom_id: customId, result })}\n`);
    }
    batch.results = await results.close();
  }

  #describe(batch: MessageBatch): unknown {
    const { job } = batch;
    const times = job.times;
    const at = (ms: number | undefined) =>
      ms === undefined ? null : new Date(job.createdSeconds * 1000 + (ms - job.createdMs)).toISOString();
    const ended = job.phase === 'ended';
    return {
      id: job.id,
      type: 'message_batch',
      processing_status: statusOf(job),
      request_counts: rowCounts(job, false),
      ended_at: ended ? at(times.endedMs) : null,
      created_at: at(job.createdMs),
      expires_at: at(job.expiresAtMs),
      archived_at: null,
      cancel_initiated_at: at(times.cancelMs),
      results_url: ended ? batch.resultsUrl : null,
    };
  }
}

function statusOf(job: BatchJob): 'in_progress' | 'canceling' | 'ended' {
  if (job.phase === 'ended') return 'ended';
  return job.phase === 'cancelling' ? 'canceling' : 'in_progress';
}

/**
 * The request counts: until the batch ends every row is `processing`, as Anthropic counts them;
 * `live` (for metrics) counts the rows finished so far instead.
 */
function rowCounts(job: BatchJob, live: boolean): Record<'processing' | 'succeeded' | 'errored' | 'canceled' | 'expired', number> {
  const ended = job.phase === 'ended';
  const { rows, errored } = job.finished();
  const counts = { processing: job.total, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  if (!ended && !live) return counts;
  counts.processing = ended ? 0 : job.total - rows;
  counts.succeeded = rows - errored;
  counts.errored = errored;
  if (job.end === 'cancelled') counts.canceled = job.total - rows;
  if (job.end === 'expired') counts.expired = job.total - rows;
  return counts;
}

function invalid(message: string): Refusal {
  return new Refusal({ kind: 'invalid-request', message });
}
