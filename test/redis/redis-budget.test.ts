import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLimiterUnavailableError } from '../../src/limiter/limiter-unavailable-error.ts';
import { type Budget, NANO_USD } from '../../src/quota/budget.ts';
import { connectRedis, RedisBudget, type RedisConnection } from '../../src/redis/index.ts';
import { FAST, runCli } from '../cli/run-cli.ts';
import { startRedis, type TestRedis } from './redis-server.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';
import { OpenAiProvider } from '../../src/vendors/openai/openai-provider.ts';
import { refusedUrl } from '../vendors/scripted-api-server.ts';

let redis: TestRedis;
let connections: RedisConnection[];
beforeAll(async () => {
  redis = await startRedis();
  connections = await Promise.all([connectRedis(redis.url), connectRedis(redis.url)]);
});
afterAll(async () => {
  await Promise.all(connections.map((connection) => connection.close()));
  await redis.stop();
});

let keys = 0;
const budgets = (maxUsd: number) => {
  const key = `budget-${++keys}`;
  return connections.map((connection) => new RedisBudget({ connection, key, maxUsd, settleWaitMs: 0 }));
};

describe('RedisBudget', () => {
  it('holds what fits, refuses what does not with nothing held, and gives back on settle what a call did not cost — one budget for every process', async () => {
    const [a, b] = budgets(1);
    const first = await a!.reserve(0.6 * NANO_USD);
    expect(first).toBeDefined();
    // The other process sees the same: 0.6 held, so 0.5 waits (here not at all) for it to settle.
    expect(await b!.reserve(0.5 * NANO_USD)).toBeUndefined();
    expect(b!.heldUsd).toBeCloseTo(0.6, 9);
    expect(b!.spentUsd).toBe(0);
    first!.settle(0.1 * NANO_USD);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await b!.reserve(0.5 * NANO_USD);
    expect(second).toBeDefined();
    expect(b!.spentUsd).toBeCloseTo(0.1, 9);
    expect(b!.heldUsd).toBeCloseTo(0.5, 9);
    // Settled once: a second settle gives nothing back.
    first!.settle(0);
    second!.settle(0.5 * NANO_USD);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 0.6 spent, nothing held: 0.41 will never fit, and is refused without waiting (a minute here).
    const patient = new RedisBudget({ connection: connections[0]!, key: `budget-${keys}`, maxUsd: 1, settleWaitMs: 60_000 });
    const started = performance.now();
    expect(await patient.reserve(0.41 * NANO_USD)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(patient.spentUsd).toBeCloseTo(0.6, 9);
  });

  it('waits for another process’s hold to settle when it leaves no room, then holds: the budget is spent, not held', async () => {
    const key = `budget-${++keys}`;
    const a = new RedisBudget({ connection: connections[0]!, key, maxUsd: 1 });
    const b = new RedisBudget({ connection: connections[1]!, key, maxUsd: 1, settleWaitMs: 30_000 });
    const first = (await a.reserve(0.9 * NANO_USD))!;
    setTimeout(() => first.settle(0.03 * NANO_USD), 200);
    const started = performance.now();
    const second = await b.reserve(0.9 * NANO_USD);
    expect(second).toBeDefined();
    // Physics: it could not hold before the settle.
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(b.spentUsd).toBeCloseTo(0.03, 9);
  });

  it('waits at most settleWaitMs for holds that never settle (a process that died holding), then refuses', async () => {
    const key = `budget-${++keys}`;
    const a = new RedisBudget({ connection: connections[0]!, key, maxUsd: 1 });
    const b = new RedisBudget({ connection: connections[1]!, key, maxUsd: 1, settleWaitMs: 300 });
    expect(await a.reserve(0.9 * NANO_USD)).toBeDefined();
    const started = performance.now();
    expect(await b.reserve(0.5 * NANO_USD)).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(b.heldUsd).toBeCloseTo(0.9, 9);
  });

  it('never holds more than the budget, however many holds race for it from two processes', async () => {
    const [a, b] = budgets(0.5);
    const holds = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a! : b!).reserve(0.01 * NANO_USD)));
    expect(holds.filter((hold) => hold !== undefined)).toHaveLength(50);
  });

  it('keeps a call of unknown fate apart from what was spent, counted against the budget for every process; a call never sent gives all back', async () => {
    const [a, b] = budgets(1);
    const unsent = (await a!.reserve(0.4 * NANO_USD))!;
    unsent.settle(0, 0);
    const lost = (await a!.reserve(0.4 * NANO_USD))!;
    // Reset mid-request: its whole worst case kept, as unknown.
    lost.settle(0, 0.4 * NANO_USD);
    const answered = (await b!.reserve(0.4 * NANO_USD))!;
    answered.settle(0.1 * NANO_USD, 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 0.1 spent, 0.4 unknown: 0.5 left, so 0.6 never fits.
    expect(await b!.reserve(0.6 * NANO_USD)).toBeUndefined();
    expect(b!.spentUsd).toBeCloseTo(0.1, 9);
    expect(b!.unknownUsd).toBeCloseTo(0.4, 9);
    expect(b!.heldUsd).toBe(0);
    const last = await a!.reserve(0.5 * NANO_USD);
    expect(last).toBeDefined();
    expect(a!.unknownUsd).toBeCloseTo(0.4, 9);
    expect(a!.spentUsd).toBeCloseTo(0.1, 9);
  });

  it('a run whose calls are refused before they are written takes nothing from the shared budget', async () => {
    const [shared] = budgets(0.000_1);
    // Each call's hold, as the budget is asked for it.
    const holds: number[] = [];
    const budget: Budget = {
      maxUsd: shared!.maxUsd,
      get spentUsd() {
        return shared!.spentUsd;
      },
      get heldUsd() {
        return shared!.heldUsd;
      },
      reserve: (nanoUsd, options) => {
        holds.push(nanoUsd);
        return shared!.reserve(nanoUsd, options);
      },
    };
    const summary = await runPipeline({
      source: Array.from({ length: 4 }, (_, i) => ({ id: String(i), title: 'One title', content: 'x' })),
      tasks: defineTasks([{ name: 'summarize', prompt: 'Summarise: {{title}}', schema: { type: 'object' }, maxOutputTokens: 2 }]),
      providers: [
        {
          provider: new OpenAiProvider({ apiKey: 'sk-0123456789', baseUrl: `${await refusedUrl()}/v1` }),
          limits: requestLimit(Infinity, 1),
          price: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
        },
      ],
      budget,
      workers: 1,
      retry: { maxAttempts: 2, backoff: () => 0 },
    });
    // Every call went, though the budget holds fewer of their worst cases than were made.
    expect(summary.calls).toBe(8);
    expect(holds).toHaveLength(8);
    expect(holds.reduce((sum, hold) => sum + hold, 0)).toBeGreaterThan(shared!.maxUsd * NANO_USD);
    expect(summary.stoppedBy).toBeUndefined();
    expect(summary.costUsd).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const inspect = new Redis(redis.url);
    const stored = await inspect.mget(shared!.key, `${shared!.key}:held`, `${shared!.key}:unknown`).finally(() => inspect.disconnect());
    expect(stored.map(Number)).toEqual([0, 0, 0]);
  });

  it('fails with LimiterUnavailableError when Redis does not answer, as the shared limits do', async () => {
    const closed = await connectRedis(redis.url);
    await closed.close();
    const error = await new RedisBudget({ connection: closed, key: 'gone', maxUsd: 1 }).reserve(1).catch((e: unknown) => e);
    expect(isLimiterUnavailableError(error)).toBe(true);
  });

  it('refuses a key with braces, a budget that is not positive, and no connection', () => {
    const [connection] = connections;
    expect(() => new RedisBudget({ connection: connection!, key: 'a{b}', maxUsd: 1 })).toThrow(TypeError);
    expect(() => new RedisBudget({ connection: connection!, key: 'a', maxUsd: 0 })).toThrow(/maxUsd/);
    expect(() => new RedisBudget({ connection: undefined as never, key: 'a', maxUsd: 1 })).toThrow(/connection/);
  });
});

describe('news-processor --redis --budget-key', () => {
  it('two processes on one budget spend it together, never more in total', { timeout: 120_000 }, async () => {
    const args = [
      ...FAST,
      `--redis=${redis.url}`,
      '--budget-key=shared-run',
      '--max-cost=3',
      '--price-input=400',
      '--price-output=1600',
      '--articles=20',
      '--workers=2',
      '--json',
    ];
    const runs = await Promise.all([runCli(args), runCli(args)]);
    const summaries = runs.map((run) => JSON.parse(run.stdout) as { costUsd: number; stoppedBy?: { by: string } });
    expect(runs.map((run) => run.code)).toEqual([1, 1]);
    expect(summaries.map((summary) => summary.stoppedBy?.by)).toEqual(['budget', 'budget']);
    expect(summaries[0]!.costUsd + summaries[1]!.costUsd).toBeLessThanOrEqual(3);
    // Both spent from the one budget, and most of it: holds in flight are waited for, not taken
    // for spent, so they stop only when one more call's worst case (~$0.6 here) does not fit.
    expect(summaries[0]!.costUsd + summaries[1]!.costUsd).toBeGreaterThan(3 - 1);
    // What Redis holds is what the two spent, every hold settled.
    const inspect = new Redis(redis.url);
    const used = Number(await inspect.get('news-processor:{budget:shared-run}').finally(() => inspect.disconnect()));
    expect(Math.abs(used / NANO_USD - (summaries[0]!.costUsd + summaries[1]!.costUsd))).toBeLessThan(1e-6 * 100);
  });
});
