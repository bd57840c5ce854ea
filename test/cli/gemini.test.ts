// `--provider=gemini`, Gemini members of a providers file, `--batch` through the Gemini Batch API,
// and the bad inputs — a key refused, a base URL that is no Gemini API, a model Gemini does not
// have — each one line, against `serve`'s Gemini routes (or a stand-in that answers as Gemini does).
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, linesOf, makeTempDir, runCli, startCli, startServe } from './run-cli.ts';

const KEY = 'gemini-e2e-3b9d7c21-never-shown';
const ENV = { NP_GEMINI_KEY: KEY, GEMINI_API_KEY: undefined, OPENAI_API_KEY: undefined };

let serve: CliRun;
let url: string;
let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
  ({ run: serve, url } = await startServe([
    '--rate=inf',
    '--min-latency=0ms',
    '--max-latency=2ms',
    `--api-keys=${KEY}`,
    '--batch-duration=100ms',
  ]));
});

afterAll(async () => {
  serve?.send('SIGTERM');
  await serve?.result;
  await temp?.remove();
});

describe.concurrent('news-processor --provider=gemini', { timeout: 60_000 }, () => {
  it('runs with --batch through the Gemini Batch API: a batch per dependency level, every article answered', async () => {
    const output = join(temp.dir, 'batch.jsonl');
    const result = await runCli(
      [
        '--provider=gemini',
        `--base-url=${url}`,
        '--api-key-env=NP_GEMINI_KEY',
        '--batch',
        '--batch-poll=20ms',
        '--articles=6',
        `--output=${output}`,
        '--json',
      ],
      { env: ENV },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 6, failed: 0, batches: 2, rows: 12 });
    expect(result.stderr).not.toContain(KEY);
  });

  it('stops waiting on Ctrl-C, naming the :cancel URL; a batch cancelled there is collected by --resume, its rows sent again', async () => {
    const slow = await startServe(['--rate=inf', '--min-latency=0ms', '--max-latency=0ms', '--batch-duration=3s']);
    try {
      const output = join(temp.dir, 'interrupted.jsonl');
      const args = [
        '--provider=gemini',
        `--base-url=${slow.url}`,
        '--api-key-env=NP_GEMINI_KEY',
        '--batch',
        '--batch-poll=100ms',
        '--articles=3',
        `--output=${output}`,
      ];
      const run = startCli(args, { env: ENV });
      await run.waitForStderr(/batches: 1 running \(running\)/, 20_000);
      run.interrupt();
      const stopped = await run.result;
      expect(stopped.code, stopped.stderr).toBe(130);
      expect(stopped.stderr).toContain(`or cancel each with POST ${slow.url}/v1beta/batches/ID:cancel`);
      const id = /still running at the provider \(([a-z0-9]+)\)/.exec(stopped.stderr)?.[1];
      expect(id).toBeDefined();
      // Cancelled by hand at the URL the line names: its rows end unanswered.
      const cancelled = await fetch(`${slow.url}/v1beta/batches/${id}:cancel`, { method: 'POST', headers: { 'x-goog-api-key': KEY } });
      expect(cancelled.status).toBe(200);

      // Resumed: the cancelled batch read back, its rows in a batch again, then sentiment's (3 s each).
      const resumed = await runCli([...args, '--resume', '--json'], { env: ENV });
      expect(resumed.code, resumed.stderr).toBe(0);
      const summary = JSON.parse(resumed.stdout);
      expect(summary).toMatchObject({ succeeded: 3, failed: 0 });
      // The rows the cancel stopped came back without an answer, and went again.
      expect(summary.rowsExpired).toBeGreaterThan(0);
    } finally {
      slow.run.send('SIGKILL');
    }
  }, 120_000);

  it('says a model Gemini does not have in one line, exit 2, after one call', async () => {
    // A stand-in for Google's API: every model is not found, as Gemini answers an unknown one.
    const google = createServer((req, res) => {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            code: 404,
            message: 'models/gemini-9-nope is not found for API version v1beta, or is not supported for generateContent.',
            status: 'NOT_FOUND',
          },
        }),
      );
    });
    await new Promise<void>((resolve) => google.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(google.address() as AddressInfo).port}`;
      const result = await runCli(
        [
          '--provider=gemini',
          `--base-url=${base}`,
          '--model=gemini-9-nope',
          '--api-key-env=NP_GEMINI_KEY',
          '--articles=10',
          '--rate=inf',
          '--json',
        ],
        { env: ENV },
      );
      expect(result.code).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({
        succeeded: 0,
        stoppedBy: { by: 'provider', provider: 'gemini', type: 'BadRequestError' },
      });
      expect(linesOf(result.stderr)).toEqual([
        "error: provider \"gemini\" stopped the run: 404 request rejected: models/gemini-9-nope is not found for API version v1beta, or is not supported for generateContent.; check --base-url (an OpenAI-compatible server's ends in /v1, Anthropic's is the host root, Gemini's is the host root) and --model, then run again (finished results are kept)",
      ]);
    } finally {
      google.closeAllConnections();
      await new Promise((resolve) => google.close(resolve));
    }
  });

  it.each([
    [
      ['--provider=gemini', '--base-url=ftp://example.com'],
      /^error: option '--base-url <url>' argument 'ftp:\/\/example\.com' is invalid\. Expected an http:\/\/ or https:\/\/ URL/,
    ],
    [
      ['--provider=gemini', '--api-key-env=NP_UNSET_GEMINI_KEY'],
      /^error: NP_UNSET_GEMINI_KEY is not set: --provider=gemini reads its API key from it/,
    ],
  ])('%j is one line, exit 2, before any call', async (args, message) => {
    const result = await runCli([...args, '--articles=1'], { env: ENV });
    expect(result.code).toBe(2);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('--help names it, its default model and its key variable', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('gemini-2.5-flash');
    expect(result.stdout).toContain('GEMINI_API_KEY');
  });
});

describe('Gemini members of a providers file', { timeout: 60_000 }, () => {
  it('sit in a pool beside an openai member, with a fallback: every article answered, by both', async () => {
    const config = join(temp.dir, 'pool.json');
    await writeFile(
      config,
      JSON.stringify({
        providers: [
          {
            name: 'g',
            type: 'gemini',
            baseUrl: url,
            model: 'gemini-2.5-flash',
            apiKeyEnv: 'NP_GEMINI_KEY',
            limits: [{ kind: 'requests', rate: 200, per: 'second' }],
          },
          {
            name: 'o',
            type: 'openai',
            baseUrl: `${url}/v1`,
            apiKeyEnv: 'NP_GEMINI_KEY',
            limits: [{ kind: 'requests', rate: 200, per: 'second' }],
          },
          {
            name: 'backup',
            type: 'gemini',
            baseUrl: url,
            apiKeyEnv: 'NP_GEMINI_KEY',
            limits: [{ kind: 'requests', rate: 200, per: 'second' }],
          },
        ],
        pools: [{ name: 'both', members: ['g', 'o'], strategy: 'weighted', weights: [1, 1], fallback: ['backup'] }],
        routes: { summarize: 'both', sentiment: 'both' },
      }),
    );
    const result = await runCli(['--config', config, '--articles=20', '--json'], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ succeeded: 20 });
    const answered = (name: string) => summary.providers.find((provider: { name: string }) => provider.name === name)?.answered ?? 0;
    expect(answered('g')).toBeGreaterThan(0);
    expect(answered('o')).toBeGreaterThan(0);
  });
});
