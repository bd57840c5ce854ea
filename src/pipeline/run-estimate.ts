// What a planned run would call, take and cost, worked out from its source with no call made: the
// dry run's figures, and the least time the limits allow (the rate floor of each limit).
import { GATE_DEFAULTS } from '../gate/call-gate.ts';
import { usageNanoUsd, worstCaseNanoUsd } from '../gate/call-cost.ts';
import type { ProviderSetup } from '../gate/provider-options.ts';
import { NANO_USD } from '../quota/budget.ts';
import { amountOf, type LimitKind } from '../quota/provider-limits.ts';
import type { LlmRequest } from '../provider/provider.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import { SIMULATED_DEFAULTS } from '../simulator/simulated.ts';
import { simulatedAnswer } from '../simulator/simulated-answers.ts';
import { estimateInputTokens, loadTokenizer } from '../provider/token-estimate.ts';
import type { Article } from '../sources/article.ts';
import { requestFor } from '../tasks/task-set.ts';
import { MissingFieldError } from '../tasks/template.ts';
import { specsOf } from '../gate/provider-options.ts';
import { expected } from '../validation/checks.ts';
import type { RunPlan } from './run-plan.ts';

/** What the calls of one task would take and cost. Tokens and USD summed over its calls. */
export interface TaskEstimate {
  readonly name: string;
  /** The provider that would answer it. */
  readonly provider: string;
  readonly calls: number;
  /** Prompt tokens, counted as the gate counts them to reserve a token limit. */
  readonly inputTokens: number;
  /** The answers' tokens if each were the size of the simulated provider's answer to its prompt. */
  readonly typicalOutputTokens: number;
  /** Every call's output cap (its `maxOutputTokens`): no answer may be longer. */
  readonly maxOutputTokens: number;
  /** At the provider's price, with the typical answers; absent without a price. */
  readonly expectedUsd?: number;
  /** What a budget would hold for them: each call's prompt bytes and framing as input tokens, and its cap. Absent without a price. */
  readonly worstUsd?: number;
}

/** How long one limit makes the run take at the least. */
export interface LimitEstimate {
  readonly kind: LimitKind;
  /** Units per second; `Infinity` for none. */
  readonly rate: number;
  readonly burst: number;
  /** What the run's calls would take of it: calls, or tokens (prompts and typical answers). */
  readonly amount: number;
  /** `(amount − burst) / rate`: no schedule grants the last of it sooner, in ms. */
  readonly floorMs: number;
}

/** One provider's share of the estimate. */
export interface ProviderEstimate {
  readonly name: string;
  readonly calls: number;
  readonly limits: readonly LimitEstimate[];
  /** The largest of its limits' floors, in ms. */
  readonly floorMs: number;
}

/**
 * What a run would do and cost, worked out without a call: one attempt per call (retries not
 * counted), every article's tasks in order, each dependent prompt filled with the simulated answer
 * to the task it reads.
 */
export interface RunEstimate {
  /** Articles the source held. */
  readonly articles: number;
  /** Of those, articles lacking a field a prompt reads: they would fail before any call. */
  readonly lacking: number;
  readonly calls: number;
  readonly inputTokens: number;
  readonly typicalOutputTokens: number;
  readonly maxOutputTokens: number;
  /** Absent when no provider has a price; with some priced, the priced ones' calls. */
  readonly expectedUsd?: number;
  readonly worstUsd?: number;
  /** Each task, in the tasks' order. */
  readonly tasks: readonly TaskEstimate[];
  readonly providers: readonly ProviderEstimate[];
  /** The largest floor of any limit: no run of these calls at these limits could end sooner, in ms. */
  readonly leastElapsedMs: number;
  /** The provider and limit of that floor; `null` when no limit bounds the run. */
  readonly boundBy: { readonly provider: string; readonly kind: LimitKind } | null;
}

interface Tally {
  calls: number;
  inputTokens: number;
  typicalOutputTokens: number;
  maxOutputTokens: number;
  expectedNano: number;
  worstNano: number;
}

/**
 * Reads `source` to the end and works out what the run `plan` made would call, take and cost, and
 * the least time its limits allow, calling no provider. Prompt tokens are counted with the
 * provider's `estimateInputTokens`, else the real tokenizer (gpt-tokenizer, which must be
 * installed); the worst case is what a budget holds per call. Each task must go to one provider:
 * a pool's choice among its members is not estimated (a `TypeError`).
 */
export async function estimateRun(plan: RunPlan, source: Iterable<Article> | AsyncIterable<Article>): Promise<RunEstimate> {
  const { tasks, providers, routes: assigned } = plan;
  const pooled = plan.pools.filter((pool) => [...assigned.values()].includes(pool.name));
  if (pooled.length > 0) throw expected('tasks', 'each served by one provider, not a pool', pooled.map((pool) => pool.name).join(', '));
  const setupOf = new Map(providers.map((setup) => [setup.provider.name, setup]));
  const countTokens = await loadTokenizer();
  const perTask = new Map<string, Tally>(
    tasks.tasks.map((task) => [
      task.name,
      { calls: 0, inputTokens: 0, typicalOutputTokens: 0, maxOutputTokens: 0, expectedNano: 0, worstNano: 0 },
    ]),
  );
  let articles = 0;
  let lacking = 0;
  for await (const article of source) {
    articles++;
    const fields = article.fields ?? (article as unknown as Readonly<Record<string, unknown>>);
    const outputs: Record<string, unknown> = {};
    const requests: { request: LlmRequest; typical: number }[] = [];
    try {
      for (const task of tasks.tasks) {
        const request = requestFor(task, article.id, fields, outputs);
        const answer = typicalAnswer(request);
        outputs[task.name] = answer;
        requests.push({ request, typical: answer === undefined ? Infinity : countTokens(JSON.stringify(answer)) });
      }
    } catch (error) {
      if (!(error instanceof MissingFieldError)) throw error;
      // The run fails such an article before its first call: it costs nothing.
      lacking++;
      continue;
    }
    for (const { request, typical } of requests) {
      const task = tasks.tasks.find((candidate) => candidate.name === request.task)!;
      const setup = setupOf.get(assigned.get(task.name)!)!;
      const cap = task.maxOutputTokens ?? setup.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
      const inputTokens = await (setup.estimateInputTokens ?? estimateInputTokens)(request);
      const outputTokens = Math.min(typical, cap);
      const tally = perTask.get(task.name)!;
      tally.calls++;
      tally.inputTokens += inputTokens;
      tally.typicalOutputTokens += outputTokens;
      tally.maxOutputTokens += cap;
      if (setup.price !== undefined) {
        tally.expectedNano += usageNanoUsd({ inputTokens, outputTokens }, setup.price);
        tally.worstNano += worstCaseNanoUsd(request, cap, setup.price, setup.provider.framing);
      }
    }
  }
  const taskPlans = tasks.tasks.map((task): TaskEstimate => {
    const { expectedNano, worstNano, ...tally } = perTask.get(task.name)!;
    const provider = assigned.get(task.name)!;
    const priced = setupOf.get(provider)!.price !== undefined;
    return { name: task.name, provider, ...tally, ...(priced && { expectedUsd: expectedNano / NANO_USD, worstUsd: worstNano / NANO_USD }) };
  });
  const providerPlans = providers.map((setup) => providerPlan(setup, taskPlans));
  const sum = (pick: (plan: TaskEstimate) => number) => taskPlans.reduce((total, plan) => total + pick(plan), 0);
  const priced = taskPlans.some((plan) => plan.expectedUsd !== undefined);
  let boundBy: RunEstimate['boundBy'] = null;
  let leastElapsedMs = 0;
  for (const plan of providerPlans) {
    for (const limit of plan.limits) {
      if (limit.floorMs > leastElapsedMs) {
        leastElapsedMs = limit.floorMs;
        boundBy = { provider: plan.name, kind: limit.kind };
      }
    }
  }
  return {
    articles,
    lacking,
    calls: sum((plan) => plan.calls),
    inputTokens: sum((plan) => plan.inputTokens),
    typicalOutputTokens: sum((plan) => plan.typicalOutputTokens),
    maxOutputTokens: sum((plan) => plan.maxOutputTokens),
    ...(priced && { expectedUsd: sum((plan) => plan.expectedUsd ?? 0), worstUsd: sum((plan) => plan.worstUsd ?? 0) }),
    tasks: taskPlans,
    providers: providerPlans,
    leastElapsedMs,
    boundBy,
  };
}

/**
 * The simulated provider's answer to `request`: a value of the task's schema made of the article's
 * own words (a lead-sentence summary, five keywords, a label). Undefined for a schema the
 * simulation cannot fill, whose answer is then counted at its cap.
 */
function typicalAnswer(request: LlmRequest): unknown {
  try {
    // As the simulated provider answers with its default seed: a typical answer, not the one a run will get.
    return simulatedAnswer(request, SIMULATED_DEFAULTS.seed);
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    return undefined;
  }
}

function providerPlan(setup: ProviderSetup, taskPlans: readonly TaskEstimate[]): ProviderEstimate {
  const name = setup.provider.name;
  const mine = taskPlans.filter((plan) => plan.provider === name);
  const cost = {
    requests: mine.reduce((total, plan) => total + plan.calls, 0),
    inputTokens: mine.reduce((total, plan) => total + plan.inputTokens, 0),
    outputTokens: mine.reduce((total, plan) => total + plan.typicalOutputTokens, 0),
  };
  const limits = specsOf(setup.limits).map((spec): LimitEstimate => {
    const amount = amountOf(spec.kind, cost);
    const floorMs = spec.rate === Infinity ? 0 : (Math.max(0, amount - spec.burst) * 1000) / spec.rate;
    return { kind: spec.kind, rate: spec.rate, burst: spec.burst, amount, floorMs };
  });
  return { name, calls: cost.requests, limits, floorMs: Math.max(0, ...limits.map((limit) => limit.floorMs)) };
}
