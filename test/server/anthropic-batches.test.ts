// Anthropic's Message Batches on `serve`, through the official SDK (@anthropic-ai/sdk 1.14), on a
// ManualClock: in_progress until every row is done (the counts all `processing` till then), ended with
// results; the refusals at creation, cancel, delete, expiry and the queue's 429.
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { decodeAnthropic } from '../../src/vendors/anthropic/decode.ts';
import { encodeAnthropic } from '../../src/vendors/anthropic/encode.ts';
import { ARTICLES, batchServers, requestsOf } from './batch-fixtures.ts';
import { get } from './http.ts';

const client = (url: string, apiKey: string) => new Anthropic({ apiKey, baseURL: url, maxRetries: 0 });
const start = batchServers((url) => client(url, 'sk-ant-batch'));

/** Both built-in tasks for each of the first two articles. */
const requests = () => requestsOf(ARTICLES.slice(0, 2));

const batchRequests = (byId: Map<string, LlmRequest>) =>
  [...byId].map(([custom_id, request]) => ({ custom_id, params: encodeAnthropic(request, 'claude-haiku-4-5', 300) as never }));

async function results(anthropic: Anthropic, id: string): Promise<Anthropic.Messages.MessageBatchIndividualResponse[]> {
  const rows: Anthropic.Messages.MessageBatchIndividualResponse[] = [];
  for await (const row of await anthropic.messages.batches.results(id)) rows.push(row);
  return rows;
}

describe('POST /v1/messages/batches', () => {
  it('in_progress with every row processing until the end, then ended with results that fit their schemas', async () => {
    const { client: anthropic, clock, url } = await start();
    const byId = requests();
    const created = await anthropic.messages.batches.create({ requests: batchRequests(byId) });
    const untouched = { processing: 4, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    expect(created).toMatchObject({
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: untouched,
      results_url: null,
    });
    expect(created.id).toMatch(/^msgbatch_[A-Za-z0-9]{24}$/);
    await clock.advance(9999);
    // Three rows are done by now, but Anthropic counts none of them until the batch ends.
    expect(await anthropic.messages.batches.retrieve(created.id)).toMatchObject({
      processing_status: 'in_progress',
      request_counts: untouched,
    });
    await expect(anthropic.messages.batches.results(created.id)).rejects.toThrow(/No batch `results_url`/);
    await clock.advance(1);
    const ended = await anthropic.messages.batches.retrieve(created.id);
    expect(ended).toMatchObject({
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 4, errored: 0, canceled: 0, expired: 0 },
      results_url: `${url}/v1/messages/batches/${created.id}/results`,
    });
    expect(Date.parse(ended.ended_at!) - Date.parse(ended.created_at)).toBe(10_000);
    expect(Date.parse(ended.expires_at) - Date.parse(ended.created_at)).toBe(86_400_000);

    const rows = await results(anthropic, created.id);
    expect(rows.map((row) => row.custom_id).sort()).toEqual([...byId.keys()].sort());
    for (const row of rows) {
      expect(row.result.type).toBe('succeeded');
      const message = (row.result as Anthropic.Messages.MessageBatchSucceededResult).message;
      expect(message.usage.input_tokens).toBeGreaterThan(0);
      const request = byId.get(row.custom_id)!;
      const decoded = await decodeAnthropic(request, message, { headers: {} }, 300);
      expect(Object.keys(decoded.output).sort()).toEqual(Object.keys(request.schema.properties as object).sort());
    }
  });

  it('refuses with 400 in Anthropic’s shape: no requests, a bad or repeated custom_id, stream: true, no max_tokens', async () => {
    const { client: anthropic } = await start();
    const [good] = batchRequests(requests());
    const { max_tokens: _, ...withoutMaxTokens } = good!.params as Record<string, unknown>;
    for (const [requestList, message] of [
      [[], /at least 1 item/],
      [[{ ...good, custom_id: 'has space' }], /requests\.0\.custom_id: String should match pattern/],
      [[{ ...good, custom_id: 'x'.repeat(65) }], /requests\.0\.custom_id: String should match pattern/],
      [[good, good], /requests\.1\.custom_id: Duplicate custom_id 'a1-summarize'/],
      [[{ ...good, params: { ...(good!.params as object), stream: true } }], /requests\.0\.params\.stream: Streaming is not supported/],
      [[{ ...good, params: withoutMaxTokens }], /requests\.0\.params\.max_tokens: Field required/],
    ] as const) {
      const refusal = await anthropic.messages.batches.create({ requests: requestList as never }).catch((error: unknown) => error);
      expect(refusal, String(message)).toBeInstanceOf(Anthropic.BadRequestError);
      expect((refusal as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(message) },
      });
    }
    expect((await anthropic.messages.batches.list()).data).toEqual([]);
  });

  it('a request the Messages API refuses, or a failure of the profile, is an errored row', async () => {
    const { client: anthropic, clock } = await start({ simulation: { profile: 'stress', seed: 3 } });
    const rows = batchRequests(requests());
    rows.push({ custom_id: 'bad-temperature', params: { ...(rows[0]!.params as object), temperature: 5 } as never });
    const created = await anthropic.messages.batches.create({ requests: rows });
    await clock.advance(10_000);
    const ended = await anthropic.messages.batches.retrieve(created.id);
    expect(ended.request_counts.errored).toBeGreaterThan(1);
    expect(ended.request_counts.succeeded + ended.request_counts.errored).toBe(5);
    const byId = new Map((await results(anthropic, created.id)).map((row) => [row.custom_id, row.result]));
    expect(byId.get('bad-temperature')).toMatchObject({
      type: 'errored',
      error: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    const failures = [...byId.values()].filter((result) => result.type === 'errored' && result.error.error.type === 'overloaded_error');
    expect(failures.length).toBe(ended.request_counts.errored - 1);
  });
});

describe('cancel, delete, expiry, the queue, list', () => {
  it('cancel: canceling, then ended with the rows not finished canceled; delete only once ended', async () => {
    const { client: anthropic, clock } = await start();
    const created = await anthropic.messages.batches.create({ requests: batchRequests(requests()) });
    await clock.advance(5000);
    await expect(anthropic.messages.batches.delete(created.id)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    const canceling = await anthropic.messages.batches.cancel(created.id);
    expect(canceling).toMatchObject({ processing_status: 'canceling', cancel_initiated_at: expect.any(String) });
    const ended = await anthropic.messages.batches.retrieve(created.id);
    expect(ended).toMatchObject({
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 2, canceled: 2, errored: 0, expired: 0 },
    });
    expect((await results(anthropic, created.id)).map((row) => row.result.type)).toEqual([
      'succeeded',
      'succeeded',
      'canceled',
      'canceled',
    ]);
    await expect(anthropic.messages.batches.cancel(created.id)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(await anthropic.messages.batches.delete(created.id)).toEqual({ id: created.id, type: 'message_batch_deleted' });
    await expect(anthropic.messages.batches.retrieve(created.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('expiry: the rows not finished within --batch-window are expired', async () => {
    const { client: anthropic, clock } = await start({ batchWindowMs: 2500 });
    const created = await anthropic.messages.batches.create({ requests: batchRequests(requests()) });
    await clock.advance(2500);
    expect(await anthropic.messages.batches.retrieve(created.id)).toMatchObject({
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 1, expired: 3 },
    });
    expect((await results(anthropic, created.id)).map((row) => row.result.type)).toEqual(['succeeded', 'expired', 'expired', 'expired']);
  });

  it('--batch-queue-tokens: a batch that would pass the key’s enqueued input tokens is refused with 429', async () => {
    // One batch of the four rows enqueues 168 input tokens: room for one, not two.
    const { client: anthropic, clock, url } = await start({ batchQueueTokens: 300 });
    await anthropic.messages.batches.create({ requests: batchRequests(requests()) });
    const refusal = await anthropic.messages.batches.create({ requests: batchRequests(requests()) }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(Anthropic.RateLimitError);
    expect((refusal as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({
      error: { type: 'rate_limit_error', message: expect.stringMatching(/queue limit of 300 input tokens/) },
    });
    await client(url, 'sk-ant-other').messages.batches.create({ requests: batchRequests(requests()) });
    await clock.advance(10_000);
    await anthropic.messages.batches.list();
    await anthropic.messages.batches.create({ requests: batchRequests(requests()) });
  });

  it('lists a key’s batches newest first, a page at a time forward (after_id) and back (before_id); another key sees none', async () => {
    const { client: anthropic, url } = await start();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await anthropic.messages.batches.create({ requests: batchRequests(requests()) })).id);
    const newestFirst = [...ids].reverse();
    const first = await anthropic.messages.batches.list({ limit: 2 });
    expect(first).toMatchObject({ has_more: true, first_id: newestFirst[0], last_id: newestFirst[1] });
    const all: string[] = [];
    for await (const batch of anthropic.messages.batches.list({ limit: 2 })) all.push(batch.id);
    expect(all).toEqual(newestFirst);
    const back = await anthropic.messages.batches.list({ before_id: newestFirst[3], limit: 2 });
    expect(back.data.map((batch) => batch.id)).toEqual([newestFirst[1], newestFirst[2]]);
    expect(back.has_more).toBe(true);
    expect((await client(url, 'sk-ant-other').messages.batches.list()).data).toEqual([]);
    await expect(client(url, 'sk-ant-other').messages.batches.retrieve(ids[0]!)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('/metrics counts the batches and their rows by status', async () => {
    const { client: anthropic, clock, url } = await start();
    const created = await anthropic.messages.batches.create({ requests: batchRequests(requests()) });
    await clock.advance(5000);
    let { text } = await get(`${url}/metrics`);
    expect(text).toContain('serve_batches{api="anthropic",status="in_progress"} 1');
    expect(text).toContain('serve_batch_rows{api="anthropic",status="succeeded"} 2');
    expect(text).toContain('serve_batch_rows{api="anthropic",status="processing"} 2');
    await anthropic.messages.batches.cancel(created.id);
    await anthropic.messages.batches.retrieve(created.id);
    ({ text } = await get(`${url}/metrics`));
    expect(text).toContain('serve_batches{api="anthropic",status="ended"} 1');
    expect(text).toContain('serve_batch_rows{api="anthropic",status="canceled"} 2');
  });
});
