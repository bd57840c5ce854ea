import { randomBytes } from 'node:crypto';
import type { OpenAI } from 'openai';
import { loadOptional } from '../../optional-package.ts';
import type { BatchApi, BatchProgress, BatchRow, RowOutcome, SubmittedBatch } from '../../provider/batch-api.ts';
import type { LlmRequest, LlmResponse, PromptCacheRatios } from '../../provider/provider.ts';
import type { Vendor, VendorBatchApiOptions } from '../vendor.ts';

/** Where {@link OpenAiBatchApi} sends its batches, with which key and model. */
export type OpenAiBatchApiOptions = VendorBatchApiOptions;

/** The endpoint every row of a batch calls: chat completions, as a live call does. */
const ENDPOINT = '/v1/chat/completions';
const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

/** One line of an output or error file. */
interface OutputLine {
  readonly custom_id?: string;
  readonly response?: { readonly status_code?: number; readonly body?: unknown } | null;
  readonly error?: { readonly code?: string; readonly message?: string } | null;
}

/**
 * OpenAI's Batch API through the official `openai` SDK: rows uploaded as a JSONL file
 * (`purpose: "batch"`), a batch on `/v1/chat/completions` with a 24h window, its output and error
 * files read back. Needs the `openai` package.
 */
export class OpenAiBatchApi implements BatchApi {
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
  readonly #options: OpenAiBatchApiOptions;
  /** The vendor whose request bodies the rows carry: its encode, decode, defaults and SDK package. */
  readonly #vendor: Vendor;
  #client: Promise<{ client: OpenAI }> | undefined;

  /**
   * `vendor`: whose requests the rows are (`VENDORS.openai`, or one whose wire is the same) —
   * handed over rather than imported, so that this module, loaded only by a run that batches, shares
   * no module with a plain run (in the command's bundle, each would cut the run's chunks in more).
   */
  constructor(options: OpenAiBatchApiOptions, vendor: Vendor) {
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
    const { client } = await this.#sdk();
    // The multipart form the SDK's files.create sends, made here as one buffer: each row's line
    // encoded once, straight into it, where a File of parts was copied again on its way out.
    const upload = uploadOf(rows);
    // A fetch that may follow a redirect clones its request first, the body teed and each chunk of
    // it copied (undici's `cloneAsUint8Array`): the upload, tens of MB, refuses a redirect instead.
    const file = await client.post<OpenAI.FileObject>('/files', {
      body: upload.body,
      headers: { 'content-type': upload.contentType },
      fetchOptions: { redirect: 'error' },
    });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: ENDPOINT, completion_window: '24h' });
    return { batchId: batch.id, fileId: file.id };
  }

  /** {@inheritDoc BatchApi.poll} */
  async poll(batchId: string): Promise<BatchProgress> {
    const { client } = await this.#sdk();
    const batch = await client.batches.retrieve(batchId);
    const counts = batch.request_counts;
    return {
      status: batch.status,
      ended: ENDED.has(batch.status),
      total: counts?.total ?? 0,
      completed: counts?.completed ?? 0,
      failed: counts?.failed ?? 0,
      // Refused before it started: a queue that is full now has room once earlier batches end.
      queueFull: batch.status === 'failed' && (batch.errors?.data ?? []).some((error) => error.code === 'token_limit_exceeded'),
    };
  }

  /** {@inheritDoc BatchApi.results} */
  async results(batchId: string): Promise<AsyncIterable<RowOutcome>> {
    const { client } = await this.#sdk();
    const batch = await client.batches.retrieve(batchId);
    const fileIds = [batch.output_file_id, batch.error_file_id].filter((id): id is string => typeof id === 'string');
    return outcomesOf(client, fileIds);
  }

  /** {@inheritDoc BatchApi.cancel} */
  async cancel(batchId: string): Promise<void> {
    const { client } = await this.#sdk();
    await client.batches.cancel(batchId);
  }

  #sdk(): Promise<{ client: OpenAI }> {
    this.#client ??= loadOptional(this.#vendor.sdkPackage, 'the OpenAI Batch API', () => import('openai')).then((sdk) => ({
      // The SDK's own retries on: a poll that meets a blip tries again rather than ending the wait.
      client: new sdk.OpenAI({ apiKey: this.#options.apiKey, baseURL: this.#options.baseUrl, logLevel: 'off' }),
    }));
    return this.#client;
  }
}

const LINE_START = '{"custom_id":';
const LINE_HEAD = `,"method":"POST","url":${JSON.stringify(ENDPOINT)},"body":`;
const LINE_END = '}\n';
const FRAMING_BYTES = LINE_START.length + LINE_HEAD.length + LINE_END.length;

/**
 * The rows as the batch's JSONL input, `{custom_id, method, url, body}` a line, in a
 * `multipart/form-data` body (`purpose=batch`, then the file `batch.jsonl`): one buffer of exactly
 * its size, each line's text encoded once.
 */
function uploadOf(rows: readonly BatchRow[]): { readonly body: Buffer; readonly contentType: string } {
  const ids = rows.map((row) => JSON.stringify(row.customId));
  const bodies = rows.map((row) => row.bodyJson ?? JSON.stringify(row.body));
  let bytes = 0;
  for (let index = 0; index < rows.length; index++) {
    bytes += FRAMING_BYTES + Buffer.byteLength(ids[index]!) + Buffer.byteLength(bodies[index]!);
  }
  // A delimiter is the boundary after CR LF, which no line holds (JSON escapes both, lines end in LF alone).
  const boundary = `news-processor-${randomBytes(16).toString('hex')}`;
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="batch.jsonl"\r\n` +
    'Content-Type: application/jsonl\r\n\r\n';
  const tail = `\r\n--${boundary}--\r\n`;
  const headBytes = Buffer.byteLength(head);
  const body = Buffer.allocUnsafe(headBytes + bytes + tail.length);
  let at = body.write(head, 0);
  for (let index = 0; index < rows.length; index++) {
    at += body.write(LINE_START, at, 'latin1');
    at += body.write(ids[index]!, at);
    at += body.write(LINE_HEAD, at, 'latin1');
    at += body.write(bodies[index]!, at);
    at += body.write(LINE_END, at, 'latin1');
  }
  body.write(tail, at, 'latin1');
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The rows' outcomes in the output and error files, read a line at a time as they download: a batch's results are never held whole. */
async function* outcomesOf(client: OpenAI, fileIds: readonly string[]): AsyncGenerator<RowOutcome> {
  for (const fileId of fileIds) {
    const response = await client.files.content(fileId);
    if (response.body === null) continue;
    const decoder = new TextDecoder();
    let rest = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n');
      rest = lines.pop()!;
      for (const line of lines) yield* outcomeOfLine(line);
    }
    yield* outcomeOfLine(rest + decoder.decode());
  }
}

function* outcomeOfLine(line: string): Generator<RowOutcome> {
  if (line.trim() === '') return;
  const outcome = outcomeOf(JSON.parse(line) as OutputLine);
  if (outcome !== undefined) yield outcome;
}

/** A line of an output or error file as a row's outcome: its body when it answered 200, else why not. */
function outcomeOf(line: OutputLine): RowOutcome | undefined {
  const customId = line.custom_id;
  if (typeof customId !== 'string') return undefined;
  const status = line.response?.status_code;
  const body = line.response?.body;
  if (status === 200 && typeof body === 'object' && body !== null) return { customId, body };
  if (line.error !== undefined && line.error !== null) {
    const code = line.error.code ?? 'error';
    return {
      customId,
      error: `${code}: ${line.error.message ?? 'no message'}`,
      expired: code === 'batch_expired' || code === 'batch_cancelled',
    };
  }
  const message = (body as { error?: { message?: string } } | undefined)?.error?.message ?? 'no answer';
  return { customId, error: `HTTP ${status ?? '?'}: ${message}` };
}
