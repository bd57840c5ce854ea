// Pools of providers from the providers file: against `news-processor serve` instances, one per
// member with its own quota, and the file's mistakes, each refused before any call.
import { createServer } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, linesOf, makeTempDir, runCli, startCli, startServe, type Serve } from './run-cli.ts';

const KEY_A = 'sk-pool-a-3d9f1c-never-shown';
const KEY_B = 'sk-pool-b-8e2a7b-never-shown';
const ENV = { NP_POOL_KEY_A: KEY_A, NP_POOL_KEY_B: KEY_B, OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined };

/** A loopback address nothing listens on: calls to it are refused. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const member = (name: string, url: string, rate: number, keyEnv = 'NP_POOL_KEY_A', type = 'openai') => ({
  name,
  type,
  baseUrl: type === 'openai' ? `${url}/v1` : url,
  apiKeyEnv: keyEnv,
  limits: [{ kind: 'requests', rate, burst: 1 }],
});

let temp: Awaited<ReturnType<typeof makeTempDir>>;
const serves: Serve[] = [];

async function configFile(name: string, config: object): Promise<string> {
  const path = join(temp.dir, name);
  await writeFile(path, JSON.stringify(config));
  return path;
}

async function results(path: string): Promise<any[]> {
  return linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line));
}

function servedCounts(lines: readonly any[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of lines) for (const name of Object.values<string>(line.servedBy ?? {})) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

function expectNoKey(result: CliResult): void {
  for (const key of [KEY_A, KEY_B]) {
    expect(result.stdout).not.toContain(key);
    expect(result.stderr).not.toContain(key);
  }
}

beforeAll(async () => {
  temp = await makeTempDir();
}, 30_000);

afterAll(async () => {
  for (const serve of serves) serve.run.send('SIGKILL');
  await Promise.all(serves.map((serve) => serve.run.result));
  await temp?.remove();
});

async function serve(args: readonly string[]): Promise<Serve> {
  const started = await startServe(args);
  serves.push(started);
  return started;
}

describe.concurrent('a pool against news-processor serve instances', { timeout: 90_000 }, () => {
  it('spreads calls by quota: members at 10/s and 20/s answer a third and two thirds, at the combined rate', async () => {
    const [a, b] = await Promise.all([
      serve(['--rate=10', '--burst=5', '--min-latency=20ms', '--max-latency=60ms']),
      serve(['--rate=20', '--burst=5', '--min-latency=20ms', '--max-latency=60ms']),
    ]);
    const config = await configFile('spread.json', {
      providers: [member('key-a', a.url, 10), member('key-b', b.url, 20)],
      pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const output = join(temp.dir, 'spread.jsonl');
    const result = await runCli(
      [`--config=${config}`, '--articles=60', '--workers=20', '--timeout=20s', '--max-attempts=6', `--output=${output}`, '--json'],
      { env: ENV },
    );
    expect(result.code, result.stderr).toBe(0);
    expectNoKey(result);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ succeeded: 60, failed: 0 });
    expect(summary.providers.map((p: any) => p.name)).toEqual(['key-a', 'key-b']);
    const counts = servedCounts(await results(output));
    expect(counts['key-a']! + counts['key-b']!).toBe(120);
    expect(counts['key-a']! / 120).toBeGreaterThan(0.25);
    expect(counts['key-a']! / 120).toBeLessThan(0.42);
    // Both at once, each near its own quota: the pool ran at their sum.
    const [figuresA, figuresB] = summary.providers;
    expect(figuresA.achievedRate).toBeGreaterThan(10 * 0.6);
    expect(figuresB.achievedRate).toBeGreaterThan(20 * 0.6);
    // The least possible time counts the pool's combined limits: (calls − both bursts) / 30/s.
    expect(summary.rateFloorMs).toBeCloseTo(((summary.calls - 2) / 30) * 1000, 0);
    // Physics: no run of 120 calls at 30/s with bursts of 2 ends sooner.
    expect(summary.elapsedMs).toBeGreaterThanOrEqual(((120 - 4) / 30) * 1000);
  });

  it('a member killed mid-run: its work moves to the other, every article succeeds, its fall said in one line', async () => {
    const [a, b] = await Promise.all([
      serve(['--rate=inf', '--min-latency=20ms', '--max-latency=40ms']),
      serve(['--rate=inf', '--min-latency=20ms', '--max-latency=40ms']),
    ]);
    const config = await configFile('killed.json', {
      providers: [member('key-a', a.url, 20), member('key-b', b.url, 20)],
      pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const output = join(temp.dir, 'killed.jsonl');
    const run = startCli([`--config=${config}`, '--articles=60', '--workers=8', '--timeout=20s', `--output=${output}`], {
      env: ENV,
      killAfterMs: 60_000,
    });
    for (const deadline = performance.now() + 30_000; linesOf(run.stdout()).filter((line) => line.startsWith('✓')).length < 10; ) {
      if (performance.now() > deadline || run.child.exitCode !== null) throw new Error(`no results yet: ${run.stderr()}`);
      await sleep(10);
    }
    a.run.send('SIGKILL');
    const result = await run.result;
    expect(result.code, result.stderr).toBe(0);
    const lines = await results(output);
    expect(lines).toHaveLength(60);
    expect(lines.every((line) => line.status === 'succeeded')).toBe(true);
    const counts = servedCounts(lines);
    expect(counts['key-a']).toBeGreaterThan(0);
    expect(counts['key-b']).toBeGreaterThan(counts['key-a']!);
  });

  it('one member’s key refused (401): dropped in one line naming it, never the key; the run finishes on the other, exit 0', async () => {
    const guarded = await serve(['--rate=inf', '--min-latency=5ms', '--max-latency=20ms', `--api-keys=${KEY_A}`]);
    const config = await configFile('refused.json', {
      providers: [member('key-a', guarded.url, 50), member('key-b', guarded.url, 50, 'NP_POOL_KEY_B')],
      pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const output = join(temp.dir, 'refused.jsonl');
    const result = await runCli([`--config=${config}`, '--articles=20', '--workers=4', `--output=${output}`, '--quiet'], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    expectNoKey(result);
    const dropped = linesOf(result.stderr).filter((line) => line.includes('dropped'));
    expect(dropped).toEqual([
      'warning: pool "gpt": member "key-b" dropped: 401 the API key was refused (invalid_api_key); its calls go to the other member',
    ]);
    const lines = await results(output);
    expect(lines.every((line) => line.status === 'succeeded')).toBe(true);
    expect(servedCounts(lines)).toEqual({ 'key-a': 40 });
  });

  it('a pool that is down falls back to the other vendor: openai members, an anthropic fallback on serve', async () => {
    const [claude, nowhere] = await Promise.all([serve(['--rate=inf', '--min-latency=5ms', '--max-latency=20ms']), deadUrl()]);
    const config = await configFile('fallback.json', {
      providers: [
        member('key-a', nowhere, 50),
        member('key-b', nowhere, 50),
        member('claude', claude.url, 50, 'NP_POOL_KEY_B', 'anthropic'),
      ],
      pools: [{ name: 'gpt', members: ['key-a', 'key-b'], fallback: ['claude'] }],
      routes: { summarize: 'gpt', sentiment: 'gpt' },
    });
    const output = join(temp.dir, 'fallback.jsonl');
    const result = await runCli([`--config=${config}`, '--articles=20', '--workers=4', '--timeout=20s', `--output=${output}`, '--quiet'], {
      env: ENV,
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = await results(output);
    expect(lines).toHaveLength(20);
    expect(lines.every((line) => line.status === 'succeeded')).toBe(true);
    expect(servedCounts(lines)).toEqual({ claude: 40 });
    // Answers from the schema, through Anthropic's structured output.
    expect(typeof lines[0].outputs.summarize.summary).toBe('string');
    expect(['positive', 'negative', 'neutral']).toContain(lines[0].outputs.sentiment.sentiment);
  });
});

const PROVIDERS = [
  { name: 'key-a', limits: [{ kind: 'requests', rate: 50 }] },
  { name: 'key-b', limits: [{ kind: 'requests', rate: 50 }] },
];

describe.concurrent('a providers file with pools that cannot work: one line naming the field, exit 2, no call', () => {
  it.each([
    [
      'a member that is not a provider',
      { pools: [{ name: 'gpt', members: ['key-a', 'key-c'] }] },
      'pools[0].members[1]: expected one of the provider names (key-a, key-b), got "key-c"',
    ],
    [
      'a member listed twice',
      { pools: [{ name: 'gpt', members: ['key-a', 'key-a'] }] },
      'pools[0].members[1]: expected a member not listed before, got "key-a"',
    ],
    [
      'an empty pool',
      { pools: [{ name: 'gpt', members: [] }] },
      'pools[0].members: expected at least one member (a provider name), got []',
    ],
    [
      'a fallback cycle',
      {
        pools: [
          { name: 'gpt', members: ['key-a'], fallback: ['backup'] },
          { name: 'backup', members: ['key-b'], fallback: ['gpt'] },
        ],
      },
      'pools[0].fallback[0]: expected no cycle of fallbacks (gpt → backup → gpt), got "backup"',
    ],
    [
      'a pool named like a provider',
      { pools: [{ name: 'key-a', members: ['key-b'] }] },
      'pools[0].name: expected a name no provider has, got "key-a"',
    ],
    [
      'a route naming neither',
      { pools: [{ name: 'gpt', members: ['key-a'] }], routes: { summarize: 'nope' } },
      'routes.summarize: expected one of the provider and pool names (key-a, key-b, gpt), got "nope"',
    ],
    [
      'weights without the weighted strategy',
      { pools: [{ name: 'gpt', members: ['key-a'], weights: [1] }] },
      'pools[0].weights: expected nothing unless the strategy is "weighted", got [1]',
    ],
    [
      'weights not one per member',
      { pools: [{ name: 'gpt', members: ['key-a', 'key-b'], strategy: 'weighted', weights: [1] }] },
      'pools[0].weights: expected one weight per member (2), got [1]',
    ],
    [
      'an unknown strategy',
      { pools: [{ name: 'gpt', members: ['key-a'], strategy: 'fastest' }] },
      'pools[0].strategy: expected one of "soonest", "weighted", "ordered", got "fastest"',
    ],
  ])('refuses %s', async (_, pools, message) => {
    const config = await configFile(`bad-${message.length}-${Math.random()}.json`, { providers: PROVIDERS, ...pools });
    const result = await runCli([`--config=${config}`, '--articles=2']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(linesOf(result.stderr)).toEqual([`error: ${config}: ${message}`]);
  });

  it('refuses a task naming neither a provider nor a pool', async () => {
    const config = await configFile('task-neither.json', { providers: PROVIDERS, pools: [{ name: 'gpt', members: ['key-a'] }] });
    const tasks = join(temp.dir, 'tasks-neither.json');
    await writeFile(
      tasks,
      JSON.stringify({
        tasks: [
          {
            name: 'gist',
            provider: 'nope',
            prompt: 'Gist of {{title}}',
            schema: { type: 'object', properties: { gist: { type: 'string' } } },
          },
        ],
      }),
    );
    const result = await runCli([`--config=${config}`, `--tasks=${tasks}`, '--articles=2']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(linesOf(result.stderr)).toEqual([
      `error: ${tasks}: task "gist" asks for provider or pool "nope", which is not one of the run's ("key-a", "key-b", "gpt")`,
    ]);
  });
});
