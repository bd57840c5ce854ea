import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateArticles, loadBuiltinTasks } from '../../src/index.ts';
import { estimateInputTokens } from '../../src/provider/token-estimate.ts';
import { worstCaseNanoUsd } from '../../src/gate/call-cost.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { GATE_DEFAULTS } from '../../src/gate/call-gate.ts';
import { requestFor } from '../../src/tasks/task-set.ts';
import { refusedUrl } from '../vendors/scripted-api-server.ts';
import { linesOf, makeTempDir, ROOT, runCli, type CliResult } from './run-cli.ts';

/** A server that answers nothing useful and counts every request that reaches it, whatever its path. */
let server: Server;
let requests = 0;
let baseUrl: string;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  server = createServer((_, response) => {
    requests++;
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  temp = await makeTempDir();
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await temp.remove();
});

function plan(result: CliResult): any {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

function expectOneLineError(result: CliResult, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(linesOf(result.stderr), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
  expect(result.stdout).toBe('');
}

/** The built-in tasks' requests for the generated articles, as the run would make them (the sentiment prompt reads no output). */
function generatedRequests(articles: number) {
  const tasks = loadBuiltinTasks();
  return [...generateArticles(articles, { seed: 1 })].flatMap((article) =>
    tasks.tasks.map((task) => requestFor(task, article.id, article as unknown as Record<string, unknown>, {})),
  );
}

describe('news-processor --dry-run', () => {
  it('counts the articles, the calls per task, and the prompt tokens as the gate reserves them', async () => {
    const result = plan(await runCli(['--dry-run', '--articles=7', '--json']));
    expect(result).toMatchObject({ dryRun: true, input: 'generated', articles: 7, lacking: 0, calls: 14 });
    expect(result.tasks.map((task: any) => [task.name, task.provider, task.calls])).toEqual([
      ['summarize', 'simulated', 7],
      ['sentiment', 'simulated', 7],
    ]);
    let tokens = 0;
    for (const request of generatedRequests(7)) tokens += await estimateInputTokens(request);
    expect(result.inputTokens).toBe(tokens);
    // The answers: the cap as the worst case, the simulated answer's size below it.
    expect(result.maxOutputTokens).toBe(14 * GATE_DEFAULTS.maxOutputTokens);
    expect(result.typicalOutputTokens).toBeGreaterThan(14);
    expect(result.typicalOutputTokens).toBeLessThan(result.maxOutputTokens);
  });

  it("gives the least time at the run's limits: requests and tokens, (amount − burst) / rate", async () => {
    const result = plan(
      await runCli(['--dry-run', '--articles=10', '--rate=4', '--burst=2', '--tpm=600', '--max-output-tokens=64', '--json']),
    );
    const [requests, tokens] = result.providers[0].limits;
    expect(requests).toEqual({ kind: 'requests', rate: 4, burst: 2, amount: 20, floorMs: ((20 - 2) / 4) * 1000 });
    expect(tokens.kind).toBe('tokens');
    expect(tokens.amount).toBe(result.inputTokens + result.typicalOutputTokens);
    expect(tokens.floorMs).toBeCloseTo(((tokens.amount - 600) / 10) * 1000, 6);
    // 600 tokens a minute for some 4000 tokens: the token limit, not the requests, bounds this run.
    expect(result.boundBy).toEqual({ provider: 'simulated', kind: 'tokens' });
    expect(result.leastElapsedMs).toBe(tokens.floorMs);
  });

  it('says the worst case at the price as the budget holds it, and the expected cost below it', async () => {
    const result = plan(await runCli(['--dry-run', '--articles=3', '--price-input=2', '--price-output=8', '--json']));
    const price = { inputPerMTok: 2, outputPerMTok: 8 };
    const worstNano = generatedRequests(3).reduce(
      // The simulated provider's framing: none, it bills the text alone.
      (sum, request) => sum + worstCaseNanoUsd(request, GATE_DEFAULTS.maxOutputTokens, price, new SimulatedProvider().framing),
      0,
    );
    expect(result.worstUsd).toBeCloseTo(worstNano / 1e9, 12);
    expect(result.expectedUsd).toBeGreaterThan(0);
    expect(result.expectedUsd).toBeLessThan(result.worstUsd);
    expect(result.tasks[0].worstUsd + result.tasks[1].worstUsd).toBeCloseTo(result.worstUsd, 12);
  });

  it('reads the articles of a file and of standard input to count them', async () => {
    const file = plan(await runCli(['--dry-run', '--input', 'fixtures/articles.jsonl', '--json']));
    const lines = linesOf(await readFile(join(ROOT, 'fixtures/articles.jsonl'), 'utf8'));
    expect(file).toMatchObject({ input: 'fixtures/articles.jsonl', articles: lines.length, calls: 2 * lines.length });
    const stdin = plan(await runCli(['--dry-run', '--input', '-', '--json'], { stdin: `${lines.slice(0, 4).join('\n')}\n` }));
    expect(stdin).toMatchObject({ input: 'stdin', articles: 4, calls: 8 });
  });

  it('prints the plan for a person: the counts, the tokens, the cost, the least time', async () => {
    const result = await runCli([
      '--dry-run',
      '--articles=4',
      '--rate=2',
      '--burst=1',
      '--price-input=0.4',
      '--price-output=1.6',
      '--max-cost=5',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = linesOf(result.stdout);
    expect(lines[0]).toBe('Dry run: no call made, nothing written.');
    expect(lines[1]).toMatch(/^Articles: 4 \(generated\) \| Calls: 8, 2 per article/);
    expect(lines).toContainEqual(
      expect.stringMatching(/^Task summarize \(simulated\): 4 calls \| prompt tokens \d+ \| output tokens ~\d+, at most 1024 \| ~\$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^Cost: ~\$[\d.]+ expected .*, \$[\d.]+ at worst .* --max-cost \$5\.00 covers the worst case$/),
    );
    expect(lines.at(-1)).toBe('Least time at the limits: 3.500s, bound by requests: (8 − burst 1) / 2/s = 3.500s');
  });

  it('says that --cache is not looked up: the figures are the most the run makes', async () => {
    const cache = join(temp.dir, 'never-opened.lmdb');
    const result = await runCli(['--dry-run', '--articles=2', `--cache=${cache}`]);
    expect(result.code, result.stderr).toBe(0);
    expect(linesOf(result.stdout).at(-1)).toBe(
      `Cache: ${cache} not looked up: the calls, tokens and cost above are the most the run makes; each answer it finds there costs nothing and takes nothing from the limits`,
    );
    expect(plan(await runCli(['--dry-run', '--articles=2', `--cache=${cache}`, '--json']))).toMatchObject({
      calls: 4,
      cache,
      cacheLookedUp: false,
    });
    expect(existsSync(cache)).toBe(false);
  });

  it('writes nothing: no --output file, no results', async () => {
    const dir = join(temp.dir, 'untouched');
    await mkdir(dir);
    const result = await runCli(['--dry-run', '--articles=3', '--output', join(dir, 'results.jsonl'), '--overwrite']);
    expect(result.code, result.stderr).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it('calls nothing and needs no key: --provider=openai with no OPENAI_API_KEY, its server never reached', async () => {
    const before = requests;
    const result = plan(
      await runCli(['--dry-run', '--provider=openai', `--base-url=${baseUrl}`, '--articles=3', '--json'], {
        env: { OPENAI_API_KEY: undefined },
      }),
    );
    expect(result).toMatchObject({ articles: 3, calls: 6 });
    expect(result.tasks[0].provider).toBe('openai');
    expect(requests).toBe(before);
    // The same run for real: the key is needed, and the server is called.
    const real = await runCli(['--provider=openai', `--base-url=${baseUrl}`, '--articles=1', '--max-attempts=1'], {
      env: { OPENAI_API_KEY: 'sk-test' },
    });
    expect(real.code).not.toBe(0);
    expect(requests).toBeGreaterThan(before);
  });

  it('reaches no Redis: an unreachable --redis does not stop it, as it stops a run', async () => {
    const redis = (await refusedUrl()).replace('http:', 'redis:');
    const dry = await runCli(['--dry-run', '--articles=2', '--redis', redis, '--redis-timeout=200ms']);
    expect(dry.code, dry.stderr).toBe(0);
    const real = await runCli(['--articles=2', '--redis', redis, '--redis-timeout=200ms']);
    expect(real.code).toBe(2);
  });

  it('still refuses what the run would refuse: a --max-cost below one call, a bad input line', async () => {
    expectOneLineError(
      await runCli(['--dry-run', '--price-input=1', '--price-output=1', '--max-cost=0.0001']),
      /^error: --max-cost \$0\.0001 cannot cover one call/,
    );
    const bad = join(temp.dir, 'bad.jsonl');
    await writeFile(bad, '{"id":"1","title":"t","content":"c"}\nnot json\n');
    expectOneLineError(await runCli(['--dry-run', '--input', bad]), /bad\.jsonl:2: invalid JSON/);
  });

  it('refuses --resume: it plans the whole input and reads no results file', async () => {
    expectOneLineError(
      await runCli(['--dry-run', '--output', join(temp.dir, 'r.jsonl'), '--resume']),
      /^error: --dry-run plans the whole input and reads no results file: drop --resume/,
    );
  });

  it('is in --help, under the run', async () => {
    const result = await runCli(['--help']);
    expect(result.stdout).toMatch(/--dry-run\s+say what the run would call/);
  });
});
