// Pools on the report: each member's calls per second against its own limit, and the pool's — its
// members' together — against their limits together.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { reportCharts } from '../../src/report/report-charts.ts';
import { RunRecorder } from '../../src/report/run-recorder.ts';
import { makeTempDir, runCli } from '../cli/run-cli.ts';
import { toldRun } from './told-run.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(() => temp.remove());

const limits = (rate: number) => [{ kind: 'requests' as const, rate, burst: 1 }];

/** An answered call to `provider`, sent at `sentAtMs`. */
const call = (provider: string, sentAtMs: number): AttemptEvent => ({
  provider,
  task: 'summarize',
  articleId: 'a',
  workerId: 0,
  attempt: 1,
  outcome: 'ok',
  waitMs: 0,
  called: true,
  sentAtMs,
  latencyMs: 10,
  atMs: sentAtMs + 10,
  retryInMs: undefined,
  error: undefined,
  usage: undefined,
  costUsd: undefined,
  response: undefined,
  repair: 0,
});

/** The calls chart's lines (per-second values by series, the closing point left out) and its limits. */
function callsOf(recorder: RunRecorder) {
  const chart = reportCharts(recorder.record()).find((each) => each.id === 'calls')!;
  const layers = (chart.spec as { layer: { data: { values: Record<string, unknown>[] } }[] }).layer;
  const lines: Record<string, unknown[]> = {};
  for (const row of layers[0]!.data.values) {
    const series = row.series as string;
    lines[series] = [...(lines[series] ?? []), row.value];
  }
  for (const values of Object.values(lines)) values.pop();
  return { title: chart.title, lines, limits: layers[1]?.data.values.map((limit) => [limit.series, limit.value]) };
}

describe('the calls chart with pools', () => {
  it('draws each member against its own limit and the pool, its members summed, against theirs summed', async () => {
    const clock = new ManualClock();
    const recorder = new RunRecorder({
      clock,
      providers: [
        { name: 'key-a', limits: limits(10) },
        { name: 'key-b', limits: limits(20) },
        { name: 'solo', limits: limits(5) },
      ],
      pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
    });
    const run = toldRun([recorder], { clock });
    for (const at of [100, 200, 1100]) run.attempt(call('key-a', at));
    for (const at of [150, 1200, 1300, 1400]) run.attempt(call('key-b', at));
    run.attempt(call('solo', 500));
    await clock.advance(2000);
    expect(callsOf(recorder)).toEqual({
      title: 'Calls per second, each provider and pool against its limit',
      // Buckets of a second: 0–1 s, 1–2 s; the one the clock's 2,000 ms opens is not whole yet.
      lines: { 'key-a': [2, 1], 'key-b': [1, 3], solo: [1, 0], 'pool gpt': [3, 4] },
      limits: [
        ['key-a', 10],
        ['key-b', 20],
        ['solo', 5],
        ['pool gpt', 30],
      ],
    });
  });

  it('draws a pool with a member that has no request limit without a limit of its own', async () => {
    const clock = new ManualClock();
    const recorder = new RunRecorder({
      clock,
      providers: [
        { name: 'key-a', limits: limits(10) },
        { name: 'free', limits: [] },
      ],
      pools: [{ name: 'gpt', members: ['key-a', 'free'] }],
    });
    toldRun([recorder], { clock }).attempt(call('free', 100));
    await clock.advance(1000);
    const { lines, limits: drawn } = callsOf(recorder);
    expect(lines['pool gpt']).toEqual([1]);
    expect(drawn).toEqual([['key-a', 10]]);
  });

  it('--config with a pool and --report: the page draws the members and the pool', async () => {
    const config = join(temp.dir, 'pool.json');
    const member = (name: string, rate: number) => ({
      name,
      limits: [{ kind: 'requests', rate, per: 'second', burst: 2 }],
      simulated: { minLatency: '1ms', maxLatency: '5ms' },
    });
    await writeFile(
      config,
      JSON.stringify({
        providers: [member('key-a', 10), member('key-b', 20)],
        pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
        routes: { summarize: 'gpt', sentiment: 'gpt' },
      }),
    );
    const file = join(temp.dir, 'pool.html');
    const result = await runCli(['--config', config, '--articles=15', '--workers=8', '--quiet', '--report', file]);
    expect(result.code).toBe(0);
    const page = await readFile(file, 'utf8');
    const figure = page.slice(
      page.indexOf('<figure id="chart-calls">'),
      page.indexOf('</figure>', page.indexOf('<figure id="chart-calls">')),
    );
    expect(figure).toContain('<figcaption>Calls per second, each provider and pool against its limit</figcaption><svg');
    for (const text of ['key-a limit 10/s', 'key-b limit 20/s', 'pool gpt limit 30/s', '>pool gpt<']) expect(figure).toContain(text);
  });
});
