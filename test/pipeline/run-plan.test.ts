import { describe, expect, it } from 'vitest';
import { runBatch } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { ManualClock } from '../../src/clock.ts';
import type { ProviderSetup } from '../../src/gate/provider-options.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import type { JsonSchema } from '../../src/provider/json-schema.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { defineTasks, TasksError } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

const schema = (field: string) => ({
  type: 'object',
  properties: { [field]: { type: 'string' } },
  required: [field],
  additionalProperties: false,
});

/** topic on its own, headline after it (on `cheap` where asked), tweet after headline. */
const TASKS = defineTasks([
  { name: 'topic', prompt: 'The topic of {{title}}', schema: schema('topic') },
  { name: 'headline', dependsOn: ['topic'], prompt: 'A headline on {{tasks.topic.topic}}', schema: schema('topic'), provider: 'cheap' },
  { name: 'tweet', dependsOn: ['headline'], prompt: 'A tweet: {{tasks.headline.topic}}', schema: schema('topic') },
]);

const setup = (name: string, extra: Partial<ProviderSetup> = {}): ProviderSetup => ({
  provider: new SimulatedProvider({ name, minLatencyMs: 0, maxLatencyMs: 0 }),
  limits: requestLimit(Infinity, 1),
  ...extra,
});

/** A provider that refuses, as its vendor would, every schema with a `pattern` anywhere: a provider's schemaProblem of its own. */
class PickyProvider extends SimulatedProvider {
  asked = 0;

  schemaProblem(schema: JsonSchema): string | undefined {
    this.asked++;
    return JSON.stringify(schema).includes('"pattern"') ? 'Picky refuses a pattern' : undefined;
  }
}

describe('planRun', () => {
  it('routes each task once: its own provider, else the routes, else the first; a pool by name', () => {
    const providers = [setup('main'), setup('cheap'), setup('other')];
    const pools = [{ name: 'both', members: ['main', 'other'] }];
    const plan = planRun({ tasks: TASKS, providers, routes: { tweet: 'both' }, pools });
    expect(plan.routes).toEqual(
      new Map([
        ['topic', 'main'],
        ['headline', 'cheap'],
        ['tweet', 'both'],
      ]),
    );
    expect(plan.servers.get('tweet')!.map((served) => served.provider.name)).toEqual(['main', 'other']);
    expect(plan.providers).toBe(providers);
    expect(plan.pools).toBe(pools);
  });

  it('refuses a route to a provider that is not there, with where the tasks came from', () => {
    expect(() => planRun({ tasks: TASKS, providers: [setup('main')] })).toThrow(
      new TasksError(`${TASKS.source}: task "headline" asks for provider "cheap", which is not one of the run's ("main")`),
    );
  });

  it('fingerprints a task by who may answer it: its provider, or a pool of them, or the Batch API', () => {
    const providers = [setup('main'), setup('cheap'), setup('other', { maxOutputTokens: 99 })];
    const alone = planRun({ tasks: TASKS, providers });
    const pooled = planRun({ tasks: TASKS, providers, routes: { tweet: 'both' }, pools: [{ name: 'both', members: ['main', 'other'] }] });
    expect(pooled.fingerprints.topic).toBe(alone.fingerprints.topic);
    expect(pooled.fingerprints.tweet).not.toBe(alone.fingerprints.tweet);
    const batch = planRun({ tasks: TASKS, providers: [], batch: { name: 'main', model: 'm' } });
    expect(batch.routes.get('headline')).toBe('main');
    expect(batch.fingerprints.topic).not.toBe(alone.fingerprints.topic);
    expect(planRun({ tasks: TASKS, providers: [], batch: { name: 'main', model: 'm', maxOutputTokens: 256 } }).fingerprints).toEqual(
      batch.fingerprints,
    );
  });

  it("asks each provider a task may go to whether it would refuse the task's schema, in the vendor's words", () => {
    const picky = new PickyProvider({ name: 'picky' });
    const tasks = defineTasks([
      { name: 'plain', prompt: 'A {{title}}', schema: schema('a') },
      {
        name: 'coded',
        prompt: 'B {{title}}',
        schema: { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } }, required: ['code'] },
      },
    ]);
    const plan = planRun({ tasks, providers: [{ provider: picky, limits: requestLimit(Infinity, 1) }] });
    expect(plan.schemaProblems).toEqual([{ task: 'coded', provider: 'picky', problem: 'Picky refuses a pattern' }]);
    expect(planRun({ tasks, providers: [setup('simulated')] }).schemaProblems).toEqual([]);
  });

  it("gives the budget's floor: the cheapest call at its provider's price, or the providers that have none", () => {
    const price = { inputPerMTok: 1, outputPerMTok: 4 };
    const unpriced = planRun({ tasks: TASKS, providers: [setup('main', { price }), setup('cheap')] });
    expect(unpriced.unpriced).toEqual(['cheap']);
    expect(unpriced.budgetFloor).toBeUndefined();
    expect(unpriced.budgetProblem(100)).toEqual({ rule: 'unpriced', providers: ['cheap'] });
    const plan = planRun({
      tasks: TASKS,
      providers: [setup('main', { price }), setup('cheap', { price: { inputPerMTok: 0.1, outputPerMTok: 0.4 } })],
    });
    // headline goes to the provider ten times cheaper: its whole answer (256 tokens) and prompt at a tenth of the price.
    expect(plan.budgetFloor!.task).toBe('headline');
    expect(plan.budgetFloor!.usd).toBeGreaterThan(256 * 0.4e-6);
    expect(plan.budgetFloor!.usd).toBeLessThan(256 * 4e-6);
    expect(plan.budgetProblem(plan.budgetFloor!.usd)).toBeUndefined();
    expect(plan.budgetProblem(plan.budgetFloor!.usd / 2)).toEqual({ rule: 'floor', task: 'headline', floorUsd: plan.budgetFloor!.usd });
  });

  it('says what a resume makes again of an earlier result: a changed task and those after it, and tasks added since', () => {
    const providers = [setup('main'), setup('cheap')];
    const before = planRun({ tasks: TASKS, providers });
    const outputs = { topic: { topic: 't' }, headline: { topic: 'h' }, tweet: { topic: 'w' } };
    expect(before.redo({ outputs, fingerprints: before.fingerprints })).toEqual([]);
    const changed = planRun({
      tasks: defineTasks(TASKS.tasks.map((task) => (task.name === 'headline' ? { ...task, prompt: `New: ${task.prompt}` } : task))),
      providers,
    });
    expect(changed.redo({ outputs, fingerprints: before.fingerprints })).toEqual(['headline', 'tweet']);
    // Written before fingerprints were recorded: taken as made by the tasks as they are.
    expect(changed.redo({ outputs, fingerprints: undefined })).toEqual([]);
    const { tweet: _, ...withoutTweet } = before.fingerprints;
    expect(before.redo({ outputs: { topic: outputs.topic, headline: outputs.headline }, fingerprints: withoutTweet })).toEqual(['tweet']);
  });
});

describe('a run given its plan', () => {
  it('runPipeline routes and fingerprints by the plan it is given, planning nothing again', async () => {
    const clock = new ManualClock();
    const picky = new PickyProvider({ name: 'picky', minLatencyMs: 0, maxLatencyMs: 0 });
    const providers: ProviderSetup[] = [{ provider: picky, limits: requestLimit(Infinity, 1) }];
    const tasks = loadBuiltinTasks();
    const plan = planRun({ tasks, providers });
    expect(picky.asked).toBe(2);
    const results: ArticleResult[] = [];
    const source = [{ id: '1', title: 'T', content: 'Some text. More text.' }];
    await drive(clock, runPipeline({ source, providers, tasks, plan, clock, onResult: (result) => void results.push(result) }));
    expect(picky.asked).toBe(2);
    expect(results[0]!.fingerprints).toBe(plan.fingerprints);
    // Without one, it plans for itself.
    await drive(clock, runPipeline({ source, providers, tasks, clock }));
    expect(picky.asked).toBe(4);
  });

  it("runPipeline refuses another run's plan", async () => {
    const providers = [setup('main')];
    const plan = planRun({ providers });
    await expect(runPipeline({ source: [], providers: [setup('main')], plan })).rejects.toThrow(
      new TypeError("Expected plan to be planRun() of the run's providers, got a plan of other providers"),
    );
    await expect(runPipeline({ source: [], providers, tasks: defineTasks(TASKS.tasks.slice(0, 1)), plan })).rejects.toThrow(
      new TypeError("Expected plan to be planRun() of the run's tasks, got a plan of other tasks"),
    );
    const batchPlan = planRun({ providers, batch: { name: 'main' } });
    await expect(runPipeline({ source: [], providers, plan: batchPlan })).rejects.toThrow(
      new TypeError("Expected plan to be a live run's planRun(), got a batch run's"),
    );
  });

  it('runBatch fingerprints by the plan it is given, and refuses one through another Batch API', async () => {
    const api = new SimulatedBatchApi({
      provider: new SimulatedProvider({ name: 'sim', minLatencyMs: 0, maxLatencyMs: 0 }),
      durationMs: 1,
    });
    const providers = [setup('sim')];
    const tasks = loadBuiltinTasks();
    const plan = planRun({ tasks, providers, batch: { name: api.name, model: api.model, maxOutputTokens: 100 } });
    const results: ArticleResult[] = [];
    const source = [{ id: '1', title: 'T', content: 'Some text. More text.' }];
    const summary = await runBatch({
      source,
      api,
      tasks,
      plan,
      maxOutputTokens: 100,
      pollMs: 1,
      onResult: (result) => void results.push(result),
    });
    expect(summary).toMatchObject({ succeeded: 1 });
    expect(results[0]!.fingerprints).toBe(plan.fingerprints);
    await expect(runBatch({ source, api, tasks, plan, pollMs: 1 })).rejects.toThrow(
      new TypeError(
        `Expected plan to be planRun() through ${api.name} (model ${api.model ?? 'none'}, maxOutputTokens 256), got a plan through ${api.name} (model ${api.model ?? 'none'}, maxOutputTokens 100)`,
      ),
    );
    await expect(runBatch({ source, api, plan: planRun({ tasks, providers }), pollMs: 1 })).rejects.toThrow(
      new TypeError("Expected plan to be a batch run's planRun(), got a live run's"),
    );
  });
});
