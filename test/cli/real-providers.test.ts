import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANTHROPIC_DEFAULTS } from '../../src/vendors/anthropic/defaults.ts';
import { OPENAI_DEFAULTS } from '../../src/vendors/openai/defaults.ts';
import { PROVIDER_DEFAULTS } from '../../src/vendors/registry.ts';
import { refusedUrl, type ScriptedApiServer, startScriptedApiServer, type Vendor } from '../vendors/scripted-api-server.ts';
import { type CliResult, linesOf, makeTempDir, runCli } from './run-cli.ts';

const KEY = 'sk-cli-0123456789-never-shown';

let server: ScriptedApiServer;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  server = await startScriptedApiServer({ apiKey: KEY, slowMs: 10_000, okDelayMs: 20 });
  temp = await makeTempDir();
});
afterAll(async () => {
  await server.close();
  await temp.remove();
});

const baseUrl = (vendor: Vendor) => (vendor === 'openai' ? server.openAiUrl : server.url);

/** The flags that point a run at the scripted server as `vendor`, its key in the default variable. */
function against(vendor: Vendor): { args: string[]; env: Record<string, string> } {
  return {
    args: [`--provider=${vendor}`, `--base-url=${baseUrl(vendor)}`, '--model=scripted-model', '--rate=inf'],
    env: { [vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY']: KEY },
  };
}

let files = 0;
/** A JSONL input file of articles with these titles (each may carry a `cue:NAME` for the server). */
async function articles(titles: readonly string[]): Promise<string> {
  const path = join(temp.dir, `articles-${++files}.jsonl`);
  // Each file's prompts are its own: a `-once` cue fails once per prompt the server has seen.
  const lines = titles.map((title, index) =>
    JSON.stringify({ id: `a${index + 1}`, title, content: `Article ${index + 1} of file ${files} says little.` }),
  );
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

const outputPath = () => join(temp.dir, `results-${++files}.jsonl`);

async function results(path: string): Promise<any[]> {
  return linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line));
}

/** The key is in no output: not on stdout, not on stderr, not in the results file. */
async function expectNoKey(result: CliResult, output?: string): Promise<void> {
  expect(result.stdout).not.toContain(KEY);
  expect(result.stderr).not.toContain(KEY);
  if (output !== undefined) expect(await readFile(output, 'utf8')).not.toContain(KEY);
}

function expectOneLineError(result: CliResult, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

const requestsSince = (count: number) => server.requests.slice(count);

describe.each<Vendor>(['openai', 'anthropic'])('news-processor --provider=%s against a scripted server', (vendor) => {
  it('runs the pipeline end to end: every article summarised and classified, results written, the key nowhere', async () => {
    const { args, env } = against(vendor);
    const output = outputPath();
    const before = server.requests.length;
    const result = await runCli([...args, '--articles=4', '--workers=2', `--output=${output}`, '--tpm=100000', '--max-output-tokens=77'], {
      env,
    });
    expect(result.code, result.stderr).toBe(0);
    const written = await results(output);
    expect(written.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(written[0]).toMatchObject({
      outputs: { summarize: { summary: 'A scripted summary.' }, sentiment: { sentiment: 'positive', score: 0.5 } },
      attempts: 2,
    });
    const sent = requestsSince(before);
    expect(sent).toHaveLength(8);
    // The token limits reserved 77 output tokens per call: exactly what each request asked for.
    for (const { body, vendor: route } of sent) {
      expect(route).toBe(vendor);
      expect(vendor === 'openai' ? body.max_completion_tokens : body.max_tokens).toBe(77);
    }
    await expectNoKey(result, output);
  });

  it('ends each failure as specified: retried ones succeed, the others are dead letters with their reason', async () => {
    const { args, env } = against(vendor);
    const input = await articles([
      'cue:500-once',
      'cue:529-once',
      'cue:429-once',
      'cue:malformed-once',
      'cue:off-schema-once',
      'cue:truncated-once',
      'cue:reset-once',
      'cue:400',
      'cue:refusal',
      'cue:slow',
    ]);
    const output = outputPath();
    const before = server.requests.length;
    // Every log line too: the key must not be in any of them.
    const result = await runCli([...args, `--input=${input}`, '--workers=10', '--timeout=3s', `--output=${output}`, '--log-level=trace'], {
      env,
    });
    expect(result.code, result.stderr).toBe(1);
    const byId: Record<string, any> = Object.fromEntries((await results(output)).map((r) => [r.id, r]));
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']) expect(byId[id], id).toMatchObject({ status: 'succeeded', attempts: 4 });
    expect(byId.a8).toMatchObject({ status: 'failed', attempts: 1, error: { type: 'BadRequestError', task: 'summarize' } });
    expect(byId.a8.error.message).toMatch(/not retryable\): 400 request rejected: Invalid schema for 'summarize'/);
    expect(byId.a9).toMatchObject({ status: 'failed', attempts: 1, error: { type: 'RefusalError', task: 'summarize' } });
    expect(byId.a10).toMatchObject({ status: 'failed', attempts: 1, error: { type: 'TimeoutError', task: 'summarize' } });
    // The SDK retried nothing: one request per attempt the results count.
    const attempts = Object.values(byId).reduce((sum: number, r) => sum + r.attempts, 0);
    expect(requestsSince(before)).toHaveLength(attempts);
    expect(result.stdout).toMatch(/network error \(ECONNRESET\)/);
    expect(result.stderr).toMatch(/"msg":"attempt failed"/);
    await expectNoKey(result, output);
  });

  it('stops the whole run on a refused key: one line naming the provider, the status and the fix, finished results kept, exit 2', async () => {
    const { args, env } = against(vendor);
    const input = await articles(['first', 'second', 'cue:401', 'fourth', 'fifth', 'sixth']);
    const output = outputPath();
    const before = server.requests.length;
    const result = await runCli([...args, `--input=${input}`, '--workers=1', `--output=${output}`, '--quiet'], { env });
    const variable = vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
    expectOneLineError(
      result,
      new RegExp(`^error: provider "${vendor}" stopped the run: 401 the API key was refused \\(\\w+\\); set ${variable} to a key`),
    );
    const written = await results(output);
    expect(written.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'failed']);
    expect(written[2].error.type).toBe('AuthenticationError');
    // No article was sent again after the 401: two articles of two calls, then the refused one.
    expect(requestsSince(before)).toHaveLength(5);
    await expectNoKey(result, output);
  });

  it('refuses to start without the key, naming the variable, before any call', async () => {
    const { args } = against(vendor);
    const before = server.requests.length;
    const output = outputPath();
    const variable = vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
    const missing = await runCli([...args, '--articles=2', `--output=${output}`], { env: { [variable]: undefined } });
    expectOneLineError(missing, new RegExp(`^error: ${variable} is not set: --provider=${vendor} reads its API key from it`));
    const named = await runCli([...args, '--articles=2', '--api-key-env=NEWS_PROCESSOR_NO_SUCH_KEY'], {
      env: { NEWS_PROCESSOR_NO_SUCH_KEY: undefined },
    });
    expectOneLineError(named, /^error: NEWS_PROCESSOR_NO_SUCH_KEY is not set: /);
    expect(requestsSince(before)).toHaveLength(0);
    await expect(readFile(output)).rejects.toThrow(/ENOENT/);
  });

  it('refuses a key no HTTP header can carry, and a base URL with user:password, without quoting either, before any call', async () => {
    const { args } = against(vendor);
    const before = server.requests.length;
    const variable = vendor === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
    const badKey = await runCli([...args, '--articles=1'], { env: { [variable]: `${KEY}\nX-Injected: 1` } });
    expectOneLineError(
      badKey,
      new RegExp(`^error: ${variable} holds a line break, a control character or a non-Latin-1 character, which no HTTP header can carry$`),
    );
    expect(badKey.stderr).not.toContain(KEY);
    const url = new URL(baseUrl(vendor));
    url.username = 'user';
    url.password = 'hunter2';
    const withCredentials = await runCli([...args, `--base-url=${url.href}`, '--articles=1'], { env: against(vendor).env });
    expectOneLineError(
      withCredentials,
      /^error: --base-url: expected a URL without user:password in it .*, got http:\/\/\*\*\*@127\.0\.0\.1:\d+\//,
    );
    expect(withCredentials.stderr).not.toContain('hunter2');
    expect(requestsSince(before)).toHaveLength(0);
  });

  it('takes the key from the variable --api-key-env names', async () => {
    const { args } = against(vendor);
    const result = await runCli([...args, '--articles=1', '--api-key-env=NEWS_PROCESSOR_TEST_KEY', '--json'], {
      env: { NEWS_PROCESSOR_TEST_KEY: KEY, OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 1, providers: [{ name: vendor }] });
    await expectNoKey(result);
  });

  it('makes a refused connection a network error with ECONNREFUSED in the dead letter', async () => {
    const output = outputPath();
    const url = `${await refusedUrl()}${vendor === 'openai' ? '/v1' : ''}`;
    const { env } = against(vendor);
    const result = await runCli([`--provider=${vendor}`, `--base-url=${url}`, '--articles=1', '--max-attempts=2', `--output=${output}`], {
      env,
    });
    expect(result.code, result.stderr).toBe(1);
    const [dead] = await results(output);
    expect(dead).toMatchObject({ status: 'failed', attempts: 2, error: { type: 'NetworkError', task: 'summarize' } });
    expect(dead.error.message).toMatch(/network error \(ECONNREFUSED\): connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    // The retry has its cause in the counts; with --json too, and per provider (2 articles × 2 attempts).
    expect(result.stdout).toMatch(
      /^Calls: 2 \(0 answered\) \| Retries: 1 \| .* \| Timeouts: 0 \| Network errors: 2 \| Dead letters: 1 \| /m,
    );
    const json = await runCli([`--provider=${vendor}`, `--base-url=${url}`, '--articles=2', '--max-attempts=2', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ calls: 4, retries: 2, networkErrors: 4, providers: [{ networkErrors: 4 }] });
  });
});

describe('news-processor --provider=openai, on what only OpenAI says', () => {
  it('stops the run on insufficient_quota (a billing stop, not a rate limit), exit 2', async () => {
    const { args, env } = against('openai');
    const input = await articles(['first', 'cue:quota', 'third']);
    const output = outputPath();
    const result = await runCli([...args, `--input=${input}`, '--workers=1', `--output=${output}`, '--quiet'], { env });
    expectOneLineError(
      result,
      /^error: provider "openai" stopped the run: 429 no credit or quota left on the account: You exceeded your current quota.*; add credit or raise the account's quota, then run again/,
    );
    expect((await results(output)).map((r) => r.status)).toEqual(['succeeded', 'failed']);
  });
});

describe('news-processor --config with two vendors', () => {
  it('routes summarize to OpenAI and sentiment to Anthropic, each key from its own variable, calls in flight capped per provider', async () => {
    const config = join(temp.dir, 'two-vendors.json');
    await writeFile(
      config,
      JSON.stringify({
        providers: [
          {
            name: 'gpt',
            type: 'openai',
            baseUrl: server.openAiUrl,
            apiKeyEnv: 'NP_TEST_OPENAI_KEY',
            limits: [{ kind: 'requests', rate: 'inf' }],
          },
          {
            name: 'claude',
            type: 'anthropic',
            baseUrl: server.url,
            apiKeyEnv: 'NP_TEST_ANTHROPIC_KEY',
            maxConcurrent: 1,
            limits: [{ kind: 'requests', rate: 'inf' }],
          },
        ],
        routes: { summarize: 'gpt', sentiment: 'claude' },
      }),
    );
    const before = server.requests.length;
    server.peakInFlight.openai = 0;
    server.peakInFlight.anthropic = 0;
    const result = await runCli([`--config=${config}`, '--articles=6', '--workers=6', '--json'], {
      env: { NP_TEST_OPENAI_KEY: KEY, NP_TEST_ANTHROPIC_KEY: KEY },
    });
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json).toMatchObject({
      succeeded: 6,
      providers: [
        { name: 'gpt', calls: 6 },
        { name: 'claude', calls: 6 },
      ],
    });
    const sent = requestsSince(before);
    expect(sent.filter((r) => r.vendor === 'openai').map((r) => (r.body.response_format as any).json_schema.name)).toEqual(
      Array(6).fill('summarize'),
    );
    expect(sent.filter((r) => r.vendor === 'anthropic').map((r) => (r.body.tool_choice as any).name)).toEqual(Array(6).fill('sentiment'));
    // Six summaries at once; the sentiments that follow them together go one at a time.
    expect(server.peakInFlight.openai).toBeGreaterThan(1);
    expect(server.peakInFlight.anthropic).toBe(1);
    await expectNoKey(result);
  });

  it('refuses to start when a provider key variable is unset, naming the provider and the variable', async () => {
    const config = join(temp.dir, 'one-vendor.json');
    await writeFile(
      config,
      JSON.stringify({
        providers: [
          {
            name: 'claude',
            type: 'anthropic',
            baseUrl: server.url,
            apiKeyEnv: 'NP_TEST_UNSET_KEY',
            limits: [{ kind: 'requests', rate: 5 }],
          },
        ],
      }),
    );
    expectOneLineError(
      await runCli([`--config=${config}`], { env: { NP_TEST_UNSET_KEY: undefined } }),
      /^error: NP_TEST_UNSET_KEY is not set: provider "claude" in .*one-vendor\.json reads its API key from it \(its apiKeyEnv\)$/,
    );
  });
});

describe('news-processor: the client flags', () => {
  it('--help shows each default from the library', async () => {
    const result = await runCli(['--help']);
    const help = result.stdout.replace(/\s+/g, ' ');
    expect(help).toContain(`(default: "${PROVIDER_DEFAULTS.type}")`);
    for (const defaults of [OPENAI_DEFAULTS, ANTHROPIC_DEFAULTS]) {
      for (const value of [defaults.model, defaults.baseUrl, defaults.apiKeyEnv]) expect(help).toContain(value);
    }
  });

  it.each([
    [
      ['--provider=vertex'],
      /^error: option '--provider <type>' argument 'vertex' is invalid\. Expected one of: simulated, openai, anthropic, azure, gemini\.$/,
    ],
    [
      ['--provider=openai', '--base-url=localhost:8000/v1'],
      /argument 'localhost:8000\/v1' is invalid\. Expected an http:\/\/ or https:\/\/ URL/,
    ],
    [['--provider=openai', '--api-key-env=MY-KEY'], /argument 'MY-KEY' is invalid\. Expected an environment variable name/],
    [['--provider=openai', '--model= '], /argument ' ' is invalid\. Expected a model name\.$/],
    [
      ['--model=gpt-4.1-mini'],
      /^error: --model applies to --provider=openai, --provider=anthropic, --provider=azure or --provider=gemini$/,
    ],
    [
      ['--base-url=http://localhost:8000/v1'],
      /^error: --base-url applies to --provider=openai, --provider=anthropic, --provider=azure or --provider=gemini$/,
    ],
    [
      ['--provider=anthropic', '--headers=anthropic'],
      /^error: --headers describes the simulated provider; --provider=anthropic calls a real API$/,
    ],
    [['--provider=openai', '--provider-rate=5'], /^error: --provider-rate describes the simulated provider/],
    // Flags with a default are refused only when given: they would have been silently ignored.
    [['--provider=openai', '--min-latency=0ms'], /^error: --min-latency describes the simulated provider; --provider=openai calls/],
    [['--provider=anthropic', '-profile=stress'], /^error: --profile describes the simulated provider; --provider=anthropic calls/],
    [
      ['--config=fixtures/providers/two-providers.json', '--model=x'],
      /^error: --model describes a single provider; with --config set it per provider/,
    ],
    [['--config=fixtures/providers/two-providers.json', '--provider=openai'], /^error: --provider describes a single provider/],
  ])('refuses %j with one line, exit 2, nothing called', async (args, pattern) => {
    const before = server.requests.length;
    const result = await runCli(args, { env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY } });
    expectOneLineError(result, pattern);
    expect(result.stdout).toBe('');
    expect(requestsSince(before)).toHaveLength(0);
  });
});
