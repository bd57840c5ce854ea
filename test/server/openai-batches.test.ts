// OpenAI's Files and Batch APIs on `serve`, through the official SDK (openai 6.49), on a ManualClock:
// a batch's timeline (validating, rows finishing spread over --batch-duration, finalizing, completed),
// the validation refusals, cancel, expiry and the queue's token limit.
import OpenAI, { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { decodeOpenAi } from '../../src/vendors/openai/decode.ts';
import { encodeOpenAi } from '../../src/vendors/openai/encode.ts';
import { batchServers, requestsOf } from './batch-fixtures.ts';
import { get } from './http.ts';

const client = (url: string, apiKey: string) => new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });
const start = batchServers((url) => client(url, 'sk-batch'));

const requests = () => requestsOf();

const jsonl = (rows: readonly unknown[]) => rows.map((row) => (typeof row === 'string' ? row : JSON.stringify(row))).join('\n');
const chatRows = (byId: Map<string, LlmRequest>, url = '/v1/chat/completions') =>
  [...byId].map(([custom_id, request]) => ({ custom_id, method: 'POST', url, body: encodeOpenAi(request, 'gpt-4o-mini', 300) }));

async function upload(openai: OpenAI, rows: readonly unknown[]): Promise<string> {
  const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl(rows)), 'input.jsonl'), purpose: 'batch' });
  return file.id;
}

/** Polls (in real time: the server's own work, not the clock) until `done` holds of the batch. */
async function until(openai: OpenAI, id: string, done: (batch: OpenAI.Batch) => boolean): Promise<OpenAI.Batch> {
  for (let attempt = 0; attempt < 2000; attempt++) {
    const batch = await openai.batches.retrieve(id);
    if (done(batch)) return batch;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`batch ${id} never got there`);
}

async function lines(openai: OpenAI, fileId: string): Promise<any[]> {
  const text = await (await openai.files.content(fileId)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

describe('POST /v1/batches: a batch of the built-in tasks', () => {
  it('validating → in_progress, rows finishing spread over the duration, finalizing → completed; results fit their schemas', async () => {
    const { client: openai, clock } = await start();
    const byId = requests();
    const inputId = await upload(openai, chatRows(byId));
    const created = await openai.batches.create({
      input_file_id: inputId,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { run: 'nightly' },
    });
    expect(created).toMatchObject({ object: 'batch', status: 'validating', input_file_id: inputId, metadata: { run: 'nightly' } });

    const started = await until(openai, created.id, (batch) => batch.status !== 'validating');
    expect(started).toMatchObject({ status: 'in_progress', request_counts: { total: 6, completed: 0, failed: 0 }, model: 'gpt-4o-mini' });
    // Six rows over 10 s: one due every 1 666.7 ms.
    await clock.advance(5000);
    expect((await openai.batches.retrieve(created.id)).request_counts).toEqual({ total: 6, completed: 3, failed: 0 });
    await clock.advance(4999);
    expect(await openai.batches.retrieve(created.id)).toMatchObject({ status: 'in_progress', request_counts: { completed: 5 } });
    await clock.advance(1);
    expect((await openai.batches.retrieve(created.id)).status).toBe('finalizing');
    const done = await until(openai, created.id, (batch) => batch.status === 'completed');
    expect(done).toMatchObject({ request_counts: { total: 6, completed: 6, failed: 0 }, error_file_id: null });
    expect(done.usage!.input_tokens).toBeGreaterThan(0);
    expect(done.usage!.total_tokens).toBe(done.usage!.input_tokens + done.usage!.output_tokens);

    const output = await lines(openai, done.output_file_id!);
    expect(output.map((line) => line.custom_id).sort()).toEqual([...byId.keys()].sort());
    for (const line of output) {
      expect(line).toMatchObject({ id: expect.stringMatching(/^batch_req_/), error: null, response: { status_code: 200 } });
      expect(line.response.body.usage.prompt_tokens).toBeGreaterThan(0);
      // Decoded as a live answer is: the schema checked again.
      const request = byId.get(line.custom_id)!;
      const decoded = await decodeOpenAi(request, line.response.body, { headers: {} }, 300);
      expect(Object.keys(decoded.output).sort()).toEqual(Object.keys(request.schema.properties as object).sort());
    }
    expect(await openai.files.retrieve(done.output_file_id!)).toMatchObject({ object: 'file', purpose: 'batch_output' });
  });

  it('runs a batch on /v1/responses, and lists a key’s batches newest first, a page at a time (after, limit)', async () => {
    const { client: openai, url } = await start({ batchDurationMs: 0 });
    const byId = requests();
    const rows = [...byId].map(([custom_id, request]) => ({
      custom_id,
      method: 'POST',
      url: '/v1/responses',
      body: {
        model: 'gpt-4o-mini',
        input: request.prompt,
        text: { format: { type: 'json_schema', name: request.task, schema: request.schema, strict: false } },
      },
    }));
    const inputId = await upload(openai, rows);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await openai.batches.create({ input_file_id: inputId, endpoint: '/v1/responses', completion_window: '24h' })).id);
    }
    const done = await until(openai, ids[0]!, (batch) => batch.status === 'completed');
    const [first] = await lines(openai, done.output_file_id!);
    expect(first.response.body).toMatchObject({ object: 'response', status: 'completed' });
    expect(JSON.parse(first.response.body.output[0].content[0].text)).toBeTypeOf('object');

    const page = await openai.batches.list({ limit: 2 });
    expect(page.data.map((batch) => batch.id)).toEqual([ids[2], ids[1]]);
    expect(page.has_more).toBe(true);
    const all: string[] = [];
    for await (const batch of openai.batches.list({ limit: 2 })) all.push(batch.id);
    expect(all).toEqual([...ids].reverse());
    // Another key sees none of them.
    expect((await client(url, 'sk-other').batches.list()).data).toEqual([]);
    await expect(client(url, 'sk-other').batches.retrieve(ids[0]!)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client(url, 'sk-other').files.content(done.output_file_id!)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('the failure profile gives failed rows: a 503 in the error file, counted as failed', async () => {
    const { client: openai, clock } = await start({ simulation: { profile: 'stress', seed: 7 } });
    const byId = requests();
    const created = await openai.batches.create({
      input_file_id: await upload(openai, chatRows(byId)),
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(openai, created.id, (batch) => batch.status === 'in_progress');
    await clock.advance(10_000);
    const done = await until(openai, created.id, (batch) => batch.status === 'completed');
    expect(done.request_counts!.failed).toBeGreaterThan(0);
    expect(done.request_counts!.completed + done.request_counts!.failed).toBe(6);
    const failed = await lines(openai, done.error_file_id!);
    expect(failed).toHaveLength(done.request_counts!.failed);
    for (const line of failed)
      expect(line).toMatchObject({ error: null, response: { status_code: 503, body: { error: { type: 'server_error' } } } });
  });
});

describe('POST /v1/batches: validated as OpenAI validates, before it starts', () => {
  it('fails the batch, naming each line: not JSON, a duplicate custom_id, another url, a body without a model', async () => {
    const { client: openai } = await start();
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] };
    const inputId = await upload(openai, [
      '{"custom_id": "r1", "method": "POST"',
      { custom_id: 'r2', method: 'POST', url: '/v1/chat/completions', body },
      { custom_id: 'r2', method: 'POST', url: '/v1/chat/completions', body },
      { custom_id: 'r4', method: 'POST', url: '/v1/embeddings', body },
      { custom_id: 'r5', method: 'POST', url: '/v1/chat/completions', body: { messages: body.messages } },
    ]);
    const created = await openai.batches.create({ input_file_id: inputId, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const failed = await until(openai, created.id, (batch) => batch.status !== 'validating');
    expect(failed.status).toBe('failed');
    expect(failed.failed_at).toBeTypeOf('number');
    expect(failed.errors!.data!.map(({ code, line }) => ({ code, line }))).toEqual([
      { code: 'invalid_json_line', line: 1 },
      { code: 'duplicate_custom_id', line: 3 },
      { code: 'url_mismatch', line: 4 },
      { code: 'missing_required_parameter', line: 5 },
    ]);
    expect(failed.errors!.data![3]).toMatchObject({ param: 'body.model' });
  });

  it('refuses at once what OpenAI refuses at once: no such file, another endpoint, another window, a file of another key', async () => {
    const { client: openai, url } = await start();
    const inputId = await upload(openai, chatRows(requests()));
    const create = (params: object, who = openai) =>
      who.batches.create({ completion_window: '24h', endpoint: '/v1/chat/completions', input_file_id: inputId, ...params } as never);
    await expect(create({ input_file_id: 'file-none' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(create({ endpoint: '/v1/embeddings' })).rejects.toThrow(
      /serve runs batches on '\/v1\/chat\/completions' and '\/v1\/responses'/,
    );
    await expect(create({ completion_window: '1h' })).rejects.toThrow(/completion_window/);
    await expect(create({}, client(url, 'sk-other'))).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.files.create({ file: await toFile(Buffer.from('x'), 'a.txt'), purpose: 'assistants' })).rejects.toThrow(
      /purpose 'batch'/,
    );
  });
});

describe('POST /v1/batches/{id}/cancel, expiry, the queue', () => {
  it('cancel: cancelling, then cancelled; the rows finished are in the output file, the others batch_cancelled', async () => {
    const { client: openai, clock } = await start();
    const created = await openai.batches.create({
      input_file_id: await upload(openai, chatRows(requests())),
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(openai, created.id, (batch) => batch.status === 'in_progress');
    await clock.advance(3400);
    expect((await openai.batches.cancel(created.id)).status).toBe('cancelling');
    const cancelled = await until(openai, created.id, (batch) => batch.status === 'cancelled');
    expect(cancelled).toMatchObject({ request_counts: { total: 6, completed: 2, failed: 0 } });
    expect(cancelled.cancelling_at).toBeTypeOf('number');
    expect(await lines(openai, cancelled.output_file_id!)).toHaveLength(2);
    const notRun = await lines(openai, cancelled.error_file_id!);
    expect(notRun.map((line) => line.error.code)).toEqual(Array(4).fill('batch_cancelled'));
    await expect(openai.batches.cancel(created.id)).rejects.toThrow(/Cannot cancel a batch with status 'cancelled'/);
  });

  it('expiry: the rows not finished within --batch-window are batch_expired', async () => {
    const { client: openai, clock } = await start({ batchWindowMs: 5000 });
    const created = await openai.batches.create({
      input_file_id: await upload(openai, chatRows(requests())),
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(openai, created.id, (batch) => batch.status === 'in_progress');
    await clock.advance(4999);
    expect((await openai.batches.retrieve(created.id)).status).toBe('in_progress');
    await clock.advance(1);
    const expired = await openai.batches.retrieve(created.id);
    expect(expired).toMatchObject({ status: 'expired', request_counts: { total: 6, completed: 3, failed: 0 } });
    expect(expired.expired_at).toBeTypeOf('number');
    expect((await lines(openai, expired.error_file_id!)).map((line) => line.error.code)).toEqual(Array(3).fill('batch_expired'));
  });

  it('--batch-queue-tokens: a batch that would pass the key’s enqueued tokens fails with token_limit_exceeded; once the first ends, it fits', async () => {
    // One batch of the six rows enqueues 248 input tokens: room for one, not two.
    const { client: openai, clock, url } = await start({ batchQueueTokens: 400 });
    const inputId = await upload(openai, chatRows(requests()));
    const params = { input_file_id: inputId, endpoint: '/v1/chat/completions', completion_window: '24h' } as const;
    const first = await openai.batches.create(params);
    await until(openai, first.id, (batch) => batch.status === 'in_progress');
    const second = await until(openai, (await openai.batches.create(params)).id, (batch) => batch.status !== 'validating');
    expect(second).toMatchObject({ status: 'failed', errors: { data: [{ code: 'token_limit_exceeded', line: null }] } });
    expect(second.errors!.data![0]!.message).toMatch(/^Enqueued token limit reached for gpt-4o-mini .* Limit: 400 enqueued tokens/);
    // Another key has a queue of its own.
    const other = client(url, 'sk-other');
    const theirs = await other.batches.create({ ...params, input_file_id: await upload(other, chatRows(requests())) });
    expect((await until(other, theirs.id, (batch) => batch.status !== 'validating')).status).toBe('in_progress');
    await clock.advance(10_000);
    await until(openai, first.id, (batch) => batch.status === 'completed');
    const third = await openai.batches.create(params);
    expect((await until(openai, third.id, (batch) => batch.status !== 'validating')).status).toBe('in_progress');
  });
});

describe('/v1/files and /metrics', () => {
  it('keeps an upload as a file: retrieve, content as uploaded, delete', async () => {
    const { client: openai } = await start();
    const text = jsonl(chatRows(requests()));
    const file = await openai.files.create({ file: await toFile(Buffer.from(text), 'in.jsonl'), purpose: 'batch' });
    expect(file).toMatchObject({
      object: 'file',
      purpose: 'batch',
      filename: 'in.jsonl',
      bytes: Buffer.byteLength(text),
      status: 'processed',
    });
    expect(await openai.files.retrieve(file.id)).toEqual(file);
    expect(await (await openai.files.content(file.id)).text()).toBe(text);
    expect(await openai.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    await expect(openai.files.retrieve(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('counts batches and rows by status', async () => {
    const { client: openai, clock, url } = await start();
    const created = await openai.batches.create({
      input_file_id: await upload(openai, chatRows(requests())),
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(openai, created.id, (batch) => batch.status === 'in_progress');
    await clock.advance(5000);
    const { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_batches{api="openai",status="in_progress"} 1');
    expect(text).toContain('serve_batch_rows{api="openai",status="completed"} 3');
    expect(text).toContain('serve_batch_rows{api="openai",status="in_progress"} 3');
  });
});
