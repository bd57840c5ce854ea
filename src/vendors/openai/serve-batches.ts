/**
 * OpenAI's Files and Batch APIs as `serve` speaks them: a JSONL file uploaded with
 * `purpose=batch`, a batch made from it on `/v1/chat/completions` or `/v1/responses`, validated as
 * OpenAI validates before it starts (a failed batch names the lines at fault in `errors.data`),
 * then `in_progress → finalizing → completed` (or `cancelling → cancelled`, or `expired`), with an
 * output file of the rows answered and an error file of those that failed or never ran.
 */

import { randomUUID } from 'node:crypto';
import { type BatchEnd, BatchJob, type BatchPhase, type BatchRow, type EndedRow } from '../serve/batch-job.ts';
import { pageLimit, pageOf } from '../serve/batch-list.ts';
import type { ChatApi } from '../serve/chat-api.ts';
import { isRecord, jsonType } from '../serve/chat-api.ts';
import type { BatchCounts, BatchServices } from '../serve/dialect.ts';
import { Refusal } from '../serve/exchange.ts';
import type { StoredFile } from '../serve/file-store.ts';
import { randomId } from '../serve/file-store.ts';

/** OpenAI's limit of requests in one batch file. */
const MAX_ROWS = 50_000;
/** The most errors a failed batch lists: a file of bad lines is not copied whole into memory. */
const MAX_ERRORS = 1000;
/** OpenAI's caps on a batch's metadata. */
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;
/** The purposes OpenAI takes for an upload; serve keeps files for batches only. */
const PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'];
/** The largest page of `GET /v1/batches` (`limit`, 20 unless it says). */
const MAX_PAGE = 100;

/** One line the validation refused, as `errors.data[]` lists it. */
interface BatchError {
  readonly code: string;
  readonly line: number | null;
  readonly message: string;
  readonly param: string | null;
}

interface OpenAiBatch {
  readonly job: BatchJob;
  readonly endpoint: string;
  readonly api: ChatApi;
  readonly inputFileId: string;
  readonly metadata: Record<string, string> | null;
  model: string | undefined;
  errors: BatchError[];
  outputFileId: string | undefined;
  errorFileId: string | undefined;
  usage: { input: number; output: number };
}

export class OpenAiBatches {
  readonly #services: BatchServices;
  readonly #apis: Readonly<Record<string, ChatApi>>;
  /** Every batch, oldest first: a key's list reads it backwards. */
  readonly #batches = new Map<string, OpenAiBatch>();

  /** `apis`: the API each endpoint a batch may name speaks. */
  constructor(services: BatchServices, apis: Readonly<Record<string, ChatApi>>) {
    this.#services = services;
    this.#apis = apis;
  }

  /** `POST /v1/files`: a multipart body with `purpose` and `file` kept as a file of `key`'s. */
  async upload(key: string, body: Buffer, contentType: string | undefined): Promise<unknown> {
    if (!/^multipart\/form-data/i.test(contentType ?? '')) {
      throw invalid("The request must be multipart/form-data, with a 'file' and a 'purpose'.");
    }
    let form: FormData;
    try {
      form = await new Response(body, { headers: { 'content-type': contentType! } }).formData();
    } catch (error) {
      throw invalid(`Could not parse the multipart form: ${(error as Error).message}`);
    }
    const purpose = form.get('purpose');
    if (purpose === null) throw invalid("Missing required parameter: 'purpose'.", 'purpose');
    if (typeof purpose !== 'string' || !PURPOSES.includes(purpose)) {
      throw invalid(`'${String(purpose)}' is not one of ${PURPOSES.map((name) => `'${name}'`).join(', ')} - 'purpose'`, 'purpose');
    }
    if (purpose !== 'batch')
      throw invalid(`serve keeps files for the Batch API only: upload with purpose 'batch', not '${purpose}'.`, 'purpose');
    const file = form.get('file');
    if (file === null || typeof file === 'string') throw invalid("Missing required parameter: 'file'.", 'file');
    const stored = await this.#services.files.write(key, { filename: file.name, purpose }, new Uint8Array(await file.arrayBuffer()));
    return fileObject(stored);
  }

  /** `GET /v1/files/{id}`. */
  file(key: string, id: string): unknown {
    return fileObject(this.fileOf(key, id));
  }

  /** `key`'s file `id`, or the 404. */
  fileOf(key: string, id: string): StoredFile {
    const file = this.#services.files.find(key, id);
    if (file === undefined) throw notFound(`No such File object: ${id}`, 'id');
    return file;
  }

  /** `DELETE /v1/files/{id}`. */
  async deleteFile(key: string, id: string): Promise<unknown> {
    if (!(await this.#services.files.delete(key, id))) throw notFound(`No such File object: ${id}`, 'id');
    return { id, object: 'file', deleted: true };
  }

  /** `POST /v1/batches`: the batch, `validating`; its input is checked, then run, after the answer. */
  create(key: string, body: unknown): unknown {
    if (!isRecord(body)) throw invalid(`Invalid request body: expected a JSON object, but got ${jsonType(body)}.`);
    const { input_file_id: inputFileId, endpoint, completion_window: window, metadata } = body;
    for (const field of Object.keys(body)) {
      if (!['input_file_id', 'endpoint', 'completion_window', 'metadata', 'output_expires_after'].includes(field)) {
        throw invalid(`Unrecognized request argument supplied: ${field}`, field);
      }
    }
    if (typeof inputFileId !== 'string') throw missingOrWrong('input_file_id', inputFileId, 'a string');
    if (typeof endpoint !== 'string') throw missingOrWrong('endpoint', endpoint, 'a string');
    const api = this.#apis[endpoint];
    if (api === undefined) {
      const known = Object.keys(this.#apis).map((name) => `'${name}'`);
      throw invalid(`Invalid value for 'endpoint': serve runs batches on ${known.join(' and ')}, not '${endpoint}'.`, 'endpoint');
    }
    if (window !== '24h')
      throw invalid(`Invalid value for 'completion_window': expected '24h', got ${JSON.stringify(window)}.`, 'completion_window');
    checkMetadata(metadata);
    const input = this.#services.files.find(key, inputFileId);
    if (input === undefined) throw notFound(`No such File object: ${inputFileId}`, 'input_file_id');
    if (input.purpose !== 'batch') {
      throw invalid(`The file ${inputFileId} was not uploaded with purpose 'batch'.`, 'input_file_id');
    }
    const job = new BatchJob(randomId('batch_', 32), key, this.#services.timing);
    const batch: OpenAiBatch = {
      job,
      endpoint,
      api,
      inputFileId,
      metadata: (metadata as Record<string, string> | null | undefined) ?? null,
      model: undefined,
      errors: [],
      outputFileId: undefined,
      errorFileId: undefined,
      usage: { input: 0, output: 0 },
    };
    this.#batches.set(job.id, batch);
    this.#services.background(this.#validate(batch, input));
    return this.#describe(batch);
  }

  /** `GET /v1/batches/{id}`. */
  async retrieve(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    return this.#describe(batch);
  }

  /** `GET /v1/batches?after=&limit=`: the key's batches, newest first. */
  async list(key: string, query: URLSearchParams): Promise<unknown> {
    const limit = pageLimit(query.get('limit'), MAX_PAGE);
    const mine = [...this.#batches.values()].filter((batch) => batch.job.key === key).reverse();
    const { items, hasMore } = pageOf(mine, (batch) => batch.job.id, { after: query.get('after') ?? undefined, limit });
    await Promise.all(items.map((batch) => this.#look(batch)));
    const data = items.map((batch) => this.#describe(batch));
    return { object: 'list', data, first_id: items[0]?.job.id ?? null, last_id: items.at(-1)?.job.id ?? null, has_more: hasMore };
  }

  /** `POST /v1/batches/{id}/cancel`: `cancelling`, then `cancelled` once its files are written. */
  async cancel(key: string, id: string): Promise<unknown> {
    const batch = this.#batchOf(key, id);
    await this.#look(batch);
    if (!batch.job.cancel()) throw invalid(`Cannot cancel a batch with status '${statusOf(batch)}'.`);
    await this.#look(batch);
    return this.#describe(batch);
  }

  /** Batches and rows by status, for `/metrics`. */
  counts(): BatchCounts {
    const counts: BatchCounts = { batches: {}, rows: {} };
    for (const batch of this.#batches.values()) {
      const status = statusOf(batch);
      counts.batches[status] = (counts.batches[status] ?? 0) + 1;
      const { rows, errored } = batch.job.finished();
      counts.rows.completed = (counts.rows.completed ?? 0) + rows - errored;
      counts.rows.failed = (counts.rows.failed ?? 0) + errored;
      const waiting = batch.job.phase === 'ended' || batch.job.phase === 'failed' ? 0 : batch.job.total - rows;
      counts.rows.in_progress = (counts.rows.in_progress ?? 0) + waiting;
      if (batch.job.end === 'expired' || batch.job.end === 'cancelled') {
        counts.rows[batch.job.end] = (counts.rows[batch.job.end] ?? 0) + batch.job.total - rows;
      }
    }
    return counts;
  }

  #batchOf(key: string, id: string): OpenAiBatch {
    const batch = this.#batches.get(id);
    if (batch === undefined || batch.job.key !== key) throw notFound(`No batch found with id '${id}'.`, 'batch_id');
    return batch;
  }

  /**
   * Brings the batch up to the clock: once its rows are all due its files are written, the reading
   * meanwhile saying `finalizing` (or `cancelling`); an expired batch is read once its files are.
   */
  async #look(batch: OpenAiBatch): Promise<void> {
    const writing = batch.job.refresh(this.#services.files, (rows, end) => this.#writeResults(batch, rows, end));
    if (batch.job.ending === 'expired') await writing;
    else this.#services.background(writing);
  }

  /**
   * The checks OpenAI makes before a batch starts, a line at a time: each line JSON, its custom id
   * there and unique, `POST` to the batch's endpoint, a body naming the batch's one model; then the
   * key's queue. A batch that passes starts; one that does not fails, naming the lines at fault.
   */
  async #validate(batch: OpenAiBatch, input: StoredFile): Promise<void> {
    const { job } = batch;
    const errors: BatchError[] = [];
    const seen = new Set<string>();
    let line = 0;
    let inputTokens = 0;
    const refuse = (code: string, message: string, param: string | null = null, at: number | null = line) => {
      if (errors.length < MAX_ERRORS) errors.push({ code, line: at, message, param });
    };
    for await (const text of this.#services.files.lines(input)) {
      line++;
      const row = parseLine(text);
      if (row === undefined) {
        refuse('invalid_json_line', 'This line is not parseable as valid JSON.');
        continue;
      }
      const { custom_id: customId, method, url, body } = row;
      if (typeof customId !== 'string' || customId === '') {
        refuse('missing_required_parameter', "Missing required parameter: 'custom_id'.", 'custom_id');
      } else if (seen.has(customId)) {
        refuse(
          'duplicate_custom_id',
          'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.',
          'custom_id',
        );
      } else {
        seen.add(customId);
      }
      if (method !== 'POST') refuse('invalid_method', "The provided method for this request is not supported: only 'POST' is.", 'method');
      if (url !== batch.endpoint) refuse('url_mismatch', 'The provided URL for this request does not match the batch endpoint.', 'url');
      if (!isRecord(body)) {
        refuse('missing_required_parameter', "Missing required parameter: 'body'.", 'body');
        continue;
      }
      if (typeof body.model !== 'string' || body.model === '') {
        refuse('missing_required_parameter', "Missing required parameter: 'model'.", 'body.model');
      } else if (batch.model === undefined) {
        batch.model = body.model;
      } else if (body.model !== batch.model) {
        refuse(
          'model_mismatch',
          'The provided model for this request does not match the model of the other requests in the batch.',
          'body.model',
        );
      }
      inputTokens += this.#services.inputTokens(batch.api, body);
    }
    if (line === 0) refuse('empty_file', 'The batch input file is empty.', null, null);
    if (line > MAX_ROWS) {
      refuse('too_many_tasks', `The batch input file has ${line} requests: the most a batch takes is ${MAX_ROWS}.`, null, null);
    }
    if (errors.length === 0 && this.#queueRefuses(job.key, inputTokens)) {
      const limit = this.#services.queueTokens!.toLocaleString('en-US');
      refuse(
        'token_limit_exceeded',
        `Enqueued token limit reached for ${batch.model} in organization org-serve. Limit: ${limit} enqueued tokens. Please try submitting a smaller batch, or retry later.`,
        null,
        null,
      );
    }
    if (errors.length > 0) {
      batch.errors = errors;
      job.fail();
      return;
    }
    job.inputTokens = inputTokens;
    job.start(line, this.#rows(input), (body) => this.#services.answerRow(batch.api, body), this.#services.files, 'answers');
  }

  /** Whether `inputTokens` more would pass the key's queue limit. */
  #queueRefuses(key: string, inputTokens: number): boolean {
    const limit = this.#services.queueTokens;
    if (limit === undefined) return false;
    let enqueued = 0;
    for (const { job } of this.#batches.values()) if (job.key === key && job.enqueued) enqueued += job.inputTokens;
    return enqueued + inputTokens > limit;
  }

  /** The input file's rows, read again a line at a time. */
  async *#rows(input: StoredFile): AsyncGenerator<BatchRow> {
    for await (const text of this.#services.files.lines(input)) {
      const row = parseLine(text)!;
      yield { customId: row.custom_id as string, body: row.body };
    }
  }

  /** The output file (rows answered 2xx) and the error file (the others, and rows not run), each only when it has a row. */
  async #writeResults(batch: OpenAiBatch, rows: AsyncIterable<EndedRow>, end: BatchEnd): Promise<void> {
    const { files } = this.#services;
    const { key, id: name } = batch.job;
    const output = files.open(key, { filename: `${name}_output.jsonl`, purpose: 'batch_output' });
    const failed = files.open(key, { filename: `${name}_error.jsonl`, purpose: 'batch_output' });
    const notRun =
      end === 'expired'
        ? { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' }
        : { code: 'batch_cancelled', message: 'This request was not executed because the batch was cancelled.' };
    for await (const { customId, answer } of rows) {
      const id = `batch_req_${randomUUID().replaceAll('-', '')}`;
      if (answer === undefined) {
        await failed.write(`${JSON.stringify({ id, custom_id: customId, response: null, error: notRun })}\n`);
        continue;
      }
      const ok = answer.statusCode >= 200 && answer.statusCode < 300;
      const response = { status_code: answer.statusCode, request_id: answer.requestId, body: answer.body };
      await (ok ? output : failed).write(`${JSON.stringify({ id, custom_id: customId, response, error: null })}\n`);
      if (ok) addUsage(batch.usage, answer.body);
    }
    batch.outputFileId = (await output.close())?.id;
    batch.errorFileId = (await failed.close())?.id;
  }

  #describe(batch: OpenAiBatch): unknown {
    const { job } = batch;
    const { createdMs, createdSeconds } = job;
    const seconds = (ms: number | undefined) => (ms === undefined ? null : createdSeconds + Math.floor((ms - createdMs) / 1000));
    const times = job.times;
    const status = statusOf(batch);
    const { rows, errored } = job.finished();
    const ended = job.end !== undefined;
    return {
      id: job.id,
      object: 'batch',
      endpoint: batch.endpoint,
      model: batch.model ?? null,
      errors: batch.errors.length === 0 ? null : { object: 'list', data: batch.errors },
      input_file_id: batch.inputFileId,
      completion_window: '24h',
      status,
      output_file_id: batch.outputFileId ?? null,
      error_file_id: batch.errorFileId ?? null,
      created_at: createdSeconds,
      in_progress_at: seconds(times.startMs),
      expires_at: seconds(job.expiresAtMs),
      finalizing_at: job.ending === 'completed' ? seconds(times.finalizingMs) : null,
      completed_at: job.end === 'completed' ? seconds(times.endedMs) : null,
      failed_at: seconds(times.failedMs),
      expired_at: job.end === 'expired' ? seconds(times.endedMs) : null,
      cancelling_at: seconds(times.cancelMs),
      cancelled_at: job.end === 'cancelled' ? seconds(times.endedMs) : null,
      request_counts: { total: job.total, completed: rows - errored, failed: errored },
      usage: {
        input_tokens: ended ? batch.usage.input : 0,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: ended ? batch.usage.output : 0,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: ended ? batch.usage.input + batch.usage.output : 0,
      },
      metadata: batch.metadata,
    };
  }
}

/** A batch's status in OpenAI's words. */
function statusOf(batch: OpenAiBatch): string {
  const phase: BatchPhase = batch.job.phase;
  if (phase === 'ended') return batch.job.end!;
  if (phase === 'failed') return batch.job.times.cancelMs === undefined ? 'failed' : 'cancelled';
  return phase;
}

function fileObject(file: StoredFile): unknown {
  return {
    id: file.id,
    object: 'file',
    bytes: file.bytes,
    created_at: file.createdSeconds,
    filename: file.filename,
    purpose: file.purpose,
    status: 'processed',
    expires_at: null,
    status_details: null,
  };
}

/** A line of the input file as a JSON object; undefined for one that is not. */
function parseLine(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Adds a row's usage, in either endpoint's words, to the batch's. */
function addUsage(usage: { input: number; output: number }, body: unknown): void {
  if (!isRecord(body) || !isRecord(body.usage)) return;
  const { prompt_tokens, completion_tokens, input_tokens, output_tokens } = body.usage;
  usage.input += Number(prompt_tokens ?? input_tokens ?? 0);
  usage.output += Number(completion_tokens ?? output_tokens ?? 0);
}

function checkMetadata(metadata: unknown): void {
  if (metadata === undefined || metadata === null) return;
  if (!isRecord(metadata)) throw invalid(`Invalid type for 'metadata': expected an object, but got ${jsonType(metadata)}.`, 'metadata');
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA_PAIRS) throw invalid(`Invalid 'metadata': at most ${MAX_METADATA_PAIRS} pairs.`, 'metadata');
  for (const [name, value] of entries) {
    if (name.length > MAX_METADATA_KEY || typeof value !== 'string' || value.length > MAX_METADATA_VALUE) {
      throw invalid(
        `Invalid 'metadata.${name}': keys are strings of at most ${MAX_METADATA_KEY} characters, values of at most ${MAX_METADATA_VALUE}.`,
        'metadata',
      );
    }
  }
}

function invalid(message: string, param?: string): Refusal {
  return new Refusal({ kind: 'invalid-request', message, param });
}

function notFound(message: string, param: string): Refusal {
  return new Refusal({ kind: 'not-found', message, param });
}

function missingOrWrong(field: string, value: unknown, what: string): Refusal {
  if (value === undefined)
    return new Refusal({
      kind: 'invalid-request',
      message: `Missing required parameter: '${field}'.`,
      param: field,
      code: 'missing_required_parameter',
    });
  return invalid(`Invalid type for '${field}': expected ${what}, but got ${jsonType(value)}.`, field);
}
