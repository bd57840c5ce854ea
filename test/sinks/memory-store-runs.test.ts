// The result store seam end to end with no file: a live run stopped and resumed, a batch run stopped
// and resumed, and a task changed since — each through a MemoryResultStore, as --output does through
// a JSONL file.
import { describe, expect, it } from 'vitest';
import { takeUpBatch } from '../../src/batch/batch-resume.ts';
import { runBatch } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { ManualClock, sleep, type Clock } from '../../src/clock.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import type { CallOptions, LlmRequest, LlmResponse, Provider } from '../../src/provider/provider.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { MemoryResultStore } from '../../src/sinks/memory-result-store.ts';
import { countRedone, resumedSource, withKeptOutputs } from '../../src/sinks/resumed-source.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { defineTasks, type TaskSpec } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

const ARTICLES = Array.from({ length: 6 }, (_, i) => ({ id: String(i + 1), title: `Title ${i + 1}`, content: `Body ${i + 1}. More.` }));
/** 100 input and 10 output tokens a call at 1 and 4 USD per million: 140 µUSD. */
const PRICE = { inputPerMTok: 1, outputPerMTok: 4 };
const CALL_USD = 140e-6;

/** Answers the built-in tasks after 100 ms on `clock`, billed 100 + 10 tokens, counting its calls by task. */
class CountingProvider implements Provider {
  readonly name = 'counting';
  readonly calls: string[] = [];
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    this.calls.push(`${request.articleId}:${request.task}`);
    await sleep(this.#clock, 100, options.signal);
    const output =
      request.task === 'summarize' ? { summary: `of ${request.articleId}`, keywords: ['k'] } : { sentiment: 'neutral', score: 0 };
    return { output, usage: { inputTokens: 100, outputTokens: 10 } };
  }
}

describe('a MemoryResultStore behind a run', () => {
  it('a live run stopped mid-way, resumed through it: only what did not succeed is run, each article ends once, the spend carried', async () => {
    const clock = new ManualClock();
    const store = new MemoryResultStore();
    const first = new CountingProvider(clock);
    const providers = [{ provider: first, limits: requestLimit(Infinity, 1), price: PRICE }];
    const plan = planRun({ providers });
    const stop = new AbortController();
    await drive(
      clock,
      runPipeline({
        source: ARTICLES,
        providers,
        plan,
        workers: 2,
        clock,
        signal: stop.signal,
        onResult: async (result) => {
          await store.write(result);
          if (store.written === 2) stop.abort();
        },
      }),
    );
    expect(store.results.filter((result) => result.status === 'succeeded')).toHaveLength(2);
    // The calls cut by the stop may have been billed, at what they held: the results say it, apart from what was spent.
    const spentBefore = store.results.reduce((sum, result) => sum + (result.costUsd ?? 0), 0);
    const unknownBefore = store.results.reduce((sum, result) => sum + (result.unknownCostUsd ?? 0), 0);
    expect(unknownBefore).toBeGreaterThan(0);
    expect(spentBefore + unknownBefore).toBeGreaterThan(first.calls.length * CALL_USD);

    const answeredBefore = new Set(store.results.flatMap((result) => Object.keys(result.outputs).map((task) => `${result.id}:${task}`)));
    const kept = await store.takeUp({ keepUnfinished: true, redo: plan.redo });
    expect(kept.spentUsd).toBeCloseTo(spentBefore, 12);
    expect(kept.unknownUsd).toBeCloseTo(unknownBefore, 12);
    const again = new CountingProvider(clock);
    const resumedProviders = [{ provider: again, limits: requestLimit(Infinity, 1), price: PRICE }];
    const budget = new LocalBudget({ maxUsd: 1, spentUsd: kept.spentUsd, unknownUsd: kept.unknownUsd });
    const resumed = resumedSource(ARTICLES, kept, (id) => new Error(`another article ${id}`));
    const summary = await drive(
      clock,
      runPipeline({
        source: resumed.source,
        providers: resumedProviders,
        budget,
        clock,
        onResult: (result) => store.write(result),
      }),
    );
    expect(summary).toMatchObject({ succeeded: 4, failed: 0 });
    expect(resumed.resumed()).toBe(2);
    // Nothing that ended with an output is asked again: the calls of both runs are the tasks, each once.
    const answered = new Set(store.results.flatMap((result) => Object.keys(result.outputs).map((task) => `${result.id}:${task}`)));
    expect(answered.size).toBe(2 * ARTICLES.length);
    expect(again.calls.filter((call) => answeredBefore.has(call))).toEqual([]);
    expect(again.calls.length).toBe(2 * ARTICLES.length - answeredBefore.size);
    // --max-cost counts what was spent before.
    expect(budget.spentUsd).toBeCloseTo(kept.spentUsd + again.calls.length * CALL_USD, 12);
    expect(budget.unknownUsd).toBeCloseTo(kept.unknownUsd, 12);

    await store.compact();
    expect(store.results.map((result) => [result.id, result.status])).toEqual(
      expect.arrayContaining(ARTICLES.map((article) => [article.id, 'succeeded'])),
    );
    expect(store.results).toHaveLength(ARTICLES.length);
    const total = store.results.reduce((sum, result) => sum + (result.costUsd ?? 0), 0);
    expect(total).toBeCloseTo(spentBefore + again.calls.length * CALL_USD, 12);
    // Compacted to one result an article, what calls of unknown fate may have cost is carried apart still.
    const unknown = store.results.reduce((sum, result) => sum + (result.unknownCostUsd ?? 0), 0);
    expect(unknown).toBeCloseTo(unknownBefore, 12);
  });

  it('a batch run stopped with its batch at the provider, resumed from its state there: every article once, no row twice', async () => {
    const store = new MemoryResultStore();
    const api = new SimulatedBatchApi({ provider: new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), durationMs: 20 });
    const submitted: string[] = [];
    const submit = api.submit.bind(api);
    api.submit = (rows) => {
      submitted.push(...rows.map((row) => row.customId));
      return submit(rows);
    };
    const stop = new AbortController();
    const options = { api, pollMs: 5, onResult: store.write.bind(store), onState: (state: object) => store.state.save(state) };
    const stopped = await runBatch({
      ...options,
      source: ARTICLES,
      signal: stop.signal,
      onState: async (state) => {
        await store.state.save(state);
        stop.abort();
      },
    });
    expect(stopped).toMatchObject({ interrupted: true, succeeded: 0, batches: 1 });
    const { resume, partial } = await takeUpBatch(store);
    expect(resume.pending).toHaveLength(1);
    const finished = await runBatch({ ...options, source: withKeptOutputs(ARTICLES, partial), resume });
    expect(finished).toMatchObject({ succeeded: ARTICLES.length, batches: 1 });
    expect(new Set(submitted).size).toBe(submitted.length);
    expect(store.results.map((result) => result.id).sort()).toEqual(ARTICLES.map((article) => article.id));
    await store.state.clear();
    expect(await store.state.load()).toBeUndefined();
  });

  it('a finished batch run, resumed with a task changed: that task and those after it go again, the rest kept', async () => {
    const store = new MemoryResultStore();
    const api = new SimulatedBatchApi({ provider: new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), durationMs: 5 });
    const builtin = loadBuiltinTasks();
    const changed = defineTasks(
      builtin.tasks.map((task): TaskSpec => (task.name === 'sentiment' ? { ...task, prompt: `Briefly: ${task.prompt}` } : task)),
    );
    const batch = { name: api.name, model: api.model };
    const before = planRun({ tasks: builtin, providers: [], batch });
    await runBatch({ source: ARTICLES, api, plan: before, pollMs: 2, onResult: store.write.bind(store) });
    const summaries = new Map(store.results.map((result) => [result.id, result.outputs.summarize]));

    const after = planRun({ tasks: changed, providers: [], batch });
    const { resume, partial, redo } = await takeUpBatch(store, { redo: after.redo, batchesLost: true });
    expect(resume.ended).toEqual([]);
    const redone = new Map<string, number>();
    const summary = await runBatch({
      source: withKeptOutputs(ARTICLES, partial),
      api,
      plan: after,
      resume,
      pollMs: 2,
      onResult: async (result) => {
        countRedone(redo, result, redone);
        await store.write(result);
      },
    });
    expect(summary).toMatchObject({ succeeded: ARTICLES.length, rows: ARTICLES.length });
    expect(redone).toEqual(new Map([['sentiment', ARTICLES.length]]));
    await store.compact();
    expect(store.results).toHaveLength(ARTICLES.length);
    for (const result of store.results) {
      expect(result.outputs.summarize).toEqual(summaries.get(result.id));
      expect(result.fingerprints).toEqual(after.fingerprints);
    }
    // Taken up again with the tasks as they are: nothing left to do.
    expect((await takeUpBatch(store, { redo: after.redo })).resume.ended).toHaveLength(ARTICLES.length);
  });
});
