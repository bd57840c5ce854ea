// runBatch over the in-process simulated Batch API, a scripted one, and serve's OpenAI Batch API
// through the official SDK: rounds per dependency level, retries then dead letters, the half price,
// the budget, and a resume that submits nothing already at the provider.
import { afterEach, describe, expect, it } from 'vitest';
import type { BatchApi, BatchRow, RowOutcome } from '../../src/batch/batch-api.ts';
import { customIdOf } from '../../src/batch/custom-id.ts';
import { OpenAiBatchApi } from '../../src/vendors/openai/batch-api.ts';
import { VENDORS } from '../../src/vendors/registry.ts';
import { runBatch, type BatchRunState } from '../../src/batch/run-batch.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { MalformedOutputError } from '../../src/provider/provider.ts';
import { LlmServer } from '../../src/server/index.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import type { Article } from '../../src/sources/article.ts';
import { defineTasks, type TaskSpec } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';

const ARTICLES: Article[] = [
  { id: 'a1', title: 'Rates held', content: 'The central bank held rates steady. Markets rallied on the news.' },
  { id: 'a/2 ü', title: 'Storm damage', content: 'A storm flooded the old town. Repairs will take months, officials warned.' },
  { id: 'a3', title: 'Team wins', content: 'The home team won the final in extra time. Fans celebrated all night.' },
];
const PRICE = { inputPerMTok: 1, outputPerMTok: 4 };

const simulated = () =>
  new SimulatedBatchApi({
    provider: new SimulatedProvider({
      minLatencyMs: 0,
      maxLatencyMs: 1,
      profile: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0 },
    }),
    durationMs: 20,
  });

const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('runBatch', () => {
  it('runs a round per dependency level and writes each article once, with both outputs, at half the price', async () => {
    const results: ArticleResult[] = [];
    const summary = await runBatch({ source: ARTICLES, api: simulated(), pollMs: 5, price: PRICE, onResult: (r) => void results.push(r) });
    expect(summary).toMatchObject({
      succeeded: 3,
      failed: 0,
      left: 0,
      batches: 2,
      rows: 6,
      rowsFailed: 0,
      rowsExpired: 0,
      interrupted: false,
    });
    expect(results.map((r) => r.id).sort()).toEqual(['a/2 ü', 'a1', 'a3']);
    for (const result of results) {
      expect(result.status).toBe('succeeded');
      expect(Object.keys(result.outputs).sort()).toEqual(['sentiment', 'summarize']);
      expect(result.attempts).toBe(2);
    }
    const full = await runBatch({ source: ARTICLES, api: simulated(), pollMs: 5, price: PRICE, batchDiscount: 1 });
    // The simulator answers a request the same each time: the discount alone halves the cost.
    expect(summary.costUsd! * 2).toBeCloseTo(full.costUsd!, 9);
    expect(summary.costUsd).toBeGreaterThan(0);
  });

  it("submits an article's next task once its dependency is answered, while other batches still run", async () => {
    const inner = simulated();
    const polls = new Map<string, number>();
    const log: string[] = [];
    const api: BatchApi = {
      name: inner.name,
      encode: (request, max) => inner.encode(request, max),
      decode: (request, body, max) => inner.decode(request, body, max),
      submit: async (rows) => {
        const submitted = await inner.submit(rows);
        log.push(`${submitted.batchId}: ${rows.map((row) => `${row.request.articleId}/${row.request.task}`).join(' ')}`);
        return submitted;
      },
      // The second batch takes five polls more than the others.
      poll: async (batchId) => {
        const seen = (polls.get(batchId) ?? 0) + 1;
        polls.set(batchId, seen);
        const progress = await inner.poll(batchId);
        if (batchId === 'batch_sim_2' && seen < 6) return { ...progress, ended: false, status: 'in_progress' };
        if (progress.ended && batchId === 'batch_sim_2') log.push('batch_sim_2 ended');
        return progress;
      },
      results: (batchId) => inner.results(batchId),
      cancel: (batchId) => inner.cancel(batchId),
    };
    const summary = await runBatch({ source: ARTICLES.slice(0, 2), api, pollMs: 30, batchSize: 1 });
    expect(summary).toMatchObject({ succeeded: 2, batches: 4 });
    expect(log).toEqual([
      'batch_sim_1: a1/summarize',
      'batch_sim_2: a/2 ü/summarize',
      'batch_sim_3: a1/sentiment',
      'batch_sim_2 ended',
      'batch_sim_4: a/2 ü/sentiment',
    ]);
  });

  it('sends a row that failed again in a later batch, then fails its article with the reason', async () => {
    const submitted: string[][] = [];
    const api: BatchApi = {
      ...simulated(),
      name: 'flaky',
      encode: (request) => ({ request }),
      decode: async () => ({ output: {} }),
      submit: async (rows: readonly BatchRow[]) => {
        submitted.push(rows.map((row) => row.customId));
        return { batchId: `b${submitted.length}` };
      },
      poll: async () => ({ status: 'expired', ended: true, total: 1, completed: 0, failed: 1 }),
      results: async (): Promise<RowOutcome[]> => [],
      cancel: async () => {},
    };
    const results: ArticleResult[] = [];
    const summary = await runBatch({ source: ARTICLES.slice(0, 1), api, pollMs: 1, maxAttempts: 3, onResult: (r) => void results.push(r) });
    expect(submitted).toEqual([[customIdOf('a1', 'summarize')], [customIdOf('a1', 'summarize')], [customIdOf('a1', 'summarize')]]);
    expect(summary).toMatchObject({ failed: 1, batches: 3, rowsFailed: 3, rowsExpired: 3, rowsRetried: 2 });
    expect(results[0]!.error).toEqual({
      type: 'BatchExpiredError',
      task: 'summarize',
      message: 'no result for the row (the batch ended expired) (after 3 attempts)',
    });
  });

  it('counts an answer that does not fit its schema as a failed row, billed at the batch price', async () => {
    const api: BatchApi = {
      ...simulated(),
      name: 'off-schema',
      encode: (request) => ({ request }),
      decode: async () => {
        throw new MalformedOutputError('the answer does not fit the schema', { usage: { inputTokens: 1000, outputTokens: 100 } });
      },
      submit: async (rows: readonly BatchRow[]) => ({ batchId: rows[0]!.customId }),
      poll: async () => ({ status: 'completed', ended: true, total: 1, completed: 1, failed: 0 }),
      results: async (batchId): Promise<RowOutcome[]> => [{ customId: batchId, body: {} }],
      cancel: async () => {},
    };
    const results: ArticleResult[] = [];
    await runBatch({ source: ARTICLES.slice(0, 1), api, pollMs: 1, maxAttempts: 2, price: PRICE, onResult: (r) => void results.push(r) });
    expect(results[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      error: { type: 'MalformedOutputError', task: 'summarize', message: 'the answer does not fit the schema (after 2 attempts)' },
    });
    // Two answers of 1000 + 100 tokens at 1 and 4 USD per million, half price: 2 × 0.0007.
    expect(results[0]!.costUsd).toBeCloseTo(0.0014, 9);
  });

  it('makes custom ids both vendors take, one per article and task', () => {
    const ids = ['a1', 'a/2 ü', 'x'.repeat(200)].flatMap((id) => ['summarize', 'sentiment'].map((task) => customIdOf(id, task)));
    for (const id of ids) expect(id).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('submits only the rows whose worst case fits the budget', async () => {
    const summary = await runBatch({ source: ARTICLES, api: simulated(), pollMs: 5, price: PRICE, maxCostUsd: 0.0001 });
    // A row's worst case is about 1.5k input tokens and 256 output at half price (~0.0013 USD): none fits.
    expect(summary).toMatchObject({ batches: 0, budgetStopped: true, left: 3 });
  });

  it("runs through serve's OpenAI Batch API and, resumed from its state, submits nothing twice", async () => {
    const server = new LlmServer({ batchDurationMs: 100 });
    servers.push(server);
    const url = await server.listen({ port: 0 });
    const api = new OpenAiBatchApi({ apiKey: 'sk-batch', baseUrl: `${url}/v1`, model: 'gpt-4o-mini' }, VENDORS.openai);
    // Stopped once the first batch is recorded: the state holds it, pending.
    const stop = new AbortController();
    let saved: BatchRunState | undefined;
    const first = await runBatch({
      source: ARTICLES,
      api,
      pollMs: 20,
      signal: stop.signal,
      onState: (state) => {
        saved = state;
        stop.abort();
      },
    });
    expect(first).toMatchObject({ batches: 1, interrupted: true, succeeded: 0, left: 3 });
    expect(saved!.pending).toHaveLength(1);
    const results: ArticleResult[] = [];
    const second = await runBatch({ source: ARTICLES, api, pollMs: 20, resume: saved, onResult: (r) => void results.push(r) });
    // The recorded batch re-attached (summarize), then one more for sentiment: two at the server in all.
    expect(second).toMatchObject({ batches: 1, succeeded: 3, failed: 0, left: 0 });
    const listed = (await (await fetch(`${url}/v1/batches`, { headers: { authorization: 'Bearer sk-batch' } })).json()) as {
      data: unknown[];
    };
    expect(listed.data).toHaveLength(2);
    for (const result of results) expect(Object.keys(result.outputs).sort()).toEqual(['sentiment', 'summarize']);
  });

  it("uploads to serve's OpenAI Batch API exactly the JSONL of its rows, non-ASCII text byte for byte, with or without their JSON made", async () => {
    const server = new LlmServer({ batchDurationMs: 10 });
    servers.push(server);
    const url = await server.listen({ port: 0 });
    const api = new OpenAiBatchApi({ apiKey: 'sk-upload', baseUrl: `${url}/v1`, model: 'gpt-4o-mini' }, VENDORS.openai);
    const texts = ['Zürich — 東京 \u2028 "quoted" \\ done', 'plain', '🙂 emoji and \r\n line ends'];
    const rows: BatchRow[] = texts.map((text, index) => {
      const request = { task: 'summarize', articleId: `a${index}`, prompt: text, schema: { type: 'object' } };
      const body = api.encode(request, 64);
      // The first row arrives with its JSON made (as runBatch sizes it), the others without.
      return { customId: customIdOf(`a${index}`, 'summarize'), request, body, bodyJson: index === 0 ? JSON.stringify(body) : undefined };
    });
    const submitted = await api.submit(rows);
    const content = await fetch(`${url}/v1/files/${submitted.fileId}/content`, { headers: { authorization: 'Bearer sk-upload' } });
    const expected = rows
      .map((row) => `${JSON.stringify({ custom_id: row.customId, method: 'POST', url: '/v1/chat/completions', body: row.body })}\n`)
      .join('');
    expect(Buffer.from(await content.arrayBuffer()).equals(Buffer.from(expected))).toBe(true);
    const file = (await (
      await fetch(`${url}/v1/files/${submitted.fileId}`, { headers: { authorization: 'Bearer sk-upload' } })
    ).json()) as {
      filename: string;
      purpose: string;
      bytes: number;
    };
    expect(file).toMatchObject({ filename: 'batch.jsonl', purpose: 'batch', bytes: Buffer.byteLength(expected) });
  });

  describe('a resume after a task changed', () => {
    const builtin = loadBuiltinTasks();
    const changed = defineTasks(
      builtin.tasks.map((task): TaskSpec => (task.name === 'summarize' ? { ...task, prompt: `In one line: ${task.prompt}` } : task)),
    );
    /** The tasks' fingerprints in a batch run through `api` at the default output cap. */
    const batchFingerprints = (tasks: typeof builtin, api: BatchApi) =>
      planRun({ tasks, providers: [], batch: { name: api.name, model: api.model } }).fingerprints;
    /** The simulated API, with the prompts of the rows submitted through it. */
    const recording = () => {
      const api = simulated();
      const prompts: string[] = [];
      const submit = api.submit.bind(api);
      api.submit = (rows: readonly BatchRow[]) => {
        for (const row of rows) prompts.push(`${row.request.task}: ${row.request.prompt.slice(0, 12)}`);
        return submit(rows);
      };
      return { api, prompts };
    };

    it('drops the outputs the state holds of a changed task and of those that depend on it; the lines record the new fingerprints', async () => {
      const { api } = recording();
      const now = batchFingerprints(changed, api);
      const old = batchFingerprints(builtin, api);
      expect(now.summarize).not.toBe(old.summarize);
      expect(now.sentiment).toBe(old.sentiment);
      const state = (fingerprints: BatchRunState['fingerprints']): BatchRunState => ({
        pending: [],
        outputs: Object.fromEntries(ARTICLES.map((article) => [article.id, { summarize: { summary: 'Old.', keywords: [] } }])),
        attempts: {},
        ended: [],
        spentNanoUsd: 0,
        fingerprints,
      });
      const results: ArticleResult[] = [];
      const redone = await runBatch({
        source: ARTICLES,
        api,
        tasks: changed,
        pollMs: 5,
        resume: state(old),
        onResult: (r) => void results.push(r),
      });
      expect(redone).toMatchObject({ succeeded: 3, batches: 2, rows: 6 });
      for (const result of results) {
        expect(result.outputs.summarize).not.toEqual({ summary: 'Old.', keywords: [] });
        expect(result.fingerprints).toEqual(now);
      }
      // Unchanged, or a state saved before fingerprints were recorded: the outputs are kept, sentiment alone is asked.
      for (const fingerprints of [now, undefined]) {
        const kept = await runBatch({ source: ARTICLES, api, tasks: changed, pollMs: 5, resume: state(fingerprints) });
        expect(kept).toMatchObject({ succeeded: 3, batches: 1, rows: 3 });
      }
    });

    it('does not read back the rows of a changed task still in flight: they were asked the old prompt, and are asked again', async () => {
      const { api, prompts } = recording();
      const stop = new AbortController();
      let saved: BatchRunState | undefined;
      await runBatch({
        source: ARTICLES,
        api,
        pollMs: 5,
        signal: stop.signal,
        onState: (state) => {
          saved = state;
          stop.abort();
        },
      });
      expect(saved!.pending).toHaveLength(1);
      expect(prompts).toHaveLength(3);
      const results: ArticleResult[] = [];
      const second = await runBatch({
        source: ARTICLES,
        api,
        tasks: changed,
        pollMs: 5,
        resume: saved,
        onResult: (r) => void results.push(r),
      });
      expect(second).toMatchObject({ succeeded: 3, batches: 2, rows: 6 });
      expect(prompts.slice(3, 6)).toEqual(Array(3).fill('summarize: In one line:'));
      expect(results.every((result) => result.fingerprints?.summarize === batchFingerprints(changed, api).summarize)).toBe(true);
    });
  });

  describe('holds holdArticles in progress at most', () => {
    /** `count` articles, read one at a time, and how many were read and not yet ended at most. */
    const counted = (count: number) => {
      const seen = { read: 0, ended: 0, most: 0 };
      async function* source(): AsyncGenerator<Article> {
        for (let n = 1; n <= count; n++) {
          seen.read++;
          seen.most = Math.max(seen.most, seen.read - seen.ended);
          yield { ...ARTICLES[n % ARTICLES.length]!, id: `n${n}` };
        }
      }
      return { seen, source: source(), onResult: () => void seen.ended++ };
    };

    it('reads more articles as earlier ones end, each level of them a batch', async () => {
      const { seen, source, onResult } = counted(7);
      const summary = await runBatch({ source, api: simulated(), pollMs: 5, holdArticles: 3, onResult });
      expect(summary).toMatchObject({ succeeded: 7, failed: 0, left: 0, rows: 14 });
      // Three in progress at most: 3 + 3 + 1 articles, a batch for each of their two levels.
      expect(seen.most).toBe(3);
      expect(summary.batches).toBe(6);
    });

    it('stops without reading on (a pipe or a terminal may not end): the rest of the input is said to be unread', async () => {
      const { seen, source } = counted(5);
      const stop = new AbortController();
      const summary = await runBatch({
        source,
        api: simulated(),
        pollMs: 5,
        holdArticles: 2,
        signal: stop.signal,
        onState: () => stop.abort(),
      });
      expect(summary).toMatchObject({ batches: 1, rows: 2, interrupted: true, left: 2, unread: true });
      expect(seen.read).toBe(2);
      const all = await runBatch({ source: ARTICLES, api: simulated(), pollMs: 5, holdArticles: 2 });
      expect(all).toMatchObject({ succeeded: 3, left: 0, unread: false });
    });

    it('reads on at once when the articles it holds end without a row (a field missing)', async () => {
      const source = [{ id: 'x1', title: 'no content' }, { id: 'x2', title: 'no content' }, ARTICLES[0]!] as Article[];
      const results: ArticleResult[] = [];
      const summary = await runBatch({ source, api: simulated(), pollMs: 5, holdArticles: 1, onResult: (r) => void results.push(r) });
      expect(summary).toMatchObject({ succeeded: 1, failed: 2, left: 0, unread: false, batches: 2 });
      expect(results.map((r) => [r.id, r.error?.type])).toEqual([
        ['x1', 'MissingFieldError'],
        ['x2', 'MissingFieldError'],
        ['a1', undefined],
      ]);
    });

    it('reads every article a resumed state holds, however few it may hold', async () => {
      const outputs = Object.fromEntries(ARTICLES.map((article) => [article.id, { summarize: { summary: 'Held.', keywords: ['held'] } }]));
      const resume: BatchRunState = { pending: [], outputs, attempts: {}, ended: [], spentNanoUsd: 0 };
      const summary = await runBatch({ source: ARTICLES, api: simulated(), pollMs: 5, holdArticles: 1, resume });
      // The three sentiments in one batch: the state's articles are read before anything is submitted.
      expect(summary).toMatchObject({ succeeded: 3, batches: 1, rows: 3 });
    });
  });
});
