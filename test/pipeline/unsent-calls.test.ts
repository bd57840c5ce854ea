// What a call costs when no answer came back: nothing when its request was never written (a
// connection refused), and — apart from what was spent — up to its worst case when its fate is
// unknown (a connection reset once the request was sent). Real HTTP, the OpenAI wire, real clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { RunEvents } from '../../src/pipeline/run-events.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';
import { OpenAiProvider } from '../../src/vendors/openai/openai-provider.ts';
import { refusedUrl, type ScriptedApiServer, startScriptedApiServer, USAGE } from '../vendors/scripted-api-server.ts';

const KEY = 'sk-scripted-0123456789-never-shown';
const PRICE = { inputPerMTok: 0.4, outputPerMTok: 1.6 };
const SUMMARY = {
  type: 'object',
  properties: { summary: { type: 'string' }, keywords: { type: 'array', items: { type: 'string' } } },
  required: ['summary', 'keywords'],
  additionalProperties: false,
} as const;
// One prompt for every article: each attempt's worst case is the same.
const TASKS = defineTasks([{ name: 'summarize', prompt: 'Summarise: {{title}}', schema: SUMMARY, maxOutputTokens: 100 }]);
const articles = (count: number) => Array.from({ length: count }, (_, i) => ({ id: String(i + 1), title: 'One title', content: 'x' }));
const nano = (usd: number | undefined) => Math.round((usd ?? 0) * 1e9);

let server: ScriptedApiServer;
let refused: string;
beforeAll(async () => {
  server = await startScriptedApiServer({ apiKey: KEY });
  refused = `${await refusedUrl()}/v1`;
});
afterAll(() => server.close());

/** Runs `count` articles through providers at `baseUrls` (a pool of them when more than one), each call tried twice at most. */
async function run(baseUrls: readonly string[], count: number, budget?: LocalBudget) {
  const attempts: AttemptEvent[] = [];
  const results: ArticleResult[] = [];
  const events = new RunEvents();
  events.on('attempt', (event) => void attempts.push(event));
  const names = baseUrls.map((_, i) => `key-${i + 1}`);
  const summary = await runPipeline({
    source: articles(count),
    tasks: TASKS,
    providers: baseUrls.map((baseUrl, i) => ({
      provider: new OpenAiProvider({ apiKey: KEY, baseUrl, name: names[i] }),
      limits: requestLimit(Infinity, 1),
      price: PRICE,
    })),
    ...(names.length > 1 && { pools: [{ name: 'pool', members: names }], routes: { summarize: 'pool' } }),
    budget,
    workers: 1,
    retry: { maxAttempts: 2, backoff: () => 0 },
    onResult: (result) => void results.push(result),
    events,
  });
  return { summary, attempts, results };
}

/** The worst case of one call of the task, in nano-USD: what a reset call may have cost. */
async function worstNano(): Promise<number> {
  server.cue = 'reset';
  const { attempts } = await run([server.openAiUrl], 1);
  return nano(attempts[0]!.unknownCostUsd);
}

describe('a call that never reached its provider, and one whose fate is unknown', () => {
  it('refused before its request was written: costs nothing, and takes nothing from the budget (--max-cost does not stop the run)', async () => {
    const worst = await worstNano();
    expect(worst).toBeGreaterThan(0);
    // Room for two calls' worst case: were the 10 refused calls held as spent, the third would stop the run.
    const budget = new LocalBudget({ maxUsd: (2.5 * worst) / 1e9 });
    const { summary, attempts, results } = await run([refused], 5, budget);
    expect(summary.calls).toBe(10);
    expect(summary.networkErrors).toBe(10);
    expect(summary.stoppedBy).toBeUndefined();
    expect(summary.failed).toBe(5);
    expect(attempts.every((event) => event.costUsd === 0 && event.unknownCostUsd === 0)).toBe(true);
    expect(results.every((result) => result.costUsd === 0 && result.unknownCostUsd === undefined)).toBe(true);
    expect(summary.costUsd).toBe(0);
    expect(summary.unknownCostUsd).toBe(0);
    expect(summary.budget).toEqual({ maxUsd: budget.maxUsd, spentUsd: 0, unknownUsd: 0 });
    expect(budget.heldUsd).toBe(0);
  });

  it('reset once the request was sent: reported apart, up to its worst case, not as spent; the budget holds it all the same', async () => {
    const worst = await worstNano();
    server.cue = 'reset';
    const { summary, results } = await run([server.openAiUrl], 2);
    expect(summary.calls).toBe(4);
    expect(summary.costUsd).toBe(0);
    expect(nano(summary.unknownCostUsd)).toBe(4 * worst);
    for (const result of results) {
      expect(result.costUsd).toBe(0);
      expect(nano(result.unknownCostUsd)).toBe(2 * worst);
    }
    expect(nano(summary.tasks[0]!.unknownCostUsd)).toBe(4 * worst);

    // Never overspent: with room for two worst cases, the third call of unknown fate does not fit.
    const budget = new LocalBudget({ maxUsd: (2.5 * worst) / 1e9 });
    const stopped = await run([server.openAiUrl], 5, budget);
    expect(stopped.summary.stoppedBy).toMatchObject({ by: 'budget' });
    expect(stopped.summary.calls).toBe(2);
    expect(budget.spentUsd).toBe(0);
    expect(nano(budget.unknownUsd)).toBe(2 * worst);
    expect(stopped.summary.budget).toEqual({ maxUsd: budget.maxUsd, spentUsd: 0, unknownUsd: budget.unknownUsd });
  });

  it('in a pool with a member killed, the cost is what the live member answered: the dead one’s refused calls cost nothing', async () => {
    server.cue = 'ok';
    const budget = new LocalBudget({ maxUsd: 10 });
    const { summary, attempts } = await run([refused, server.openAiUrl], 6, budget);
    expect(summary.succeeded).toBe(6);
    const dead = attempts.filter((event) => event.provider === 'key-1' && event.called);
    expect(dead.length).toBeGreaterThan(0);
    expect(dead.every((event) => event.outcome === 'network-error' && event.costUsd === 0)).toBe(true);
    const answered = attempts.filter((event) => event.outcome === 'ok').length;
    expect(answered).toBe(6);
    const perAnswer = nano((USAGE.inputTokens * PRICE.inputPerMTok + USAGE.outputTokens * PRICE.outputPerMTok) / 1e6);
    expect(nano(summary.costUsd)).toBe(answered * perAnswer);
    expect(summary.unknownCostUsd).toBe(0);
    expect(nano(budget.spentUsd)).toBe(nano(summary.costUsd));
    expect(summary.providers.find((p) => p.name === 'key-1')!.costUsd).toBe(0);
  });
});
