// Repairs as a user meets them: a model that answers some calls unfit for the schema (the simulated
// profile "unfit", in process and behind `serve` through the official SDKs), each unfit answer sent
// back with its problems and mended, counted apart from the retries and paid for.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, type CliRun, linesOf, makeTempDir, runCli, startCli } from './run-cli.ts';

const KEY_VARIABLE = 'NP_REPAIRS_API_KEY';
const ENV = { [KEY_VARIABLE]: 'sk-repairs-test', OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined };
const PRICES = ['--price-input=400', '--price-output=1600'];

let temp: Awaited<ReturnType<typeof makeTempDir>>;
let serve: { run: CliRun; url: string } | undefined;

beforeAll(async () => {
  temp = await makeTempDir();
  const run = startCli(['serve', '--port=0', '--rate=inf', '--profile=unfit', '--min-latency=0ms', '--max-latency=1ms'], {
    killAfterMs: 120_000,
  });
  const deadline = performance.now() + 20_000;
  for (;;) {
    const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(run.stdout());
    if (match !== null) {
      serve = { run, url: match[1]! };
      break;
    }
    if (run.child.exitCode !== null || performance.now() > deadline) {
      run.send('SIGKILL');
      throw new Error(`serve did not start: ${run.stderr()}`);
    }
    await sleep(20);
  }
}, 30_000);

afterAll(async () => {
  serve?.run.send('SIGKILL');
  await temp?.remove();
});

async function resultLines(path: string): Promise<{ id: string; status: string; attempts: number; repairs?: number; costUsd?: number }[]> {
  return linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line));
}

describe('news-processor --max-repairs', { timeout: 60_000 }, () => {
  it('mends the unfit answers of --profile=unfit: every article succeeds, the repairs counted apart from the retries, in the summary, --json and the result lines, and paid for', async () => {
    const output = join(temp.dir, 'in-process.jsonl');
    const result = await runCli([...FAST, '--articles=40', '--profile=unfit', ...PRICES, `--output=${output}`, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ succeeded: 40, failed: 0, retries: 0 });
    // A fifth of the 80 calls answered unfit, each mended by one repair: a call more each.
    expect(summary.repairs).toBeGreaterThan(5);
    expect(summary.calls).toBe(80 + summary.repairs);
    expect(summary.tasks[0].repairs + summary.tasks[1].repairs).toBe(summary.repairs);
    const lines = await resultLines(output);
    expect(lines.reduce((sum, line) => sum + (line.repairs ?? 0), 0)).toBe(summary.repairs);
    for (const line of lines) expect(line.attempts).toBe(2 + (line.repairs ?? 0));
    // Paid: the articles with a repair cost more than those without.
    const cost = (repaired: boolean) =>
      Math.min(...lines.filter((line) => (line.repairs !== undefined) === repaired).map((line) => line.costUsd!));
    expect(cost(true)).toBeGreaterThan(Math.min(cost(false)));
  });

  it('--max-repairs=0 asks an unfit answer afresh, as a retry', async () => {
    const result = await runCli([...FAST, '--articles=40', '--profile=unfit', '--max-repairs=0', '--max-attempts=10', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.repairs).toBe(0);
    expect(summary.retries).toBeGreaterThan(5);
  });

  it('shows the repairs in the summary lines when there were any', async () => {
    const result = await runCli([...FAST, '--articles=20', '--profile=unfit', '--quiet']);
    expect(result.code, result.stderr).toBe(0);
    // The unfit answers the repairs mended are calls of their own column: the columns add up to the calls.
    expect(result.stdout).toMatch(
      /^Calls: \d+ \(\d+ answered\) \| Retries: 0 \| Repairs: \d+ \| 429s received: .* \| Unfit answers: \d+ \| /m,
    );
  });

  it('refuses a --max-repairs that is not a whole number from 0 to 100, in one line, nothing run', async () => {
    const result = await runCli([...FAST, '--articles=2', '--max-repairs=-1']);
    expect(result.code).toBe(2);
    expect(linesOf(result.stderr)).toEqual([expect.stringMatching(/^error: option '--max-repairs <n>' argument '-1' is invalid/)]);
    expect(result.stdout).toBe('');
  });

  it.each(['openai', 'anthropic'])(
    '--provider=%s against serve --profile=unfit: the unfit answers come back through the SDK and are mended by the conversation sent back',
    async (vendor) => {
      const url = vendor === 'openai' ? `${serve!.url}/v1` : serve!.url;
      const output = join(temp.dir, `${vendor}.jsonl`);
      const result = await runCli(
        [
          `--provider=${vendor}`,
          `--base-url=${url}`,
          `--api-key-env=${KEY_VARIABLE}`,
          '--articles=30',
          '--rate=inf',
          `--output=${output}`,
          '--json',
        ],
        { env: ENV },
      );
      expect(result.code, result.stderr).toBe(0);
      const summary = JSON.parse(result.stdout);
      expect(summary).toMatchObject({ succeeded: 30, failed: 0, retries: 0 });
      expect(summary.repairs).toBeGreaterThan(0);
      expect(summary.calls).toBe(60 + summary.repairs);
      const lines = await resultLines(output);
      expect(lines.reduce((sum, line) => sum + (line.repairs ?? 0), 0)).toBe(summary.repairs);
    },
  );
});
