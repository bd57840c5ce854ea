import type { Article } from '../../src/index.ts';
import { describe, expect, it } from 'vitest';
import { SIMULATED_DEFAULTS, SimulatedProvider } from '../../src/index.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { simulatedAnswer } from '../../src/simulator/simulated-answers.ts';
import { estimateRun } from '../../src/pipeline/run-estimate.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';

const TASKS = defineTasks([
  {
    name: 'entities',
    prompt: 'List the people in: {{content}}',
    schema: { type: 'object', properties: { people: { type: 'array', items: { type: 'string' } } }, required: ['people'] },
  },
  {
    name: 'headline',
    dependsOn: ['entities'],
    prompt: 'Write a headline naming {{tasks.entities.people}} for: {{title}}',
    schema: { type: 'object', properties: { headline: { type: 'string' } }, required: ['headline'] },
    provider: 'cheap',
    maxOutputTokens: 40,
  },
]);

const ARTICLES: Article[] = [
  { id: '1', title: 'Mayor Alda opens the bridge', content: 'Mayor Alda and engineer Brun opened the bridge on Monday.' },
  { id: '2', title: 'Rain', content: 'It rained all week in the valley.' },
  // No content: the entities prompt cannot be made, and the run would fail it before any call.
  { id: '3', title: 'A line without content' },
];

/** One token a character: a count the test can redo. */
const byLength = (request: LlmRequest) => request.prompt.length;

function setups() {
  return [
    {
      provider: new SimulatedProvider({ name: 'main' }),
      limits: [{ kind: 'requests' as const, rate: 1, burst: 1 }],
      estimateInputTokens: byLength,
      maxOutputTokens: 100,
      price: { inputPerMTok: 1, outputPerMTok: 4 },
    },
    {
      provider: new SimulatedProvider({ name: 'cheap' }),
      limits: [
        { kind: 'requests' as const, rate: 10, burst: 5 },
        { kind: 'input-tokens' as const, rate: 2, burst: 20 },
      ],
      estimateInputTokens: byLength,
    },
  ];
}

describe('estimateRun', () => {
  it('fills a dependent prompt with the simulated answer of the task it reads, and skips an article lacking a field, as the run fails it', async () => {
    const plan = await estimateRun(planRun({ providers: setups(), tasks: TASKS }), ARTICLES);
    expect(plan).toMatchObject({ articles: 3, lacking: 1, calls: 4 });
    const headlinePrompts = ARTICLES.slice(0, 2).map((article) => {
      const request = {
        task: 'entities',
        articleId: article.id,
        prompt: `List the people in: ${article.content}`,
        schema: TASKS.tasks[0]!.schema,
      };
      const { people } = simulatedAnswer(request, SIMULATED_DEFAULTS.seed) as { people: string[] };
      return `Write a headline naming ${JSON.stringify(people)} for: ${article.title}`;
    });
    const entitiesPrompts = ARTICLES.slice(0, 2).map((article) => `List the people in: ${article.content}`);
    expect(plan.tasks[0]).toMatchObject({
      name: 'entities',
      provider: 'main',
      calls: 2,
      inputTokens: entitiesPrompts.reduce((sum, prompt) => sum + prompt.length, 0),
      maxOutputTokens: 200,
    });
    expect(plan.tasks[1]).toMatchObject({ name: 'headline', provider: 'cheap', calls: 2, maxOutputTokens: 80 });
    expect(plan.tasks[1]!.inputTokens).toBe(headlinePrompts.reduce((sum, prompt) => sum + prompt.length, 0));
  });

  it('prices the priced provider only, and bounds the run by the slowest limit of any provider', async () => {
    const plan = await estimateRun(planRun({ providers: setups(), tasks: TASKS }), ARTICLES);
    expect(plan.tasks[0]!.expectedUsd).toBeGreaterThan(0);
    expect(plan.tasks[1]!.expectedUsd).toBeUndefined();
    expect(plan.expectedUsd).toBe(plan.tasks[0]!.expectedUsd);
    const [main, cheap] = plan.providers;
    expect(main!.limits[0]).toMatchObject({ kind: 'requests', amount: 2, floorMs: 1000 });
    const inputTokens = cheap!.limits[1]!;
    expect(inputTokens).toMatchObject({ kind: 'input-tokens', amount: plan.tasks[1]!.inputTokens });
    expect(inputTokens.floorMs).toBe(((inputTokens.amount - 20) / 2) * 1000);
    expect(plan.boundBy).toEqual({ provider: 'cheap', kind: 'input-tokens' });
    expect(plan.leastElapsedMs).toBe(inputTokens.floorMs);
  });

  it('says no limit bounds calls at an infinite rate', async () => {
    const providers = setups().map((setup) => ({ ...setup, limits: [{ kind: 'requests' as const, rate: Infinity, burst: 1 }] }));
    const plan = await estimateRun(planRun({ providers, tasks: TASKS }), ARTICLES);
    expect(plan.leastElapsedMs).toBe(0);
    expect(plan.boundBy).toBeNull();
  });
});
