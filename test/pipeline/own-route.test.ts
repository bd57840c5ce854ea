// A route of one's own in a run: a cheapest-first choice among gates of one's own making, through
// the run's call loop (its retries, its cache), admission and figures, as a pool's would be.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import { ServerError } from '../../src/provider/provider.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { requestLimit, type CallCost } from '../../src/quota/provider-limits.ts';
import type { Route, RouteCall, RouteChoice } from '../../src/route/route.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';
import { drive, ScriptedProvider, type Step } from '../../src/testing/scripted-provider.ts';
import { RunEvents } from '../../src/pipeline/run-events.ts';

/**
 * The cheapest gate that can grant the call in time, else the one that grants soonest, those the call
 * has failed on last: what a person paying per token would write. It only chooses; the loop makes the call.
 */
class CheapestFirst implements Route {
  readonly name = 'cheapest';
  readonly gates: readonly CallGate[];
  readonly #clock: ManualClock;

  constructor(gates: readonly CallGate[], clock: ManualClock) {
    const price = (gate: CallGate) => (gate.price?.inputPerMTok ?? 0) + (gate.price?.outputPerMTok ?? 0);
    this.gates = [...gates].sort((a, b) => price(a) - price(b));
    this.#clock = clock;
  }

  choose(call: RouteCall): RouteChoice {
    const open = this.gates.filter((gate) => gate.circuitWaitMs() === 0 && !call.refusedBy(gate));
    if (open.length === 0) return 'wait';
    const waitOf = (gate: CallGate) =>
      Math.max(gate.backlogMs(1 + gate.arriving, gate.typicalCost()), (call.retryAtMs(gate) ?? 0) - this.#clock.now());
    // A gate the call has failed on goes last.
    const untried = open.filter((gate) => call.retryAtMs(gate) === undefined);
    const candidates = untried.length > 0 ? untried : open;
    const withinMs = call.withinMs();
    return (
      candidates.find((gate) => waitOf(gate) <= withinMs) ?? candidates.reduce((best, gate) => (waitOf(gate) < waitOf(best) ? gate : best))
    );
  }

  typicalCost(): CallCost {
    return this.gates[0]!.typicalCost();
  }

  /** The gates together: the soonest any one of them grants them all is a bound, and enough for admission here. */
  backlogMs(calls: number, perCall?: CallCost): number {
    return Math.min(...this.gates.map((gate) => gate.backlogMs(calls, perCall)));
  }

  circuitWaitMs(): number {
    return Math.min(...this.gates.map((gate) => gate.circuitWaitMs()));
  }

  onCircuitChange(listener: () => void): () => void {
    const stops = this.gates.map((gate) => gate.onCircuitChange(listener));
    return () => {
      for (const stop of stops) stop();
    };
  }
}

const TASKS = defineTasks([
  {
    name: 'topic',
    prompt: 'The topic of: {{title}}',
    schema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'], additionalProperties: false },
  },
]);
const articles = (count: number) => Array.from({ length: count }, (_, i) => ({ id: String(i), title: `Title ${i}`, content: 'Body.' }));

function gates(clock: ManualClock, options: { cheapScript?: readonly Step[]; budget?: LocalBudget } = {}) {
  const cheapProvider = new ScriptedProvider({ name: 'cheap', clock, script: options.cheapScript ?? [{ latencyMs: 10 }] });
  const dearProvider = new ScriptedProvider({ name: 'dear', clock, script: [{ latencyMs: 10 }] });
  const cheap = new CallGate({
    provider: cheapProvider,
    limits: requestLimit(10, 1),
    clock,
    price: { inputPerMTok: 0.1, outputPerMTok: 0.4 },
    budget: options.budget,
  });
  const dear = new CallGate({
    provider: dearProvider,
    limits: requestLimit(Infinity, 1),
    clock,
    price: { inputPerMTok: 3, outputPerMTok: 15 },
    budget: options.budget,
  });
  return { cheap, dear, cheapProvider, dearProvider };
}

/** A run's events whose attempts go into `attempts`. */
function attemptsInto(attempts: AttemptEvent[]): RunEvents {
  const events = new RunEvents();
  events.on('attempt', (event) => void attempts.push(event));
  return events;
}

describe('runPipeline with a route of one’s own', () => {
  it('a cheapest-first route: the cheap gate takes what it can grant within the deadline, the dear one the rest', async () => {
    const clock = new ManualClock();
    const { cheap, dear, cheapProvider, dearProvider } = gates(clock);
    const results: ArticleResult[] = [];
    const summary = await drive(
      clock,
      runPipeline({
        source: articles(30),
        tasks: TASKS,
        providers: [{ provider: new ScriptedProvider({ name: 'unused', clock }), limits: requestLimit(1, 1) }],
        routes: { topic: new CheapestFirst([dear, cheap], clock) },
        workers: 30,
        timeoutMs: 1000,
        clock,
        onResult: (result) => void results.push(result),
      }),
    );
    expect(summary).toMatchObject({ succeeded: 30, calls: 30 });
    // Within its 1 s less the call's share: the cheap one's burst and some of its 10/s; the dear one took the rest at once.
    expect(cheapProvider.calls.length).toBeGreaterThanOrEqual(5);
    expect(cheapProvider.calls.length).toBeLessThanOrEqual(11);
    expect(cheapProvider.calls.length + dearProvider.calls.length).toBe(30);
    expect(results.filter((result) => result.servedBy?.topic === 'cheap')).toHaveLength(cheapProvider.calls.length);
    // Its gates are the run's to report, priced, and its name the task's.
    expect(summary.providers.map((provider) => provider.name)).toEqual(['unused', 'cheap', 'dear']);
    expect(summary.providers.find((provider) => provider.name === 'cheap')).toMatchObject({ calls: cheapProvider.calls.length });
    expect(summary.costUsd).toBeGreaterThan(0);
    expect(results[0]!.fingerprints?.topic).toMatch(/^[0-9a-f]{8}$/);
    // The run's plan knows the route: its gates are whom the task may go to, priced.
    const plan = planRun({
      tasks: TASKS,
      providers: [{ provider: new ScriptedProvider({ name: 'unused', clock }), limits: requestLimit(1, 1) }],
      routes: { topic: new CheapestFirst([dear, cheap], clock) },
    });
    expect(plan.routes.get('topic')).toBe('cheapest');
    expect(plan.servers.get('topic')!.map((setup) => setup.provider.name)).toEqual(['cheap', 'dear']);
    expect(plan.fingerprints.topic).toBe(results[0]!.fingerprints!.topic);
  });

  it('its calls go through the run’s loop: a failure on the cheap gate is retried on the dear one at once, by the run’s retry policy', async () => {
    const clock = new ManualClock();
    const { cheap, dear, dearProvider } = gates(clock, { cheapScript: [{ error: new ServerError() }] });
    const events: AttemptEvent[] = [];
    const results: ArticleResult[] = [];
    await drive(
      clock,
      runPipeline({
        source: articles(1),
        tasks: TASKS,
        providers: [{ provider: new ScriptedProvider({ name: 'unused', clock }), limits: requestLimit(1, 1) }],
        routes: { topic: new CheapestFirst([cheap, dear], clock) },
        retry: { maxAttempts: 2, backoff: () => 500 },
        clock,
        events: attemptsInto(events),
        onResult: (result) => void results.push(result),
      }),
    );
    expect(events.map((event) => [event.provider, event.outcome, event.retryInMs])).toEqual([
      ['cheap', 'server-error', 0],
      ['dear', 'ok', undefined],
    ]);
    expect(dearProvider.calls[0]!.atMs).toBe(0);
    expect(results[0]).toMatchObject({ status: 'succeeded', attempts: 2, servedBy: { topic: 'dear' } });
  });

  it('is refused with a budget its gates were not made with, and with a name the run’s providers have', async () => {
    const clock = new ManualClock();
    const budget = new LocalBudget({ maxUsd: 1 });
    const { cheap, dear } = gates(clock);
    const run = (route: Route, provider = 'unused') =>
      runPipeline({
        source: articles(1),
        tasks: TASKS,
        providers: [
          {
            provider: new ScriptedProvider({ name: provider, clock }),
            limits: requestLimit(1, 1),
            price: { inputPerMTok: 1, outputPerMTok: 1 },
          },
        ],
        routes: { topic: route },
        budget,
        clock,
      });
    await expect(run(new CheapestFirst([cheap, dear], clock))).rejects.toThrow(
      /^Expected the gate "cheap" of the route of task "topic" to be made with the run's budget/,
    );
    const held = gates(clock, { budget });
    await expect(run(new CheapestFirst([held.cheap, held.dear], clock), 'cheapest')).rejects.toThrow(
      /^Expected the route of task "topic"'s name to be one no provider, pool or other route of the run has, got "cheapest"/,
    );
  });
});
