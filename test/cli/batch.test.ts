// `--batch`: offline over the simulated provider, against serve's OpenAI Batch API, the bad flags,
// and a Ctrl-C then --resume that submits nothing twice (counted at serve's GET /v1/batches).
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, linesOf, makeTempDir, runCli, startCli } from './run-cli.ts';

const KEY = 'sk-batch-cli';
const ENV = { NP_BATCH_KEY: KEY, OPENAI_API_KEY: undefined };

let serve: CliRun;
let url: string;
let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
  serve = startCli(['serve', '--port=0', '--rate=inf', '--min-latency=1ms', '--max-latency=3ms', '--batch-duration=1s'], {
    killAfterMs: 120_000,
  });
  for (const deadline = performance.now() + 20_000; ; ) {
    const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(serve.stdout());
    if (match !== null) {
      url = match[1]!;
      break;
    }
    if (serve.child.exitCode !== null || performance.now() > deadline) throw new Error(`serve did not start: ${serve.stderr()}`);
    await sleep(20);
  }
});

afterAll(async () => {
  serve?.send('SIGTERM');
  await serve?.result;
  await temp?.remove();
});

const readLines = async (path: string) => linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line));
const openAi = () => ['--provider=openai', `--base-url=${url}/v1`, '--api-key-env=NP_BATCH_KEY'];
/** The batches serve holds for the key: every one ever submitted. */
async function batchesAtServe(): Promise<number> {
  const response = await fetch(`${url}/v1/batches?limit=100`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await response.json()) as { data: unknown[] }).data.length;
}

describe('news-processor --batch', () => {
  it('runs offline over the simulated provider: a round per level, every line written, at half the price', async () => {
    const output = join(temp.dir, 'simulated.jsonl');
    const live = join(temp.dir, 'live.jsonl');
    const price = ['--price-input=1', '--price-output=4', '--articles=4', '--min-latency=0ms', '--max-latency=1ms'];
    const result = await runCli(['--batch', '--batch-poll=50ms', `--output=${output}`, '--json', ...price]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 4, failed: 0, batches: 2, rows: 8, interrupted: false });
    const lines = await readLines(output);
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(Object.keys(line.outputs).sort()).toEqual(['sentiment', 'summarize']);
    // Nothing left to resume: the state file goes once every article has its line.
    expect(existsSync(`${output}.batches.json`)).toBe(false);
    // The same articles live: the simulator answers each the same, so the batch line costs half.
    const liveRun = await runCli([`--output=${live}`, '--rate=inf', ...price]);
    expect(liveRun.code, liveRun.stderr).toBe(0);
    const liveCost = new Map((await readLines(live)).map((line) => [line.id, line.costUsd]));
    for (const line of lines) expect(line.costUsd * 2).toBeCloseTo(liveCost.get(line.id), 5);
  });

  it('sends failed rows again in later batches, then writes dead letters with the reason', async () => {
    const output = join(temp.dir, 'stress.jsonl');
    const args = ['--batch', '--batch-poll=50ms', `--output=${output}`, '--articles=10', '--profile=stress', '--json'];
    const result = await runCli([...args, '--min-latency=0ms', '--max-latency=1ms']);
    const figures = JSON.parse(result.stdout);
    // A stressed provider fails some 40% of its answers (429s, 5xx, hangs): rows go again, some run out of attempts.
    expect(figures.rowsFailed).toBeGreaterThan(0);
    expect(figures.rowsRetried).toBeGreaterThan(0);
    // Seeded: the same articles fail the same way each run, one of them three times over.
    expect(figures.failed).toBeGreaterThan(0);
    expect(figures.succeeded + figures.failed).toBe(10);
    expect(result.code, result.stderr).toBe(1);
    const lines = await readLines(output);
    expect(lines).toHaveLength(10);
    for (const line of lines.filter((l) => l.status === 'failed')) {
      expect(line.error.type).toBe('BatchRowError');
      expect(line.error.message).toMatch(/^(RateLimitError|ServerError|TimeoutError): .* \(after 3 attempts\)$/);
      expect(line.attempts).toBeGreaterThanOrEqual(3);
    }
  });

  it('runs a tasks file whose tasks depend on each other, level by level', async () => {
    const tasks = join(temp.dir, 'tasks.json');
    const schema = { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'], additionalProperties: false };
    await writeFile(
      tasks,
      JSON.stringify({
        tasks: [
          { name: 'topic', prompt: 'The topic of {{title}}', schema },
          { name: 'headline', prompt: 'A headline about {{tasks.topic.topic}}', dependsOn: ['topic'], schema },
          { name: 'tweet', prompt: 'A tweet: {{tasks.headline.topic}}', dependsOn: ['headline'], schema },
        ],
      }),
    );
    const output = join(temp.dir, 'tasks-out.jsonl');
    const result = await runCli(['--batch', '--batch-poll=50ms', `--tasks=${tasks}`, `--output=${output}`, '--articles=3', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 3, batches: 3, rows: 9 });
  });

  it('--batch-articles: reads more articles as earlier ones end, each level of them a batch', async () => {
    const output = join(temp.dir, 'held.jsonl');
    const result = await runCli(['--batch', '--batch-poll=50ms', '--batch-articles=2', `--output=${output}`, '--articles=3', '--json']);
    expect(result.code, result.stderr).toBe(0);
    // 2 then 1 articles in progress, a batch for each of their two levels.
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 3, batches: 4, rows: 6 });
    expect((await readLines(output)).map((line) => line.id)).toEqual(['1', '2', '3']);
  });

  it('--batch-articles, Ctrl-C: says the rest of the input was not read, and --resume finishes every article', async () => {
    const output = join(temp.dir, 'held-stopped.jsonl');
    const args = ['--batch', '--batch-poll=50ms', '--batch-articles=1', `--output=${output}`, '--articles=3'];
    const stopped = startCli(args);
    await stopped.waitForStderr(/batches: 1 running/, 20_000);
    stopped.send('SIGINT');
    const result = await stopped.result;
    expect(result.code).toBe(130);
    expect(result.stdout).toContain('Batch run: 0 articles succeeded, 0 failed, 1 left, the rest of the input not read\n');
    // Resumed holding more at once: the rest goes in two batches.
    const finished = await runCli([...args, '--batch-articles=3', '--resume', '--json']);
    expect(finished.code, finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout)).toMatchObject({ succeeded: 3, left: 0, unread: false, batches: 2 });
    expect((await readLines(output)).map((line) => line.id)).toEqual(['1', '2', '3']);
    expect(existsSync(`${output}.batches.json`)).toBe(false);
  });

  it('--resume cuts off a last line a kill left half written, and runs its article again', async () => {
    const output = join(temp.dir, 'torn.jsonl');
    const args = ['--batch', '--batch-poll=50ms', `--output=${output}`];
    expect((await runCli([...args, '--articles=1'])).code).toBe(0);
    await writeFile(output, `${await readFile(output, 'utf8')}{"id":"2","status":"succ`);
    const resumed = await runCli([...args, '--articles=2', '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ succeeded: 1, rows: 2 });
    expect((await readLines(output)).map((line) => line.id)).toEqual(['1', '2']);
  });

  it('--resume ends a whole last line that has no newline, so that the lines appended start whole', async () => {
    const output = join(temp.dir, 'unterminated.jsonl');
    const args = ['--batch', '--batch-poll=50ms', `--output=${output}`];
    expect((await runCli([...args, '--articles=1'])).code).toBe(0);
    await writeFile(output, (await readFile(output, 'utf8')).trimEnd());
    const resumed = await runCli([...args, '--articles=2', '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    // Article 1 ended with its line: only article 2's two rows go.
    expect(JSON.parse(resumed.stdout)).toMatchObject({ succeeded: 1, rows: 2 });
    expect((await readLines(output)).map((line) => line.id)).toEqual(['1', '2']);
  });

  it("runs against serve's OpenAI Batch API, and --batch-size splits a round into batches", async () => {
    const output = join(temp.dir, 'openai.jsonl');
    const before = await batchesAtServe();
    const result = await runCli(['--batch', '--batch-poll=100ms', '--batch-size=2', `--output=${output}`, '--articles=3', ...openAi()], {
      env: ENV,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Batch run: 3 articles succeeded, 0 failed');
    // Two rounds of three rows, two rows a batch: four batches.
    expect(await batchesAtServe()).toBe(before + 4);
    expect(await readLines(output)).toHaveLength(3);
    expect(result.stderr).toMatch(/batches: \d (running|ended) \(.*\), \d\/\d rows done, 0 failed/);
  });

  it("runs against serve's Anthropic Message Batches", async () => {
    const output = join(temp.dir, 'anthropic.jsonl');
    const listed = async () => {
      const response = await fetch(`${url}/v1/messages/batches?limit=100`, {
        headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
      });
      return ((await response.json()) as { data: unknown[] }).data.length;
    };
    const before = await listed();
    const args = ['--batch', '--batch-poll=100ms', `--output=${output}`, '--articles=3', '--provider=anthropic', `--base-url=${url}`];
    const result = await runCli([...args, '--api-key-env=NP_BATCH_KEY', '--json'], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 3, failed: 0, batches: 2, rows: 6 });
    expect(await listed()).toBe(before + 2);
    for (const line of await readLines(output)) expect(Object.keys(line.outputs).sort()).toEqual(['sentiment', 'summarize']);
  });

  it('stops waiting on Ctrl-C, leaves the batch running, and --resume collects it without submitting it again', async () => {
    const output = join(temp.dir, 'resume.jsonl');
    const before = await batchesAtServe();
    const args = ['--batch', '--batch-poll=100ms', `--output=${output}`, '--articles=3', ...openAi()];
    const run = startCli(args, { env: ENV });
    await run.waitForStderr(/batches: 1 running/, 20_000);
    run.interrupt();
    const stopped = await run.result;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toMatch(
      /stopped: 1 batch still running at the provider \(batch_\w+\), recorded in .*resume\.jsonl\.batches\.json: run again with --resume/,
    );
    expect(stopped.stderr).toContain(`or cancel each with POST ${url}/v1/batches/ID/cancel`);
    expect(existsSync(`${output}.batches.json`)).toBe(true);
    expect(await batchesAtServe()).toBe(before + 1);

    const resumed = await runCli([...args, '--resume'], { env: ENV });
    expect(resumed.code, resumed.stderr).toBe(0);
    // The recorded batch (summarize) collected, one more for sentiment: two in all, none again.
    expect(await batchesAtServe()).toBe(before + 2);
    const lines = await readLines(output);
    expect(lines.map((line) => line.id).sort()).toEqual(['1', '2', '3']);
    for (const line of lines) expect(Object.keys(line.outputs).sort()).toEqual(['sentiment', 'summarize']);
  });

  it('ends on SIGTERM with 143; killed (-9) after submitting, --resume re-attaches and submits nothing twice', async () => {
    const output = join(temp.dir, 'killed.jsonl');
    const args = ['--batch', '--batch-poll=100ms', `--output=${output}`, '--articles=2', ...openAi()];
    const before = await batchesAtServe();
    const terminated = startCli(args, { env: ENV });
    await terminated.waitForStderr(/batches: 1 running/, 20_000);
    terminated.send('SIGTERM');
    expect((await terminated.result).code).toBe(143);
    expect(await batchesAtServe()).toBe(before + 1);

    const killed = startCli([...args, '--resume'], { env: ENV });
    // The summarize batch collected, the sentiment one submitted: killed while it runs.
    await killed.waitForStderr(
      /1 ended \(completed\), being read back, 2\/2 rows done[\s\S]*batches: 1 running \((validating|in_progress)\)/,
      20_000,
    );
    killed.send('SIGKILL');
    expect((await killed.result).signal).toBe('SIGKILL');
    expect(await batchesAtServe()).toBe(before + 2);

    const finished = await runCli([...args, '--resume'], { env: ENV });
    expect(finished.code, finished.stderr).toBe(0);
    expect(await batchesAtServe()).toBe(before + 2);
    const lines = await readLines(output);
    expect(lines.map((line) => line.id).sort()).toEqual(['1', '2']);
    for (const line of lines) expect(Object.keys(line.outputs).sort()).toEqual(['sentiment', 'summarize']);
  });

  it('--max-cost: submits the rows whose worst case fits, stops for a --resume, never over', async () => {
    const output = join(temp.dir, 'budget.jsonl');
    const args = ['--batch', '--batch-poll=50ms', `--output=${output}`, '--articles=4', '--price-input=1', '--price-output=4', '--json'];
    const capped = await runCli([...args, '--max-cost=0.0015']);
    expect(capped.code, capped.stderr).toBe(1);
    expect(capped.stderr).toMatch(
      /^error: --max-cost cannot cover the next row; \d+ articles left: run again with --resume and a larger --max-cost\n$/,
    );
    const figures = JSON.parse(capped.stdout);
    // A row's worst case (its prompt's bytes and framing, 256 output tokens, at half price) is some 0.0013 USD: one fits.
    expect(figures).toMatchObject({ budgetStopped: true, rows: 1, left: 4 });
    expect(figures.costUsd).toBeGreaterThan(0);
    expect(figures.costUsd).toBeLessThanOrEqual(0.0015);
    const finished = await runCli([...args, '--max-cost=1', '--resume']);
    expect(finished.code, finished.stderr).toBe(0);
    expect((await readLines(output)).map((line) => line.id).sort()).toEqual(['1', '2', '3', '4']);
  });

  it('--max-cost a fraction of the whole: a few batches, not one tiny batch at a time; what was left and why said', async () => {
    const output = join(temp.dir, 'budget-rounds.jsonl');
    const args = ['--batch', '--batch-poll=20ms', `--output=${output}`, '--articles=300', '--price-input=1000', '--price-output=1000'];
    const capped = await runCli([...args, '--max-cost=3', '--json']);
    expect(capped.code, capped.stderr).toBe(1);
    const figures = JSON.parse(capped.stdout);
    expect(figures.batches).toBeLessThanOrEqual(5);
    expect(figures.costUsd).toBeLessThanOrEqual(3);
    expect(figures).toMatchObject({ budgetStopped: true, budgetStop: { rounds: figures.batches } });
    // The articles furthest on go first: the rows of a budget end articles rather than start others.
    expect(figures.succeeded).toBeGreaterThan(0);
    expect(capped.stderr).toMatch(
      /^error: --max-cost: \$[\d.]+ left holds \d+ rows? at their worst case, after \d batches the budget cut short \(the first held \d+\): not spent a few rows a batch; 29\d articles left: run again with --resume to spend it in more batches, or a larger --max-cost\n$/,
    );
  });

  it('refuses an --output that exists without --resume or --overwrite, and leaves it as it was', async () => {
    const output = join(temp.dir, 'kept.jsonl');
    await writeFile(output, '{"id":"1"}\n');
    const result = await runCli(['--batch', `--output=${output}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: --output ${output} exists: --resume takes it up, --overwrite replaces it\n`);
    expect(await readFile(output, 'utf8')).toBe('{"id":"1"}\n');
  });

  it.each([
    [['--batch'], 'error: --batch needs --output FILE: what was submitted is saved beside it, so that a stopped run can --resume'],
    [
      ['--batch', '--output=-'],
      'error: --batch needs --output FILE: what was submitted is saved beside it, so that a stopped run can --resume',
    ],
    [
      ['--batch', '--output=x.jsonl', '--batch-poll=0s'],
      "error: option '--batch-poll <duration>' argument '0s' is invalid. Expected a duration > 0.",
    ],
    [['--batch', '--output=x.jsonl', '--batch-poll=soon'], "error: option '--batch-poll <duration>' argument 'soon' is invalid."],
    [
      ['--batch', '--output=x.jsonl', '--workers=3', '--rate=9'],
      'error: --workers, --rate shape live calls, which --batch makes only with --batch-fallback=live: leave them out',
    ],
    [['--batch-poll=1s'], 'error: --batch-poll applies with --batch only'],
    [
      ['--batch', '--output=x.jsonl', '--provider=azure', '--base-url=http://localhost:1', '--model=d', '--api-version=v'],
      // A vendor without a Batch API in the registry: refused by what it lacks, not by its name.
      'error: --batch: provider type azure has no Batch API',
    ],
    [['--batch', '--output=none.jsonl', '--resume'], 'error: --resume: '],
  ])('%j: one line, exit 2, nothing written', async (args, message) => {
    const at = (arg: string) => arg.replace(/=(x|none)\.jsonl$/, (_, name) => `=${join(temp.dir, name)}.jsonl`);
    const result = await runCli(args.map(at), { env: { AZURE_OPENAI_API_KEY: 'k' } });
    expect(result.code, result.stderr).toBe(2);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr.startsWith(message)).toBe(true);
    expect(existsSync(join(temp.dir, 'x.jsonl'))).toBe(false);
  });
});
