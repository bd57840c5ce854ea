import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, linesOf, makeTempDir, runCli, startCli } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

interface Result {
  id: string;
  status: string;
  outputs?: Record<string, unknown>;
  costUsd?: number;
}

async function results(path: string): Promise<Result[]> {
  return linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line) as Result);
}

async function waitForResults(path: string, count: number): Promise<void> {
  const deadline = performance.now() + 20_000;
  for (;;) {
    const lines = await readFile(path, 'utf8').then(
      (text) => text.split('\n').length - 1,
      () => 0,
    );
    if (lines >= count) return;
    if (performance.now() > deadline) throw new Error(`fewer than ${count} results in ${path}`);
    await sleep(50);
  }
}

/** 60 articles at 20 calls/s: about six seconds, long enough to stop in the middle. */
const SLOW = ['--articles=60', '--rate=20', '--burst=1', '--min-latency=5ms', '--max-latency=10ms'];

function expectEachOnceAndSucceeded(all: Result[], count: number): void {
  expect(all.map((r) => r.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: count }, (_, i) => String(i + 1)));
  expect(all.every((r) => r.status === 'succeeded')).toBe(true);
}

describe.concurrent('news-processor --resume', { timeout: 90_000 }, () => {
  it('after Ctrl-C: skips what succeeded (no call for it), runs the rest, and the file holds each article once', async () => {
    const output = join(temp.dir, 'after-ctrl-c.jsonl');
    const first = startCli([...SLOW, '--output', output, '--quiet']);
    await waitForResults(output, 10);
    first.interrupt();
    expect((await first.result).code).toBe(130);
    const before = await results(output);
    const succeeded = before.filter((r) => r.status === 'succeeded').length;
    expect(before.some((r) => r.status === 'cancelled')).toBe(true);

    const second = await runCli([...SLOW, '--rate=inf', '--output', output, '--resume', '--json']);
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    const summary = JSON.parse(second.stdout) as {
      resumed: number;
      articles: number;
      succeeded: number;
      calls: number;
      notStarted: number;
    };
    expect(summary).toMatchObject({ resumed: succeeded, articles: 60 - succeeded, succeeded: 60 - succeeded, notStarted: 0 });
    // A call for every task without its output: none for the articles that had succeeded, one
    // for an article stopped between its two tasks (its first output kept), two for the rest.
    const kept = before.reduce((sum, r) => sum + Object.keys(r.outputs ?? {}).length, 0);
    expect(kept).toBeGreaterThanOrEqual(2 * succeeded);
    expect(summary.calls).toBe(2 * 60 - kept);
    expectEachOnceAndSucceeded(await results(output), 60);
  });

  it('after Ctrl-C the result lines carry every call billed, cut ones included; the resume keeps each article once and the sum whole', async () => {
    const output = join(temp.dir, 'cost-after-ctrl-c.jsonl');
    const priced = ['--price-input=100', '--price-output=100', '--max-cost=50'];
    // Calls of 200–400 ms: Ctrl-C finds some in flight.
    const first = startCli([...SLOW, '--min-latency=200ms', '--max-latency=400ms', ...priced, '--output', output, '--json']);
    await waitForResults(output, 6);
    first.interrupt();
    const firstRun = await first.result;
    expect(firstRun.code).toBe(130);
    const firstSummary = JSON.parse(firstRun.stdout) as { costUsd: number; budget: { spentUsd: number }; cancelled: number };
    expect(firstSummary.cancelled).toBeGreaterThan(0);
    const nano = (usd: number) => Math.round(usd * 1e9);
    const lineSum = async () => (await results(output)).reduce((sum, r) => sum + nano(r.costUsd!), 0);
    // One figure: the lines, the run's cost and the budget's spend agree.
    expect(nano(firstSummary.budget.spentUsd)).toBe(nano(firstSummary.costUsd));
    expect(await lineSum()).toBe(nano(firstSummary.costUsd));

    const second = await runCli([...SLOW, '--rate=inf', ...priced, '--output', output, '--resume', '--json']);
    expect(second.code, second.stderr).toBe(0);
    const secondSummary = JSON.parse(second.stdout) as { costUsd: number; earlierCostUsd: number; budget: { spentUsd: number } };
    expect(nano(secondSummary.earlierCostUsd)).toBe(nano(firstSummary.costUsd));
    expect(nano(secondSummary.budget.spentUsd)).toBe(nano(firstSummary.costUsd) + nano(secondSummary.costUsd));
    expectEachOnceAndSucceeded(await results(output), 60);
    expect(await lineSum()).toBe(nano(firstSummary.costUsd) + nano(secondSummary.costUsd));
  });

  it('after SIGKILL, with the last line cut short: dropped with a warning, and the run completes', async () => {
    const output = join(temp.dir, 'after-kill.jsonl');
    const first = startCli([...SLOW, '--output', output, '--quiet']);
    await waitForResults(output, 8);
    first.send('SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    // As if the kill had come in the middle of a write.
    await appendFile(output, '{"id":"41","title":"A cut sh');

    const second = await runCli([...SLOW, '--rate=inf', '--output', output, '--resume', '--quiet']);
    expect(second.code).toBe(0);
    expect(second.stderr).toBe(`warning: ${output}: the last line was cut short (the run was killed mid-write) and is dropped\n`);
    expect(second.stdout).toMatch(/^Resumed: \d+ articles had succeeded before and were skipped$/m);
    expectEachOnceAndSucceeded(await results(output), 60);
  });

  it('a second resume of a finished run has nothing to do', async () => {
    const output = join(temp.dir, 'finished.jsonl');
    expect((await runCli([...FAST, '--articles=5', '--output', output, '--quiet'])).code).toBe(0);
    const again = await runCli([...FAST, '--articles=5', '--output', output, '--resume', '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ resumed: 5, articles: 0, calls: 0 });
    expectEachOnceAndSucceeded(await results(output), 5);
  });

  it('works with --input files as with generated articles', async () => {
    const input = join(temp.dir, 'ten.jsonl');
    await writeFile(
      input,
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `a${i}`, title: `T${i}`, content: `Body ${i}.` })).join('\n'),
    );
    const output = join(temp.dir, 'from-file.jsonl');
    await writeFile(
      output,
      `${JSON.stringify({ id: 'a3', title: 'T3', status: 'succeeded' })}\n${JSON.stringify({ id: 'a4', title: 'T4', status: 'failed' })}\n`,
    );
    const result = await runCli([...FAST, '--input', input, '--output', output, '--resume', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ resumed: 1, articles: 9, succeeded: 9 });
    const ids = (await results(output)).map((r) => r.id).sort();
    expect(ids).toEqual(Array.from({ length: 10 }, (_, i) => `a${i}`));
  });

  it.each([
    [
      ['--articles=5', '--seed=2'],
      /^error: --resume: \S+ is not a run of the generated articles: article "\d" has another title \(another --seed\?\)$/,
    ],
    [['--articles=2'], /^error: --resume: \S+ is not a run of the generated articles: article "\d" is not among --articles=2$/],
  ])(
    "refuses a resume whose ids are not the input's (%j): one line, exit 2, the file untouched but for its failures",
    async (flags, message) => {
      const output = join(temp.dir, `mismatch-${flags.join('')}.jsonl`);
      expect((await runCli([...FAST, '--articles=5', '--output', output, '--quiet'])).code).toBe(0);
      const before = await readFile(output, 'utf8');
      const result = await runCli([...FAST, ...flags, '--output', output, '--resume']);
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toMatch(message);
      expect(result.stdout).toBe('');
      expect((await results(output)).length).toBe(linesOf(before).length);
    },
  );

  it('refuses a results file whose middle is not results', async () => {
    const output = join(temp.dir, 'garbage.jsonl');
    await writeFile(output, 'hello\n{"id":"1","status":"succeeded","title":"x"}\n');
    const result = await runCli([...FAST, '--output', output, '--resume']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: ${output}:1: not a result line (expected a JSON object with "id" and "status")\n`);
  });
});
