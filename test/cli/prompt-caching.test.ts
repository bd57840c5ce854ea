// Prompt caching end to end: the compiled command against `serve`, a task whose long static head
// the vendor caches — the second article reads what the first wrote, and costs less for it.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, linesOf, makeTempDir, runCli, startServe } from './run-cli.ts';

const KEY_VARIABLE = 'NP_PROMPT_CACHE_TEST_KEY';
const ENV = { [KEY_VARIABLE]: 'sk-prompt-cache-test', OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined };
/** Some 2,000 tokens of instructions before the first placeholder: past the minimum of the models asked. */
const HEAD = `You label news articles for a newsroom's archive. ${'Read the article closely, weigh every claim against the house rules, and pick the single best label. '.repeat(100)}\n\nArticle:\n`;

let temp: Awaited<ReturnType<typeof makeTempDir>>;
let serve: { run: CliRun; url: string };
let input: string;
let tasks: string;

beforeAll(async () => {
  temp = await makeTempDir();
  serve = await startServe(['--rate=inf', '--min-latency=0ms', '--max-latency=0ms']);
  input = join(temp.dir, 'articles.jsonl');
  tasks = join(temp.dir, 'tasks.json');
  const articles = [
    { id: 'a', title: 'Rain', content: 'Rain fell on Paris all day.' },
    { id: 'b', title: 'Snow', content: 'Snow closed the roads to Oslo.' },
  ];
  await writeFile(input, articles.map((article) => `${JSON.stringify(article)}\n`).join(''));
  const schema = { type: 'object', additionalProperties: false, required: ['label'], properties: { label: { type: 'string' } } };
  await writeFile(tasks, JSON.stringify({ tasks: [{ name: 'label', prompt: `${HEAD}{{content}}`, schema }] }));
}, 60_000);

afterAll(async () => {
  serve?.run.send('SIGKILL');
  await temp?.remove();
});

/** The run's result lines by id, and its --json summary, after checking it exited 0. */
async function run(name: string, args: readonly string[], key = ENV[KEY_VARIABLE]): Promise<{ lines: Record<string, any>; summary: any }> {
  const output = join(temp.dir, `${name}.jsonl`);
  // One worker: the first article's call has written the cache before the second's is sent.
  const common = [`--input=${input}`, `--tasks=${tasks}`, `--output=${output}`, '--workers=1', `--api-key-env=${KEY_VARIABLE}`, '--json'];
  const result = await runCli([...common, ...args], { env: { ...ENV, [KEY_VARIABLE]: key } });
  expect(result.code, result.stderr).toBe(0);
  const lines = Object.fromEntries(linesOf(await readFile(output, 'utf8')).map((line) => [JSON.parse(line).id, JSON.parse(line)]));
  return { lines, summary: JSON.parse(result.stdout) };
}

describe('prompt caching against serve', { timeout: 60_000 }, () => {
  it('Anthropic: the first article writes the head at 1.25× the input price, the second reads it at 0.1×, and costs less', async () => {
    const against = [
      '--provider=anthropic',
      `--base-url=${serve.url}`,
      '--model=claude-sonnet-4-5',
      '--price-input=3',
      '--price-output=15',
    ];
    const { lines, summary } = await run('anthropic', against);
    const [first, second] = [lines.a, lines.b];
    expect(second.costUsd).toBeLessThan(first.costUsd / 3);
    const { readTokens, writeTokens } = summary.promptCache;
    expect(readTokens).toBe(writeTokens);
    expect(writeTokens).toBeGreaterThan(1024);
    // The difference is the head's — written at $3.75 a million, read at $0.30 — give or take the
    // few tokens by which the two articles and their answers differ (20 output tokens at $15).
    expect(Math.abs(first.costUsd - second.costUsd - (writeTokens * 3.45) / 1e6)).toBeLessThan(3e-4);
    expect(summary.costUsd).toBeCloseTo(first.costUsd + second.costUsd, 9);
  });

  it('OpenAI: the second article is served the shared head at half the input price; --price-cached-input sets it', async () => {
    const against = ['--provider=openai', `--base-url=${serve.url}/v1`, '--price-input=2', '--price-output=8'];
    const { lines, summary } = await run('openai', against);
    expect(lines.b.costUsd).toBeLessThan(lines.a.costUsd * 0.75);
    const { readTokens, writeTokens } = summary.promptCache;
    expect(readTokens % 128).toBe(0);
    expect(readTokens).toBeGreaterThanOrEqual(1024);
    expect(writeTokens).toBe(0);
    // Another API key, whose cache on serve is cold: the same calls, the same tokens read.
    const stated = await run('openai-stated', [...against, '--price-cached-input=0.5'], 'sk-prompt-cache-test-2');
    expect(stated.summary.promptCache).toEqual(summary.promptCache);
    // 0.5 a million less for each token read than at the default half price (1): the run costs that much less.
    expect(summary.costUsd - stated.summary.costUsd).toBeCloseTo((readTokens * 0.5) / 1e6, 9);
  });

  it('says what the prompt cache did in the summary', async () => {
    const against = [
      '--provider=anthropic',
      `--base-url=${serve.url}`,
      '--model=claude-sonnet-4-5',
      '--price-input=3',
      '--price-output=15',
    ];
    const output = join(temp.dir, 'text.jsonl');
    const result = await runCli(
      [`--input=${input}`, `--tasks=${tasks}`, `--output=${output}`, '--workers=1', `--api-key-env=${KEY_VARIABLE}`, ...against],
      { env: ENV },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Prompt cache: \d+ input tokens read, \d+ written$/m);
  });

  it('refuses a cache price beside --config, and a prompt-cache TTL that is no duration, in one line', async () => {
    const config = await runCli(['--articles=1', '--config=fixtures/providers/two-providers.json', '--price-cache-write=1'], { env: ENV });
    expect(config.code).toBe(2);
    expect(config.stderr.trim()).toBe(
      'error: --price-cache-write describes a single provider; with --config set "price" per provider in the file',
    );
    const ttl = await runCli(['serve', '--prompt-cache-ttl=soon'], { env: ENV });
    expect(ttl.code).toBe(2);
    expect(ttl.stderr.trim()).toBe(
      "error: option '--prompt-cache-ttl <duration>' argument 'soon' is invalid. Expected a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h).",
    );
  });

  it('refuses a cache price without --price-input, in one line, before anything runs', async () => {
    const result = await runCli(['--articles=1', '--price-cached-input=0.1'], { env: ENV });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      "error: --price-cached-input needs --price-input and --price-output: it is part of the provider's price",
    );
  });
});
