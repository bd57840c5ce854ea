// A pool on the command line has what a single provider has: the answer cache in front of it, and
// each member on the progress line with its calls and its state.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linesOf, makeTempDir, runCli } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
});

afterAll(async () => {
  await temp?.remove();
});

const simulated = (name: string, rate: number, extra: object = {}) => ({
  name,
  limits: [{ kind: 'requests', rate, burst: 1 }],
  simulated: { minLatency: '5ms', maxLatency: '10ms' },
  ...extra,
});

async function configFile(name: string, config: object): Promise<string> {
  const path = join(temp.dir, name);
  await writeFile(path, JSON.stringify(config));
  return path;
}

/** The command run with stdout and stderr on a terminal (util-linux's `script` makes one): what a person watching it sees, as written. */
function runOnTerminal(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const quoted = [process.execPath, join('dist', 'cmd', 'news-processor.js'), ...args].map((arg) => `'${arg.replaceAll("'", "'\\''")}'`);
  // 200 columns: on a narrower terminal the line loses its last fields, the pools first.
  const child = spawn('script', ['-qfec', `stty cols 200; ${quoted.join(' ')}`, '/dev/null'], {
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe.concurrent('a pool on the command line', { timeout: 60_000 }, () => {
  it('--cache: a second run of the same work through a pool makes no call, each answer named by the member that made it', async () => {
    const config = await configFile('cached.json', {
      providers: [simulated('sim-a', 100), simulated('sim-b', 100)],
      pools: [{ name: 'gpt', members: ['sim-a', 'sim-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const cache = join(temp.dir, 'cache');
    const run = async (output: string) => {
      const result = await runCli([
        `--config=${config}`,
        '--articles=6',
        `--cache=${cache}`,
        `--output=${join(temp.dir, output)}`,
        '--json',
      ]);
      expect(result.code, result.stderr).toBe(0);
      const lines = linesOf(await readFile(join(temp.dir, output), 'utf8')).map((line) => JSON.parse(line));
      return { summary: JSON.parse(result.stdout), lines: lines.sort((a, b) => Number(a.id) - Number(b.id)) };
    };
    const paid = await run('first.jsonl');
    expect(paid.summary).toMatchObject({ succeeded: 6, calls: 12, cacheHits: 0 });
    const free = await run('second.jsonl');
    expect(free.summary).toMatchObject({ succeeded: 6, calls: 0, cacheHits: 12 });
    expect(free.summary.providers.map((provider: any) => provider.calls)).toEqual([0, 0]);
    expect(free.lines.map((line) => line.outputs)).toEqual(paid.lines.map((line) => line.outputs));
    expect(free.lines.map((line) => line.servedBy)).toEqual(paid.lines.map((line) => line.servedBy));
    for (const line of free.lines) expect(line).toMatchObject({ cached: ['summarize', 'sentiment'], attempts: 0 });
  });

  it('--max-repairs: the unfit answers of a pool’s members are mended through the pool, counted apart from the retries', async () => {
    const unfit = { simulated: { minLatency: '0ms', maxLatency: '1ms', profile: 'unfit' } };
    const config = await configFile('unfit.json', {
      providers: [simulated('sim-a', 1000, unfit), simulated('sim-b', 1000, unfit)],
      pools: [{ name: 'gpt', members: ['sim-a', 'sim-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const output = join(temp.dir, 'repaired.jsonl');
    const result = await runCli([`--config=${config}`, '--articles=40', `--output=${output}`, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ succeeded: 40, failed: 0, retries: 0 });
    expect(summary.repairs).toBeGreaterThan(5);
    expect(summary.calls).toBe(80 + summary.repairs);
    const lines = linesOf(await readFile(output, 'utf8')).map((line) => JSON.parse(line));
    expect(lines.reduce((sum, line) => sum + (line.repairs ?? 0), 0)).toBe(summary.repairs);
  });

  it('the progress line shows each member’s calls, and a member that is down', async () => {
    const config = await configFile('progress.json', {
      providers: [
        simulated('sim-a', 10),
        simulated('sim-b', 10, { simulated: { outage: '0s..60s' }, breaker: { failureThreshold: 1, cooldown: '60s' } }),
      ],
      pools: [{ name: 'gpt', members: ['sim-a', 'sim-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const { code, output } = await runOnTerminal([`--config=${config}`, '--articles=12', '--quiet', '--timeout=30s']);
    expect(code, output).toBe(0);
    expect(output).toContain('pool "gpt": member "sim-b" is down');
    const drawn = [...output.matchAll(/gpt\[sim-a (\d+) sim-b (\d+)( down)?\]/g)];
    expect(drawn.length, output).toBeGreaterThan(0);
    const last = drawn.at(-1)!;
    expect(Number(last[1])).toBeGreaterThan(0);
    expect(last[3]).toBe(' down');
  });
});
