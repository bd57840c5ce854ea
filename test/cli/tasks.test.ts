// The user's own tasks (--tasks) and what a run may spend (--max-cost), end to end: the compiled
// command against the in-process simulation, `serve` on both routes, and a scripted server that
// records what it was sent.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmServer } from '../../src/server/index.ts';
import { type ScriptedApiServer, startScriptedApiServer, type Vendor } from '../vendors/scripted-api-server.ts';
import { FAST, linesOf, makeTempDir, runCli } from './run-cli.ts';

const TASKS = 'fixtures/tasks/entities-headline.json';
const KEY = 'sk-tasks-0123456789-never-shown';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
let scripted: ScriptedApiServer;
let serve: LlmServer;
let serveUrl: string;
beforeAll(async () => {
  temp = await makeTempDir();
  scripted = await startScriptedApiServer({ apiKey: KEY });
  serve = new LlmServer({ rate: Infinity, simulation: { minLatencyMs: 0, maxLatencyMs: 0 } });
  serveUrl = await serve.listen({ port: 0 });
});
afterAll(async () => {
  await Promise.all([scripted.close(), serve.close(), temp.remove()]);
});

let files = 0;
const path = (name: string) => join(temp.dir, `${++files}-${name}`);
async function write(name: string, content: unknown): Promise<string> {
  const file = path(name);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}
const results = async (file: string) => linesOf(await readFile(file, 'utf8')).map((line) => JSON.parse(line));

const OBJECT = (property: string) => ({
  type: 'object',
  properties: { [property]: { type: 'string' } },
  required: [property],
  additionalProperties: false,
});

describe.concurrent('news-processor --tasks', { timeout: 60_000 }, () => {
  it('runs a tasks file offline with no other flag: every article gets every task, its output in the result line', async () => {
    const output = path('out.jsonl');
    const result = await runCli([
      '--tasks',
      TASKS,
      '--articles=3',
      '--min-latency=0ms',
      '--max-latency=1ms',
      '--output',
      output,
      '--quiet',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = await results(output);
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatchObject({ status: 'succeeded', attempts: 2 });
      expect(line.outputs.entities).toEqual({ people: expect.any(Array), places: expect.any(Array) });
      expect(typeof line.outputs.headline.headline).toBe('string');
    }
    expect(result.stdout).toMatch(/^Task entities: 3 calls \| retries 0 \| 429s 0 \| latency p50 .* \| tokens \d+$/m);
    expect(result.stdout).toMatch(/^Task headline: 3 calls/m);
  });

  it.sequential.each<Vendor>(['openai', 'anthropic'])(
    'sends each task as %s structured output, the placeholders filled, a dependent prompt with the earlier output',
    async (vendor) => {
      const before = scripted.requests.length;
      const output = path('out.jsonl');
      const base = vendor === 'openai' ? scripted.openAiUrl : scripted.url;
      const result = await runCli(
        ['--tasks', TASKS, `--provider=${vendor}`, `--base-url=${base}`, '--rate=inf', '--articles=2', '--output', output, '--quiet'],
        { env: { [vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY']: KEY } },
      );
      expect(result.code, result.stderr).toBe(0);
      const sent = scripted.requests.slice(before).map((request) => request.body as Record<string, any>);
      expect(sent).toHaveLength(4);
      const written = await results(output);
      for (const line of written) {
        const entities = sent.find((body) => taskName(vendor, body) === 'entities' && promptText(body).includes(`Title: ${line.title}`))!;
        expect(promptText(entities)).toMatch(/^List the people and places in this article\.\n\nTitle: .+\n\n.+/s);
        // The task's schema, as the provider's structured output: OpenAI's json_schema, Anthropic's forced tool.
        if (vendor === 'openai') expect(entities.response_format.json_schema).toMatchObject({ name: 'entities', strict: true });
        else expect(entities.tool_choice).toEqual({ type: 'tool', name: 'entities' });
        expect(entities[vendor === 'openai' ? 'max_completion_tokens' : 'max_tokens']).toBe(200);
        const headline = sent.find((body) => taskName(vendor, body) === 'headline' && promptText(body).endsWith(contentOf(entities)));
        expect(headline, `the headline prompt of ${line.id}`).toBeDefined();
        expect(promptText(headline!)).toBe(
          `Write a headline naming ${JSON.stringify(line.outputs.entities.people)} for:\n\n${contentOf(entities)}`,
        );
      }
    },
  );

  it.each<Vendor>(['openai', 'anthropic'])('runs against serve on the %s route: answers that fit every task’s schema', async (vendor) => {
    const output = path('out.jsonl');
    const result = await runCli(
      [
        '--tasks',
        TASKS,
        `--provider=${vendor}`,
        `--base-url=${vendor === 'openai' ? `${serveUrl}/v1` : serveUrl}`,
        '--rate=inf',
        '--articles=3',
        '--output',
        output,
        '--json',
      ],
      { env: { [vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY']: KEY } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      succeeded: 3,
      calls: 6,
      tasks: [
        { name: 'entities', calls: 3 },
        { name: 'headline', calls: 3 },
      ],
    });
    for (const line of await results(output)) {
      expect(line.outputs.entities).toEqual({ people: expect.any(Array), places: expect.any(Array) });
      expect(typeof line.outputs.headline.headline).toBe('string');
    }
  });

  it.each([
    ['a missing file', () => Promise.resolve('fixtures/tasks/none.json'), /^error: fixtures\/tasks\/none\.json: cannot read file \(ENOENT/],
    ['invalid JSON', () => write('bad.json', '{"tasks": ['), /^error: .*bad\.json: invalid JSON \(/],
    [
      'an unknown dependency',
      () => write('t.json', { tasks: [{ name: 'a', prompt: 'x {{content}}', schema: OBJECT('a'), dependsOn: ['b'] }] }),
      /^error: .*t\.json: task "a" depends on "b", which no task is \(the tasks: a\)\n$/,
    ],
    [
      'a cycle',
      () =>
        write('t.json', {
          tasks: [
            { name: 'a', prompt: 'x', schema: OBJECT('a'), dependsOn: ['b'] },
            { name: 'b', prompt: 'y', schema: OBJECT('b'), dependsOn: ['a'] },
          ],
        }),
      /^error: .*t\.json: tasks "a" → "b" → "a" depend on each other in a cycle: remove one of those dependsOn\n$/,
    ],
    [
      'a duplicate name',
      () =>
        write('t.json', {
          tasks: [
            { name: 'a', prompt: 'x', schema: OBJECT('a') },
            { name: 'a', prompt: 'y', schema: OBJECT('b') },
          ],
        }),
      /^error: .*t\.json: task "a" is defined twice/,
    ],
    [
      'an invalid JSON Schema',
      () => write('t.json', { tasks: [{ name: 'a', prompt: 'x', schema: { type: 'object', required: 'a' } }] }),
      /^error: .*t\.json: task "a": its schema is not a valid JSON Schema \(/,
    ],
    [
      'a provider the run does not have',
      () => write('t.json', { tasks: [{ name: 'a', prompt: 'x', schema: OBJECT('a'), provider: 'anthropic' }] }),
      /^error: .*t\.json: task "a" asks for provider "anthropic", which is not one of the run's \("simulated"\)\n$/,
    ],
    [
      'a placeholder naming a task not in dependsOn',
      () =>
        write('t.json', {
          tasks: [
            { name: 'a', prompt: 'x', schema: OBJECT('a') },
            { name: 'b', prompt: 'use {{tasks.a.a}}', schema: OBJECT('b') },
          ],
        }),
      /^error: .*t\.json: task "b": \{\{tasks\.a\.a\}\} reads task "a", which is not in its dependsOn: add "a" there\n$/,
    ],
  ])('refuses %s before the run: exit 2, one line naming the file and the task', async (_, file, message) => {
    const result = await runCli(['--tasks', await file(), ...FAST, '--articles=2']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('refuses, for OpenAI, a schema its strict mode does not take: before any call, as OpenAI says it', async () => {
    const file = await write('loose.json', {
      tasks: [{ name: 'a', prompt: 'x {{content}}', schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } }],
    });
    // Nothing listens at this address: the refusal comes before any call.
    const args = ['--tasks', file, '--provider=openai', '--base-url', 'http://127.0.0.1:9/v1', '--articles=1'];
    const result = await runCli(args, { env: { OPENAI_API_KEY: 'sk-test' } });
    expect(result.code).toBe(2);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^error: .*loose\.json: task "a": OpenAI's strict mode refuses its schema: .*additionalProperties.* \(every call would be a 400\)\n$/,
    );
    // Anthropic's forced tool takes it as it is.
    const anthropic = await runCli(
      ['--tasks', file, '--provider=anthropic', '--base-url', 'http://127.0.0.1:9', '--articles=1', '--max-attempts=1'],
      {
        env: { ANTHROPIC_API_KEY: 'sk-test' },
      },
    );
    expect(anthropic.stderr).not.toMatch(/strict mode/);
  });

  it('refuses a task whose maxOutputTokens the token limit cannot hold', async () => {
    const file = await write('t.json', { tasks: [{ name: 'a', prompt: 'x', schema: OBJECT('a'), maxOutputTokens: 5000 }] });
    const result = await runCli(['--tasks', file, ...FAST, '--tpm=4000', '--articles=1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^error: .*t\.json: task "a": its maxOutputTokens \(5000\) cannot fit the tokens limit of provider "simulated" \(burst 4000; a call takes its prompt's tokens plus that many at once\): give the task a smaller maxOutputTokens, or the provider a larger limit\n$/,
    );
  });

  it.sequential('--resume after a failure in the second task runs only that task: the first is not paid for again', async () => {
    const tasks = await write('t.json', {
      tasks: [
        { name: 'first', prompt: 'First: {{content}}', schema: OBJECT('first') },
        // Fails once per prompt (the scripted server's cue), so the first run fails every article here.
        { name: 'second', dependsOn: ['first'], prompt: 'cue:500-once Second: {{content}}', schema: OBJECT('second') },
      ],
    });
    const input = await write(
      'in.jsonl',
      [1, 2, 3].map((n) => JSON.stringify({ id: `r${n}`, title: `T${n}`, content: `Resume body ${n} ${files}.` })).join('\n'),
    );
    const output = path('out.jsonl');
    const args = [
      '--tasks',
      tasks,
      '--provider=openai',
      `--base-url=${scripted.openAiUrl}`,
      '--rate=inf',
      '--input',
      input,
      '--output',
      output,
      '--quiet',
    ];
    const env = { OPENAI_API_KEY: KEY };
    const before = scripted.requests.length;
    const failed = await runCli([...args, '--max-attempts=1'], { env });
    expect(failed.code).toBe(1);
    const firstRun = await results(output);
    expect(firstRun.map((line) => [line.status, line.error?.task, Object.keys(line.outputs)])).toEqual([
      ['failed', 'second', ['first']],
      ['failed', 'second', ['first']],
      ['failed', 'second', ['first']],
    ]);
    const between = scripted.requests.length;
    const resumed = await runCli([...args, '--resume'], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const names = (from: number, to: number) => scripted.requests.slice(from, to).map((request) => taskName('openai', request.body));
    expect(names(before, between).sort()).toEqual(['first', 'first', 'first', 'second', 'second', 'second']);
    expect(names(between, scripted.requests.length)).toEqual(['second', 'second', 'second']);
    const final = await results(output);
    expect(final.map((line) => line.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    for (const line of final) expect(line.outputs.first).toEqual(firstRun.find((earlier) => earlier.id === line.id).outputs.first);
  });
});

describe.concurrent('news-processor --tasks: the least possible time', { timeout: 60_000 }, () => {
  // Two tasks that do not depend on each other: an article's two calls run at once.
  const independent = () =>
    write('independent.json', {
      tasks: [
        { name: 'topic', prompt: 'Topic of: {{title}}', schema: OBJECT('topic') },
        { name: 'people', prompt: 'People in: {{content}}', schema: OBJECT('people') },
      ],
    });
  const check = (stdout: string) => {
    const summary = JSON.parse(stdout);
    expect(summary.succeeded).toBe(5);
    // Each article's critical path is one call, not the two added up: no bound passes the elapsed time.
    for (const bound of Object.values(summary.lowerBoundsMs) as number[]) expect(bound).toBeLessThanOrEqual(summary.elapsedMs);
    expect(summary.efficiency).toBeLessThanOrEqual(1);
    expect(summary.efficiency).toBeGreaterThan(0.5);
  };

  it.each([
    ['without limits', ['--rate=inf']],
    ['under a rate limit', ['--rate=20', '--burst=2']],
  ])('is a true lower bound for independent tasks, on the simulated provider %s', async (_, limits) => {
    const result = await runCli([
      '--tasks',
      await independent(),
      '--articles=5',
      '--workers=5',
      '--min-latency=100ms',
      '--max-latency=150ms',
      ...limits,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    check(result.stdout);
  });

  it('is a true lower bound for independent tasks against serve', async () => {
    const slow = new LlmServer({ rate: Infinity, simulation: { minLatencyMs: 100, maxLatencyMs: 150 } });
    const url = await slow.listen({ port: 0 });
    try {
      const result = await runCli(
        [
          '--tasks',
          await independent(),
          '--provider=openai',
          `--base-url=${url}/v1`,
          '--rate=inf',
          '--articles=5',
          '--workers=5',
          '--json',
        ],
        { env: { OPENAI_API_KEY: KEY } },
      );
      expect(result.code, result.stderr).toBe(0);
      check(result.stdout);
    } finally {
      await slow.close();
    }
  });
});

describe.concurrent('news-processor --max-cost', { timeout: 60_000 }, () => {
  const PRICES = ['--price-input=400', '--price-output=1600'];

  it('says what the run cost: in each result line, per task and in all', async () => {
    const output = path('out.jsonl');
    const result = await runCli([...FAST, '--articles=2', ...PRICES, '--output', output, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    const lines = await results(output);
    const perLine = lines.map((line) => line.costUsd as number);
    expect(perLine.every((cost) => cost > 0)).toBe(true);
    expect(summary.costUsd).toBeCloseTo(perLine[0]! + perLine[1]!, 9);
    expect(summary.tasks.map((task: { costUsd: number }) => task.costUsd).reduce((a: number, b: number) => a + b)).toBeCloseTo(
      summary.costUsd,
      9,
    );
    expect(summary.providers[0].costUsd).toBeCloseTo(summary.costUsd, 9);
  });

  it('stops when spent, within the budget, saying so in one line; --resume --max-cost goes on and finishes', async () => {
    const output = path('out.jsonl');
    const args = [...FAST, '--articles=12', '--workers=2', ...PRICES, '--output', output];
    const stopped = await runCli([...args, '--max-cost=2', '--json']);
    expect(stopped.code).toBe(1);
    const summary = JSON.parse(stopped.stdout);
    expect(summary.stoppedBy).toMatchObject({ by: 'budget', type: 'BudgetExhaustedError' });
    expect(summary.costUsd).toBeLessThanOrEqual(2);
    expect(summary.budget.spentUsd).toBeLessThanOrEqual(2);
    expect(summary.notStarted).toBeGreaterThan(0);
    expect(linesOf(stopped.stderr)).toEqual([
      expect.stringMatching(
        /^error: the budget of \$2\.00 cannot cover the next call \(up to \$[\d.]+\): \$[\d.]+ of it is spent(, \$[\d.]+ held by calls in flight)?; intake stopped, \d+ articles? not started: run again with --resume and a larger --max-cost to go on \(it caps the whole job: what was spent counts\)$/,
      ),
    ]);
    const resumed = await runCli([...args, '--max-cost=100', '--resume', '--quiet']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = await results(output);
    expect(lines.map((line) => line.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
    expect(lines.every((line) => line.status === 'succeeded')).toBe(true);
  });

  it("is the job's: on --resume what the results file says was spent counts against it, judged by what was billed", async () => {
    const output = path('job.jsonl');
    // One price for input and output: what the provider billed is its tokens used at that price.
    const args = [...FAST, '--articles=80', '--workers=3', '--price-input=100', '--price-output=100', '--max-cost=1.5', '--output', output];
    const billed = (summary: { providers: { tokensUsed: number }[] }) => (summary.providers[0]!.tokensUsed * 100) / 1e6;
    const nano = (usd: number) => Math.round(usd * 1e9);
    const lineSum = async () => (await results(output)).reduce((sum: number, line: { costUsd: number }) => sum + nano(line.costUsd), 0);

    const first = await runCli([...args, '--json']);
    expect(first.code, first.stderr).toBe(1);
    const firstSummary = JSON.parse(first.stdout);
    expect(firstSummary.stoppedBy).toMatchObject({ by: 'budget' });
    const firstBilled = billed(firstSummary);
    expect(firstBilled).toBeGreaterThan(0.5);
    expect(nano(firstSummary.costUsd)).toBe(nano(firstBilled));
    // Every call is in a line: those of the articles the budget stopped too.
    expect(await lineSum()).toBe(nano(firstBilled));

    const second = await runCli([...args, '--resume', '--json']);
    const secondSummary = JSON.parse(second.stdout);
    const secondBilled = billed(secondSummary);
    expect(secondSummary.earlierCostUsd).toBeCloseTo(firstBilled, 9);
    // Only what the first run left of the $1.50 was there to spend.
    expect(firstBilled + secondBilled).toBeLessThanOrEqual(1.5);
    expect(secondSummary.budget.spentUsd).toBeCloseTo(firstBilled + secondBilled, 9);
    expect(await lineSum()).toBe(nano(firstBilled) + nano(secondBilled));
    const ids = (await results(output)).map((line: { id: string }) => line.id);
    expect(new Set(ids).size).toBe(ids.length);

    // The human summary says one cost: this run's, and the job's in all, of the budget.
    const third = await runCli([...args, '--resume', '--quiet']);
    expect(third.stdout).toMatch(/^Cost: \$[\d.]+ this run, \$[\d.]+ in all of a \$1\.50 budget$/m);
    expect(third.stdout).not.toMatch(/spent or held/);
  });

  it.each([
    [
      'a budget smaller than one call',
      ['--max-cost=0.0001', ...PRICES],
      /^error: --max-cost \$0\.0001 cannot cover one call: the cheapest, of task \w+, holds up to \$[\d.]+ /,
    ],
    ['a budget without a price', ['--max-cost=5'], /^error: --max-cost needs a price to count in: give --price-input and --price-output/],
    ['half a price', ['--price-input=1'], /^error: --price-input and --price-output go together/],
    [
      'a price that is not a number',
      ['--price-input=cheap', '--price-output=1'],
      /^error: option '--price-input <usd>' argument 'cheap' is invalid/,
    ],
    ['a budget key without Redis', ['--budget-key=team', '--max-cost=5', ...PRICES], /^error: --budget-key needs --redis/],
  ])('refuses %s before the run: exit 2, one line', async (_, flags, message) => {
    const result = await runCli([...FAST, '--articles=2', ...flags]);
    expect(result.code).toBe(2);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });
});

function taskName(vendor: Vendor, body: Record<string, any>): string {
  return vendor === 'openai' ? body.response_format.json_schema.name : body.tool_choice.name;
}

function promptText(body: Record<string, any>): string {
  return body.messages[0].content;
}

/** The article's text, as the entities prompt carries it after its title. */
function contentOf(entities: Record<string, any>): string {
  return promptText(entities).split('\n\n').slice(2).join('\n\n');
}
