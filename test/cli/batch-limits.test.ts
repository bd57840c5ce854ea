// `--batch` against serve's queue limit (--batch-queue-tokens on both sides: refused batches go
// again, not as failed rows), --batch-fallback=live against a stressed serve, and the bad values of
// --batch-size, --batch-queue-tokens and --batch-fallback.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linesOf, makeTempDir, runCli, type Serve, startServe } from './run-cli.ts';

const KEY = 'sk-batch-limits';
const ENV = { NP_BATCH_KEY: KEY, OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined };
const SERVE = ['--rate=inf', '--min-latency=1ms', '--max-latency=2ms', '--batch-duration=300ms'];

let queued: Serve;
let stressed: Serve;
let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
  // Some 100 tokens a row as serve counts them: ten rows fill the queue.
  [queued, stressed] = await Promise.all([startServe([...SERVE, '--batch-queue-tokens=1000']), startServe([...SERVE, '--profile=stress'])]);
});

afterAll(async () => {
  for (const serve of [queued, stressed]) serve?.run.send('SIGTERM');
  await Promise.all([queued?.run.result, stressed?.run.result]);
  await temp?.remove();
});

const readLines = async (path: string) => linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line));
const vendor = (serve: Serve, provider: 'openai' | 'anthropic') => [
  `--provider=${provider}`,
  `--base-url=${provider === 'openai' ? `${serve.url}/v1` : serve.url}`,
  '--api-key-env=NP_BATCH_KEY',
];

describe('news-processor --batch and the provider queue', () => {
  it.each(['openai', 'anthropic'] as const)(
    '%s: batches the queue refuses go again later, no row failed, every article written',
    async (provider) => {
      const output = join(temp.dir, `refused-${provider}.jsonl`);
      const args = ['--batch', '--batch-poll=100ms', `--output=${output}`, '--articles=20', '--json', ...vendor(queued, provider)];
      const result = await runCli(args, { env: ENV });
      expect(result.code, result.stderr).toBe(0);
      const figures = JSON.parse(result.stdout);
      // Twenty rows a round, twice what the queue holds: the first batch is refused, then halves go.
      expect(figures.batchesRefused).toBeGreaterThanOrEqual(1);
      expect(figures).toMatchObject({ succeeded: 20, failed: 0, rowsFailed: 0, rowsRetried: 0 });
      const lines = await readLines(output);
      expect(lines).toHaveLength(20);
      for (const line of lines) expect(line.attempts).toBe(2);
    },
  );

  it('--batch-queue-tokens: batches cut and waited for so that the queue never refuses one', async () => {
    const output = join(temp.dir, 'queue-tokens.jsonl');
    const args = ['--batch', '--batch-poll=100ms', `--output=${output}`, '--articles=20', '--batch-queue-tokens=1000'];
    const result = await runCli([...args, ...vendor(queued, 'openai')], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Batch run: 20 articles succeeded, 0 failed');
    expect(result.stdout).not.toContain('Queue:');
    // Forty rows of some 200 estimated tokens, 1,000 at once: eight batches at least.
    expect(Number(/Batches: (\d+) submitted, 40 rows, 0 failed/.exec(result.stdout)?.[1])).toBeGreaterThanOrEqual(8);
  });
});

describe('news-processor --batch --batch-fallback=live', () => {
  it('sends the rows a stressed batch failed through the live path: every article answered, the lines say which', async () => {
    const output = join(temp.dir, 'fallback.jsonl');
    const args = ['--batch', '--batch-fallback=live', '--batch-poll=100ms', `--output=${output}`, '--articles=10'];
    const live = ['--max-attempts=10', '--call-timeout=2s', '--rate=inf', '--workers=4'];
    const result = await runCli([...args, ...live, ...vendor(stressed, 'openai')], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    const summary = /Live: (\d+) rows? that failed in a batch sent through the live path/.exec(result.stdout);
    const rowsLive = Number(summary?.[1]);
    // Seeded stress fails some 40% of the rows: they went live, none again in a batch.
    expect(rowsLive).toBeGreaterThan(0);
    expect(result.stdout).toMatch(new RegExp(`Batches: 2 submitted, 20 rows, ${rowsLive} failed \\(0 expired\\), 0 sent again`));
    const lines = await readLines(output);
    expect(lines.filter((line) => line.status === 'succeeded')).toHaveLength(10);
    const servedLive = lines.flatMap((line) => Object.keys(line.servedBy ?? {}));
    expect(servedLive).toHaveLength(rowsLive);
  });
});

describe('news-processor --batch: bad limits', () => {
  it.each([
    [['--batch-size=0'], "error: option '--batch-size <n>' argument '0' is invalid. Expected a whole number from 1 to 100000."],
    [['--batch-size=100001'], "error: option '--batch-size <n>' argument '100001' is invalid. Expected a whole number from 1 to 100000."],
    [
      ['--batch-size=60000', '--provider=openai', '--base-url=http://127.0.0.1:1/v1', '--api-key-env=NP_BATCH_KEY'],
      "error: --batch-size 60000 is more than openai's Batch API takes in a batch: 50,000 at most",
    ],
    [['--batch-articles=0'], "error: option '--batch-articles <n>' argument '0' is invalid. Expected a whole number >= 1."],
    [['--batch-queue-tokens=0'], "error: option '--batch-queue-tokens <n>' argument '0' is invalid. Expected a whole number >= 1."],
    [['--batch-queue-tokens=lots'], "error: option '--batch-queue-tokens <n>' argument 'lots' is invalid. Expected a whole number >= 1."],
    [['--batch-fallback=later'], "error: option '--batch-fallback <where>' argument 'later' is invalid. Expected one of: batch, live."],
    [['--rate=5'], 'error: --rate shapes live calls, which --batch makes only with --batch-fallback=live: leave them out'],
    [
      ['--batch-fallback=live', '--timeout=5s'],
      'error: --timeout means nothing with --batch (a batch run makes no live calls): leave them out',
    ],
  ])('--batch %j: one line, exit 2, nothing written', async (args, message) => {
    const output = join(temp.dir, 'bad.jsonl');
    const result = await runCli(['--batch', `--output=${output}`, ...args], { env: ENV });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(`${message}\n`);
    expect(existsSync(output)).toBe(false);
  });

  it.each([['--batch-queue-tokens=100'], ['--batch-fallback=live'], ['--batch-articles=10']])(
    '%s without --batch: one line, exit 2',
    async (flag) => {
      const result = await runCli([flag!]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`error: ${flag!.replace(/=.*/, '')} applies with --batch only\n`);
    },
  );
});
