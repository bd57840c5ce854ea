// RunEvents: one typed stream a live run and a batch run tell, its listeners added and stopped; and
// what a run tells it, in order, with its counts up to date before each event.
import { describe, expect, it } from 'vitest';
import { runBatch } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { ManualClock } from '../../src/clock.ts';
import { RunEvents, type BudgetEvent, type PoolChange, type RunStart } from '../../src/pipeline/run-events.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { AuthenticationError } from '../../src/provider/provider.ts';
import { LocalBudget, NANO_USD } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { drive, ScriptedProvider } from '../../src/testing/scripted-provider.ts';

describe('RunEvents', () => {
  it('on() calls its listener at each event, in the order added, until the function it returned is called', () => {
    const events = new RunEvents();
    const told: string[] = [];
    const stopFirst = events.on('budget', (event) => told.push(`first ${event.type}`));
    events.on('budget', (event) => told.push(`second ${event.type}`));
    events.emit('budget', { type: 'held', atMs: 0, nanoUsd: 1 });
    stopFirst();
    stopFirst();
    events.emit('budget', { type: 'spent', atMs: 1, neededNanoUsd: 2 });
    expect(told).toEqual(['first held', 'second held', 'second spent']);
    expect(events.listens('budget')).toBe(true);
    expect(events.listens('attempt')).toBe(false);
  });

  it('a listener that stops listening while an event is told leaves that telling as it was', () => {
    const events = new RunEvents();
    const told: string[] = [];
    const stop = events.on('runEnded', () => {
      told.push('a');
      stopB();
    });
    const stopB = events.on('runEnded', () => told.push('b'));
    events.emit('runEnded', { ending: 'finished', atMs: 0, summary: undefined });
    events.emit('runEnded', { ending: 'finished', atMs: 0, summary: undefined });
    stop();
    expect(told).toEqual(['a', 'b', 'a']);
  });

  it('observe() listens with each method an object has, as a method of it, and stops them all at once', () => {
    const events = new RunEvents();
    const observer = {
      seen: [] as string[],
      budget(event: BudgetEvent) {
        this.seen.push(event.type);
      },
      poolChange(change: PoolChange) {
        this.seen.push(change.change);
      },
    };
    const stop = events.observe(observer);
    events.emit('budget', { type: 'held', atMs: 0, nanoUsd: 1 });
    events.emit('poolChange', { pool: 'gpt', member: 'key-a', change: 'down', left: 1, atMs: 5 });
    stop();
    events.emit('budget', { type: 'held', atMs: 0, nanoUsd: 1 });
    expect(observer.seen).toEqual(['held', 'down']);
  });

  it('teller() tells an event as emit() does, to the listeners of the moment: those added after it was made too', () => {
    const events = new RunEvents();
    const tellBudget = events.teller('budget');
    const told: number[] = [];
    tellBudget({ type: 'held', atMs: 0, nanoUsd: 1 });
    const stop = events.on('budget', (event) => told.push(event.atMs));
    tellBudget({ type: 'held', atMs: 1, nanoUsd: 1 });
    stop();
    tellBudget({ type: 'held', atMs: 2, nanoUsd: 1 });
    expect(told).toEqual([1]);
  });

  it('rejects what is no event or no listener, naming what it expected', () => {
    const events = new RunEvents();
    expect(() => events.on('attempts' as 'attempt', () => {})).toThrow(/^Expected a run event \(runStarted, .*\), got "attempts"$/);
    expect(() => events.on('attempt', 'print' as never)).toThrow(TypeError);
  });
});

describe('a run told to RunEvents', () => {
  it('runPipeline tells its start, each article, send and attempt, each result and its end, in order, its counts up to date', async () => {
    const clock = new ManualClock();
    const provider = new SimulatedProvider({ clock, minLatencyMs: 10, maxLatencyMs: 10 });
    const events = new RunEvents();
    const told: string[] = [];
    let start: RunStart | undefined;
    events.observe({
      runStarted: (run) => {
        start = run;
        told.push(`runStarted ${run.mode} ${run.counts.calls().calls}`);
      },
      articleStarted: (article, workerId) => told.push(`articleStarted ${article.id} ${workerId}`),
      send: (request) => told.push(`send ${request.articleId} ${request.task} (in flight ${start!.counts.inFlight})`),
      // Counted before it is told: the attempt is in the counts the listener reads.
      attempt: (event) => told.push(`attempt ${event.articleId} ${event.task} ${event.outcome} (calls ${start!.counts.calls().calls})`),
      result: (result, end) => told.push(`result ${result.id} ${result.status} ${end.pathMs} (ended ${start!.counts.articles.succeeded})`),
      runEnded: (end) => told.push(`runEnded ${end.ending} ${end.summary?.calls}`),
    });
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(1), providers: [{ provider, limits: requestLimit(Infinity, 1) }], workers: 1, clock, events }),
    );
    expect(told).toEqual([
      'runStarted live 0',
      'articleStarted 1 0',
      'send 1 summarize (in flight 1)',
      'attempt 1 summarize ok (calls 1)',
      'send 1 sentiment (in flight 1)',
      'attempt 1 sentiment ok (calls 2)',
      'result 1 succeeded 20 (ended 1)',
      'runEnded finished 2',
    ]);
    expect(summary.calls).toBe(2);
    expect(start!.providers.get('simulated')).toBe(provider);
  });

  it('tells the budget’s moves: a hold before each call, its settling at what the call cost, and the call it could not cover', async () => {
    const clock = new ManualClock();
    const provider = new SimulatedProvider({ clock, minLatencyMs: 10, maxLatencyMs: 10 });
    const budget = new LocalBudget({ maxUsd: 0.002 });
    const events = new RunEvents();
    const moves: BudgetEvent[] = [];
    events.on('budget', (event) => moves.push(event));
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(20),
        providers: [{ provider, limits: requestLimit(Infinity, 1), price: { inputPerMTok: 1, outputPerMTok: 1 } }],
        budget,
        workers: 1,
        clock,
        events,
      }),
    );
    expect(summary.stoppedBy?.by).toBe('budget');
    expect(summary.calls).toBeGreaterThan(2);
    const held = moves.filter((move) => move.type === 'held');
    const settled = moves.filter((move) => move.type === 'settled');
    expect(held).toHaveLength(summary.calls);
    expect(settled).toHaveLength(summary.calls);
    expect(settled.reduce((sum, move) => sum + move.spentNanoUsd, 0)).toBe(Math.round(budget.spentUsd * NANO_USD));
    expect(budget.spentUsd).toBeGreaterThan(0);
    expect(moves.filter((move) => move.type === 'spent')).toHaveLength(1);
    expect(moves.at(-1)!.type).toBe('spent');
  });

  it('tells a pool member dropped, with when, and counts it dropped from then', async () => {
    const clock = new ManualClock();
    const keyA = new ScriptedProvider({ name: 'key-a', clock, script: [{ latencyMs: 10 }] });
    const keyB = new ScriptedProvider({ name: 'key-b', clock, script: [{ latencyMs: 25, error: new AuthenticationError('key refused') }] });
    const events = new RunEvents();
    const changes: PoolChange[] = [];
    let start: RunStart | undefined;
    events.on('runStarted', (run) => {
      start = run;
    });
    events.on('poolChange', (change) => changes.push(change));
    await drive(
      clock,
      runPipeline({
        source: generateArticles(4),
        providers: [
          { provider: keyA, limits: requestLimit(Infinity, 1) },
          { provider: keyB, limits: requestLimit(Infinity, 1) },
        ],
        pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
        routes: { summarize: 'gpt', sentiment: 'gpt' },
        workers: 2,
        clock,
        events,
      }),
    );
    expect(changes).toEqual([expect.objectContaining({ pool: 'gpt', member: 'key-b', change: 'dropped', left: 1, atMs: 25 })]);
    expect(start!.counts.pools).toEqual([
      {
        name: 'gpt',
        members: [
          { name: 'key-a', state: 'up', droppedAtMs: undefined },
          { name: 'key-b', state: 'dropped', droppedAtMs: 25 },
        ],
      },
    ]);
  });

  it('runBatch tells the same stream: its start, its batches as they go and end, its results, its end', async () => {
    const clock = new ManualClock();
    const api = new SimulatedBatchApi({
      provider: new SimulatedProvider({ clock, minLatencyMs: 0, maxLatencyMs: 0 }),
      durationMs: 100,
      clock,
    });
    const events = new RunEvents();
    const told: string[] = [];
    let start: RunStart | undefined;
    events.observe({
      runStarted: (run) => {
        start = run;
        told.push(`runStarted ${run.mode}`);
      },
      batch: (event) => told.push(`batch ${event.type} ${event.rows}`),
      result: (result) => told.push(`result ${result.id} ${result.status}`),
      runEnded: (end) => told.push(`runEnded ${end.ending} ${String(end.summary)}`),
    });
    await drive(clock, runBatch({ source: generateArticles(2), api, pollMs: 30, clock, events }));
    expect(told).toEqual([
      'runStarted batch',
      'batch submitted 2',
      'batch ended 2',
      'batch submitted 2',
      'batch ended 2',
      'result 1 succeeded',
      'result 2 succeeded',
      'runEnded finished undefined',
    ]);
    expect(start!.counts.articles).toEqual({ started: 2, succeeded: 2, failed: 0, cancelled: 0 });
  });
});
