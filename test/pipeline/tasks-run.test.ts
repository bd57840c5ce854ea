import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import { inputTokenBound } from '../../src/gate/call-cost.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { CancelledError, runPipeline } from '../../src/pipeline/run.ts';
import {
  ServerError,
  TimeoutError,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type Provider,
  type RequestFraming,
} from '../../src/provider/provider.ts';
import { defineTasks, type TaskSpec } from '../../src/tasks/task-set.ts';
import { drive, ScriptedProvider } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

const schema = (property: string) =>
  ({ type: 'object', properties: { [property]: { type: 'string' } }, required: [property], additionalProperties: false }) as const;

/** Two independent tasks, and one that needs both: entities and topic first, then the headline. */
const DIAMOND: TaskSpec[] = [
  { name: 'entities', prompt: 'People in: {{content}}', schema: schema('people') },
  { name: 'topic', prompt: 'Topic of: {{title}}', schema: schema('topic') },
  {
    name: 'headline',
    dependsOn: ['entities', 'topic'],
    prompt: 'A headline about {{tasks.topic.topic}} naming {{tasks.entities.people}}: {{content}}',
    schema: schema('headline'),
  },
];

const articles = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ id: String(i + 1), title: `Title ${i + 1}`, content: `Body ${i + 1}.` }));

async function run(options: {
  tasks?: readonly TaskSpec[];
  provider?: Provider;
  source?: Parameters<typeof runPipeline>[0]['source'];
  clock?: ManualClock;
}) {
  const clock = options.clock ?? new ManualClock();
  const provider = options.provider ?? new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs: 100 }] });
  const results: ArticleResult[] = [];
  const summary = await drive(
    clock,
    runPipeline({
      source: options.source ?? articles(1),
      tasks: defineTasks(options.tasks ?? DIAMOND),
      providers: [{ provider, limits: requestLimit(Infinity, 1) }],
      clock,
      onResult: (result) => void results.push(result),
    }),
  );
  return { summary, results, provider };
}

describe('runPipeline() - tasks as data', () => {
  it('runs an article’s independent tasks at once, and a task once what it depends on is done, with their outputs in its prompt', async () => {
    const { results, provider } = await run({});
    const calls = (provider as ScriptedProvider).calls;
    expect(calls.map((c) => [c.request.task, c.atMs])).toEqual([
      ['entities', 0],
      ['topic', 0],
      ['headline', 100],
    ]);
    const outputs = results[0]!.outputs as { entities: { people: string }; topic: { topic: string } };
    expect(calls[2]!.request.prompt).toBe(`A headline about ${outputs.topic.topic} naming ${outputs.entities.people}: Body 1.`);
    expect(results[0]).toMatchObject({ status: 'succeeded', attempts: 3, outputs: { entities: {}, topic: {}, headline: {} } });
    expect(Object.keys(results[0]!.outputs)).toEqual(['entities', 'topic', 'headline']);
  });

  it('fails an article that lacks a field its tasks read before any call: a dead letter naming the field and the task', async () => {
    const { results, provider, summary } = await run({ source: [{ id: '1', title: 'No body' }] });
    expect((provider as ScriptedProvider).calls).toHaveLength(0);
    expect(results[0]).toMatchObject({
      status: 'failed',
      attempts: 0,
      outputs: {},
      error: { type: 'MissingFieldError', message: 'missing field "content" for task entities', task: 'entities' },
    });
    expect(summary).toMatchObject({ failed: 1, calls: 0, failureReasons: { MissingFieldError: 1 } });
  });

  it('keeps the outputs of the tasks that succeeded when a later one fails, and names the task it failed in', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({
      name: 'p',
      clock,
      script: [{ latencyMs: 10 }, { latencyMs: 10 }, { error: new ServerError('503 down', { retryable: false }) }],
    });
    const { results } = await run({ clock, provider });
    expect(results[0]).toMatchObject({ status: 'failed', error: { type: 'ServerError', task: 'headline' } });
    expect(Object.keys(results[0]!.outputs).sort()).toEqual(['entities', 'topic']);
  });

  it('runs only the tasks an article has no output for yet (a resume): the others are kept, not paid for again', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock, script: [{ latencyMs: 10 }] });
    const outputs = { entities: { people: 'Ada' }, topic: { topic: 'rain' } };
    const { results } = await run({ clock, provider, source: [{ ...articles(1)[0]!, outputs }] });
    expect(provider.calls.map((c) => c.request.task)).toEqual(['headline']);
    expect(provider.calls[0]!.request.prompt).toBe('A headline about rain naming Ada: Body 1.');
    expect(results[0]).toMatchObject({ status: 'succeeded', attempts: 1, outputs: { ...outputs, headline: {} } });
  });

  it('routes each task to the provider it names', async () => {
    const clock = new ManualClock();
    const fast = new ScriptedProvider({ name: 'fast', clock });
    const careful = new ScriptedProvider({ name: 'careful', clock });
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(2),
        tasks: defineTasks(DIAMOND.map((spec) => (spec.name === 'headline' ? { ...spec, provider: 'careful' } : spec))),
        providers: [
          { provider: fast, limits: requestLimit(Infinity, 1) },
          { provider: careful, limits: requestLimit(Infinity, 1) },
        ],
        clock,
      }),
    );
    expect(fast.calls.map((c) => c.request.task).sort()).toEqual(['entities', 'entities', 'topic', 'topic']);
    expect(careful.calls.map((c) => c.request.task)).toEqual(['headline', 'headline']);
    expect(summary.tasks.map((t) => [t.name, t.calls])).toEqual([
      ['entities', 2],
      ['topic', 2],
      ['headline', 2],
    ]);
  });
});

/** Answers at once with the usage a script says; `undefined` usage stands for a call that timed out. */
class UsageProvider implements Provider {
  readonly name = 'priced';
  framing: RequestFraming | undefined;
  calls = 0;
  constructor(
    private readonly clock: ManualClock,
    private readonly usageOf: (request: LlmRequest, call: number) => { inputTokens: number; outputTokens: number } | 'timeout' | 'error',
  ) {}

  lastRequest: LlmRequest | undefined;

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    this.lastRequest = request;
    const usage = this.usageOf(request, this.calls++);
    await sleep(this.clock, 5, options.signal);
    if (usage === 'timeout') throw new TimeoutError('no answer', { retryable: true });
    if (usage === 'error') throw new ServerError('503', { status: 503 });
    const property = Object.keys((request.schema as { properties: object }).properties)[0]!;
    return { output: { [property]: 'x' }, usage };
  }
}

const PRICE = { inputPerMTok: 400, outputPerMTok: 1600 };

describe('runPipeline() - what a run cost, and a budget', () => {
  it('says what every call cost at the price, in each result, per task and per provider', async () => {
    const clock = new ManualClock();
    const provider = new UsageProvider(clock, () => ({ inputTokens: 1000, outputTokens: 100 }));
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(2),
        tasks: defineTasks(DIAMOND),
        providers: [{ provider, limits: requestLimit(Infinity, 1), price: PRICE }],
        clock,
        onResult: (result) => void results.push(result),
      }),
    );
    // 1000 × $400/M + 100 × $1600/M = $0.56 a call; three calls an article.
    expect(results.map((r) => r.costUsd)).toEqual([1.68, 1.68]);
    expect(summary.costUsd).toBeCloseTo(3.36, 9);
    expect(summary.providers[0]!.costUsd).toBeCloseTo(3.36, 9);
    expect(summary.tasks.map((t) => t.costUsd)).toEqual([1.12, 1.12, 1.12]);
  });

  it('says nothing of cost without a price: absent, not zero', async () => {
    const { summary, results } = await run({});
    expect(summary).not.toHaveProperty('costUsd');
    expect(summary.providers[0]).not.toHaveProperty('costUsd');
    expect(summary.tasks[0]).not.toHaveProperty('costUsd');
    expect(results[0]).not.toHaveProperty('costUsd');
  });

  it('stops intake when the next call cannot be covered: stoppedBy budget, the rest not started, what was spent within the budget', async () => {
    const clock = new ManualClock();
    const provider = new UsageProvider(clock, () => ({ inputTokens: 1000, outputTokens: 100 }));
    const results: ArticleResult[] = [];
    const source = articles(20);
    const budget = new LocalBudget({ maxUsd: 5 });
    const summary = await drive(
      clock,
      runPipeline({
        source,
        total: source.length,
        tasks: defineTasks(DIAMOND),
        providers: [{ provider, limits: requestLimit(Infinity, 1), price: PRICE, maxOutputTokens: 100 }],
        budget,
        workers: 2,
        clock,
        onResult: (result) => void results.push(result),
      }),
    );
    expect(summary.stoppedBy).toMatchObject({ by: 'budget', type: 'BudgetExhaustedError' });
    expect(summary.notStarted).toBeGreaterThan(0);
    expect(summary.succeeded + summary.failed + summary.cancelled + summary.notStarted!).toBe(20);
    expect(results.filter((r) => r.status === 'cancelled').every((r) => r.error?.type === 'BudgetExhaustedError')).toBe(true);
    expect(summary.costUsd!).toBeLessThanOrEqual(5);
    expect(budget.spentUsd).toBeLessThanOrEqual(5);
    expect(summary.budget).toEqual({ maxUsd: 5, spentUsd: budget.spentUsd, unknownUsd: 0 });
  });

  it('a call cancelled in flight (Ctrl-C) is held at its worst case — it may have been billed — but apart from what was spent: in its result line, the summary and the budget alike', async () => {
    const clock = new ManualClock();
    const provider = new UsageProvider(clock, () => ({ inputTokens: 1000, outputTokens: 100 }));
    const results: ArticleResult[] = [];
    const budget = new LocalBudget({ maxUsd: 50 });
    const controller = new AbortController();
    // The calls take 5 ms: at 7 ms each article's headline is in flight.
    clock.setTimer(7, () => controller.abort(new CancelledError('interrupted (SIGINT)')));
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(4),
        tasks: defineTasks(DIAMOND),
        providers: [{ provider, limits: requestLimit(Infinity, 1), price: PRICE, maxOutputTokens: 100 }],
        budget,
        workers: 4,
        signal: controller.signal,
        clock,
        onResult: (result) => void results.push(result),
      }),
    );
    expect(summary.interrupted).toBe(true);
    expect(results.map((r) => r.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    const nano = (usd: number) => Math.round(usd * 1e9);
    // Two calls each answered ($0.56 each), and the headline cut off in flight at its worst case.
    const worstNano = Math.ceil((inputTokenBound(provider.lastRequest!) * 400 + 100 * 1600) * 1000 - 1e-6);
    for (const result of results) {
      expect(nano(result.costUsd!)).toBe(2 * 560_000_000);
      expect(nano(result.unknownCostUsd!)).toBe(worstNano);
    }
    expect(nano(summary.costUsd!)).toBe(4 * 2 * 560_000_000);
    expect(nano(summary.unknownCostUsd!)).toBe(4 * worstNano);
    expect(nano(budget.spentUsd)).toBe(nano(summary.costUsd!));
    expect(nano(budget.unknownUsd)).toBe(nano(summary.unknownCostUsd!));
    expect(summary.budget).toEqual({ maxUsd: 50, spentUsd: budget.spentUsd, unknownUsd: budget.unknownUsd });
  });

  it('a budget the job had spent part of before (a resume) counts it: only the rest is there to spend', async () => {
    const clock = new ManualClock();
    const provider = new UsageProvider(clock, () => ({ inputTokens: 1000, outputTokens: 100 }));
    const budget = new LocalBudget({ maxUsd: 5, spentUsd: 3 });
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(20),
        tasks: defineTasks(DIAMOND),
        providers: [{ provider, limits: requestLimit(Infinity, 1), price: PRICE, maxOutputTokens: 100 }],
        budget,
        workers: 1,
        clock,
      }),
    );
    expect(summary.stoppedBy).toMatchObject({ by: 'budget' });
    expect(summary.costUsd!).toBeLessThanOrEqual(2);
    expect(summary.costUsd!).toBeGreaterThan(1);
    expect(budget.spentUsd).toBeCloseTo(3 + summary.costUsd!, 9);
    expect(() => new LocalBudget({ maxUsd: 5, spentUsd: -1 })).toThrow(/^Expected spentUsd to be/);
  });

  it('spends the budget, not holds it: goes on while holds in flight settle, and stops only when what is spent leaves no room for one more call', async () => {
    // The case as a user met it: 600 articles, 8 workers, --max-cost=10, a call whose worst case is
    // $1.35 billed $0.03 — which once stopped after 7 calls, $0.20 spent, with "$9.47 spent or held".
    const issueCase = { workers: 8, maxUsd: 10, worstUsd: 1.35, billedShare: 0.03 / 1.35 };
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          workers: fc.integer({ min: 1, max: 12 }),
          maxUsd: fc.double({ min: 2, max: 10, noNaN: true }),
          worstUsd: fc.double({ min: 0.2, max: 1.5, noNaN: true }),
          billedShare: fc.double({ min: 0.005, max: 0.1, noNaN: true }),
        }),
        async ({ workers, maxUsd, worstUsd, billedShare }) => {
          // Work enough to spend it all.
          fc.pre(600 * worstUsd * billedShare > 1.2 * maxUsd);
          const clock = new ManualClock();
          const maxOutputTokens = 1000;
          // The output cap at this price is the call's whole worst case but for its prompt's few bytes.
          const price = { inputPerMTok: 1, outputPerMTok: (worstUsd * 1e6) / maxOutputTokens };
          let worstNano = 0;
          const provider = new UsageProvider(clock, (request) => {
            const bound = inputTokenBound(request, provider.framing);
            worstNano = Math.max(worstNano, Math.ceil((bound * price.inputPerMTok + maxOutputTokens * price.outputPerMTok) * 1000));
            return { inputTokens: Math.floor(billedShare * bound), outputTokens: Math.floor(billedShare * maxOutputTokens) };
          });
          provider.framing = { perMessageTokens: 0, perRequestTokens: 0 };
          const budget = new LocalBudget({ maxUsd });
          const summary = await drive(
            clock,
            runPipeline({
              source: articles(600),
              tasks: defineTasks([{ name: 'topic', prompt: 'Topic of: {{title}}', schema: schema('topic') }]),
              providers: [{ provider, limits: requestLimit(Infinity, 1), price, maxOutputTokens }],
              budget,
              workers,
              clock,
            }),
          );
          expect(summary.stoppedBy).toMatchObject({ by: 'budget', type: 'BudgetExhaustedError' });
          // Never more than the budget, and within one call's worst case of it.
          expect(budget.spentUsd).toBeLessThanOrEqual(maxUsd + 1e-9);
          expect(budget.spentUsd).toBeGreaterThan(maxUsd - worstNano / 1e9);
          expect(budget.heldUsd).toBe(0);
          expect(summary.costUsd!).toBeCloseTo(budget.spentUsd, 9);
        },
      ),
      { numRuns: 25, examples: [[issueCase]] },
    );
  }, 120_000);

  it('never spends more than the budget, for any usages, failures, retries and any number of workers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          workers: fc.integer({ min: 1, max: 12 }),
          maxUsd: fc.double({ min: 0.002, max: 0.2, noNaN: true }),
          maxOutputTokens: fc.integer({ min: 1, max: 400 }),
          // Per call: a share of the most input and output tokens it may use, or a failure.
          calls: fc.array(
            fc.oneof(
              fc.record({ input: fc.double({ min: 0, max: 1, noNaN: true }), output: fc.double({ min: 0, max: 1, noNaN: true }) }),
              fc.constantFrom('timeout' as const, 'error' as const),
            ),
            { minLength: 1, maxLength: 40 },
          ),
        }),
        async ({ workers, maxUsd, maxOutputTokens, calls }) => {
          const clock = new ManualClock();
          let billedNano = 0;
          const provider = new UsageProvider(clock, (request, n) => {
            const call = calls[n % calls.length]!;
            if (typeof call === 'string') {
              // A timed-out call may have been billed in full: count its worst case.
              if (call === 'timeout') billedNano += (inputTokenBound(request) * 400 + maxOutputTokens * 1600) * 1000;
              return call;
            }
            const usage = {
              inputTokens: Math.floor(call.input * inputTokenBound(request)),
              outputTokens: Math.floor(call.output * maxOutputTokens),
            };
            billedNano += (usage.inputTokens * 400 + usage.outputTokens * 1600) * 1000;
            return usage;
          });
          const budget = new LocalBudget({ maxUsd });
          const results: ArticleResult[] = [];
          const summary = await drive(
            clock,
            runPipeline({
              source: articles(30),
              tasks: defineTasks(DIAMOND),
              providers: [{ provider, limits: requestLimit(Infinity, 1), price: PRICE, maxOutputTokens }],
              budget,
              workers,
              timeoutMs: 60_000,
              retry: { maxAttempts: 3, backoff: () => 1 },
              clock,
              onResult: (result) => void results.push(result),
            }),
          );
          expect(billedNano / 1e9).toBeLessThanOrEqual(maxUsd + 1e-9);
          expect(budget.spentUsd).toBeLessThanOrEqual(maxUsd + 1e-9);
          expect(summary.costUsd!).toBeLessThanOrEqual(maxUsd + 1e-9);
          // One figure: what was billed is the run's cost, the budget's spend and its result lines' sum.
          // (+ 0: a usage of nothing costs -0 nano-dollars, rounded up from -1e-6.)
          const nano = (usd: number) => Math.round(usd * 1e9) + 0;
          expect(nano(summary.costUsd!)).toBe(billedNano + 0);
          expect(nano(budget.spentUsd)).toBe(billedNano + 0);
          expect(results.reduce((sum, r) => sum + nano(r.costUsd!), 0)).toBe(billedNano + 0);
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
