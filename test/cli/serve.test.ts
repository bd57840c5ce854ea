import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { formatDuration, SIMULATED_DEFAULTS } from '../../src/index.ts';
import { LLM_SERVER_DEFAULTS } from '../../src/server/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { get, post } from '../server/http.ts';
import { linesOf, makeTempDir, runCli, startCli, type CliRun } from './run-cli.ts';

const LISTENING = /^listening on (http:\/\/127\.0\.0\.1:(\d+))\n/;

/** Resolves with the URL once the first stdout line says where the server listens. */
async function listening(run: CliRun, timeoutMs = 15_000): Promise<string> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const match = LISTENING.exec(run.stdout());
    if (match !== null) return match[1]!;
    if (run.child.exitCode !== null || performance.now() > deadline) {
      throw new Error(`no "listening on" line; stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
    }
    await sleep(20);
  }
}

const HELLO = { model: 'm', messages: [{ role: 'user', content: 'Hello there.' }] };

describe.concurrent('news-processor serve', { timeout: 60_000 }, () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '--port=0: says where it listens, logs requests, and on %s lets the one in flight finish, exit 0',
    async (signal) => {
      const run = startCli(['serve', '--port=0', '--min-latency=600ms', '--max-latency=600ms']);
      try {
        const url = await listening(run);
        expect((await post(`${url}/v1/chat/completions`, HELLO, {})).status).toBe(401);
        const inFlight = post(`${url}/v1/chat/completions`, HELLO, { authorization: 'Bearer sk-cli-secret' });
        await sleep(200);
        run.child.kill(signal);
        const response = await inFlight;
        expect(response.status).toBe(200);
        expect(response.body.choices[0].message.content).toBe('Hello there.');
        const result = await run.result;
        expect(result.timedOut).toBe(false);
        expect(result.code).toBe(0);
        expect(linesOf(result.stdout)).toEqual([`listening on ${url}`]);
        expect(result.stderr).toContain(`${signal}: stopping, 1 request in flight`);
        const logged = linesOf(result.stderr)
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line));
        expect(logged).toMatchObject([
          { msg: 'request', method: 'POST', path: '/v1/chat/completions', status: 401 },
          { msg: 'request', status: 200, key: keyFingerprint('sk-cli-secret') },
        ]);
        expect(result.stderr).not.toContain('sk-cli-secret');
      } finally {
        run.child.kill('SIGKILL');
      }
    },
  );

  it('--log-level=warn keeps requests out of the log; --rate and --burst set the quota per key', async () => {
    const run = startCli(['serve', '--port=0', '--rate=1', '--burst=1', '--min-latency=0ms', '--max-latency=0ms', '--log-level=warn']);
    try {
      const url = await listening(run);
      const key = { authorization: 'Bearer k' };
      // 1 a second is 60 a minute, as the header states it.
      expect((await post(`${url}/v1/chat/completions`, HELLO, key)).headers['x-ratelimit-limit-requests']).toBe('60');
      const refused = await post(`${url}/v1/chat/completions`, HELLO, key);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after-ms'])).toBeGreaterThan(0);
      run.child.kill('SIGTERM');
      const result = await run.result;
      expect(result.code).toBe(0);
      expect(result.stderr).not.toContain('"msg":"request"');
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it("--api-keys and --api-keys-file: the keys of both are served, any other gets the vendor's 401 on either route; no key in the log", async () => {
    const temp = await makeTempDir();
    const file = join(temp.dir, 'keys.txt');
    // Comments, blank lines, spaces around a key, Windows line ends: all as a hand-kept file has them.
    await writeFile(file, '# the team\r\nsk-file-one\r\n\r\n  sk-file-two  \n# sk-commented-out\n');
    const run = startCli([
      'serve',
      '--port=0',
      '--min-latency=0ms',
      '--max-latency=0ms',
      '--api-keys=sk-flag-one, sk-flag-two',
      `--api-keys-file=${file}`,
    ]);
    try {
      const url = await listening(run);
      for (const key of ['sk-flag-one', 'sk-flag-two', 'sk-file-one', 'sk-file-two']) {
        expect((await post(`${url}/v1/chat/completions`, HELLO, { authorization: `Bearer ${key}` })).status, key).toBe(200);
      }
      for (const key of ['sk-commented-out', 'sk-unknown-key-0123456789']) {
        const openai = await post(`${url}/v1/chat/completions`, HELLO, { authorization: `Bearer ${key}` });
        expect(openai.status).toBe(401);
        expect(openai.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
        expect(openai.body.error.message).not.toContain(key);
        const anthropic = await post(`${url}/v1/messages`, { ...HELLO, max_tokens: 16 }, { 'x-api-key': key });
        expect(anthropic.status).toBe(401);
        expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      }
      run.child.kill('SIGTERM');
      const result = await run.result;
      expect(result.code).toBe(0);
      for (const key of ['sk-flag-one', 'sk-file-one', 'sk-unknown-key-0123456789']) expect(result.stderr).not.toContain(key);
      // A refused key is logged as an accepted one is: by its fingerprint.
      const logged = linesOf(result.stderr)
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line));
      expect(logged).toContainEqual(expect.objectContaining({ status: 401, key: keyFingerprint('sk-unknown-key-0123456789') }));
    } finally {
      run.child.kill('SIGKILL');
      await temp.remove();
    }
  });

  it.each<[string, string[], (dir: string) => string]>([
    ['--api-keys with no key', ['--api-keys= , '], () => 'error: --api-keys needs at least one API key (keys separated by commas)'],
    [
      '--api-keys with a key no header carries',
      ['--api-keys=sk-good,sk-bad\u00e9-secret'],
      () => 'error: --api-keys: key 2 is not an API key (printable ASCII without spaces)',
    ],
    [
      '--api-keys-file missing',
      ['--api-keys-file=DIR/none.txt'],
      (dir) => `error: --api-keys-file ${dir}/none.txt: cannot read it: no such file or directory (ENOENT)`,
    ],
    [
      '--api-keys-file a directory',
      ['--api-keys-file=DIR'],
      (dir) => `error: --api-keys-file ${dir}: cannot read it: illegal operation on a directory (EISDIR)`,
    ],
    [
      '--api-keys-file of comments only',
      ['--api-keys-file=DIR/comments.txt'],
      (dir) => `error: --api-keys-file ${dir}/comments.txt holds no API key (one a line; blank lines and # comments are skipped)`,
    ],
    [
      '--api-keys-file with a line that is no key',
      ['--api-keys-file=DIR/spaced.txt'],
      (dir) => `error: --api-keys-file ${dir}/spaced.txt: line 2 is not an API key (printable ASCII without spaces, one key a line)`,
    ],
  ])('serve %s: one line, exit 2, nothing served, no key quoted', async (_, args, message) => {
    const temp = await makeTempDir();
    try {
      await writeFile(join(temp.dir, 'comments.txt'), '# no keys yet\n\n   \n');
      await writeFile(join(temp.dir, 'spaced.txt'), 'sk-good\nsk-half secret\n');
      const result = await runCli(['serve', '--port=0', ...args.map((arg) => arg.replace('DIR', temp.dir))]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(linesOf(result.stderr)).toEqual([message(temp.dir)]);
      expect(result.stderr).not.toMatch(/secret/);
    } finally {
      await temp.remove();
    }
  });

  it('--batch-duration and --batch-queue-tokens: an Anthropic batch ends after the duration, a second past the queue gets 429', async () => {
    const run = startCli(['serve', '--port=0', '--batch-duration=300ms', '--batch-queue-tokens=40', '--log-level=warn']);
    try {
      const url = await listening(run);
      const key = { 'x-api-key': 'sk-ant-cli' };
      const requests = [{ custom_id: 'r1', params: { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'Hello there.' }] } }];
      const started = performance.now();
      const created = await post(`${url}/v1/messages/batches`, { requests }, key);
      expect(created.body).toMatchObject({ processing_status: 'in_progress', request_counts: { processing: 1 } });
      // Its 3 input tokens leave 37 of the queue: a batch of 40 is refused until the first ends.
      const big = [{ custom_id: 'r2', params: { ...requests[0]!.params, messages: [{ role: 'user', content: 'word '.repeat(40) }] } }];
      expect((await post(`${url}/v1/messages/batches`, { requests: big }, key)).status).toBe(429);
      let batch = created.body;
      while (batch.processing_status !== 'ended') {
        await sleep(50);
        batch = (await get(`${url}/v1/messages/batches/${created.body.id}`, key)).body;
      }
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
      expect(batch.request_counts).toMatchObject({ succeeded: 1, processing: 0 });
      run.child.kill('SIGTERM');
      expect((await run.result).code).toBe(0);
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('a port in use: one line naming the address, exit 2', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const result = await runCli(['serve', `--port=${port}`]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(linesOf(result.stderr)).toEqual([
        expect.stringMatching(new RegExp(`^error: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`)),
      ]);
    } finally {
      blocker.close();
    }
  });

  it.each([
    [['--port=65536'], "error: option '--port <n>' argument '65536' is invalid. Expected a whole number from 0 to 65535."],
    [['--rate=0'], "error: option '--rate <requests/s>' argument '0' is invalid. Expected calls per second > 0; use 'inf' for no limit."],
    [['--burst=0'], "error: option '--burst <requests>' argument '0' is invalid. Expected a whole number from 1 to 1000000000."],
    [['--tpm=x'], "error: option '--tpm <tokens/min>' argument 'x' is invalid. Expected a whole number >= 1."],
    [
      ['--tokens-per-second=0'],
      "error: option '--tokens-per-second <n>' argument '0' is invalid. Expected tokens per second (a number > 0) or 'inf'.",
    ],
    [
      ['--fail-mid-stream=1.5'],
      "error: option '--fail-mid-stream <share>' argument '1.5' is invalid. Expected a share from 0 to 1, such as 0.1.",
    ],
    [
      ['--profile=calm'],
      "error: option '--profile <name>' argument 'calm' is invalid. Expected one of: default, production, stress, outage.",
    ],
    [
      ['--outage=8s..2s'],
      "error: option '--outage <window>' argument '8s..2s' is invalid. Expected a window like 2s..8s (start before end).",
    ],
    [['--min-latency=2s', '--max-latency=1s'], 'error: --min-latency (2.000s) must not exceed --max-latency (1.000s)'],
    [
      ['--batch-duration=soon'],
      "error: option '--batch-duration <duration>' argument 'soon' is invalid. Expected a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h).",
    ],
    [['--batch-window=0'], "error: option '--batch-window <duration>' argument '0' is invalid. Expected a duration > 0."],
    [['--batch-queue-tokens=0'], "error: option '--batch-queue-tokens <tokens>' argument '0' is invalid. Expected a whole number >= 1."],
    [['--articles=5'], "error: unknown option '--articles=5'"],
  ])('serve %j: one line, exit 2, nothing served', async (args, message) => {
    const result = await runCli(['serve', ...args]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(linesOf(result.stderr)).toEqual([message]);
  });

  it('--help shows the library defaults', async () => {
    const result = await runCli(['serve', '--help']);
    expect(result.code).toBe(0);
    const help = result.stdout.replace(/\s+/g, ' ');
    const defaults: [string, string][] = [
      ['--host <host>', JSON.stringify(LLM_SERVER_DEFAULTS.host)],
      ['--port <n>', String(LLM_SERVER_DEFAULTS.port)],
      ['--rate <requests/s>', String(LLM_SERVER_DEFAULTS.rate)],
      ['--burst <requests>', String(LLM_SERVER_DEFAULTS.burst)],
      ['--tokens-per-second <n>', String(LLM_SERVER_DEFAULTS.tokensPerSecond)],
      ['--fail-mid-stream <share>', String(LLM_SERVER_DEFAULTS.failMidStream)],
      ['--min-latency <duration>', formatDuration(SIMULATED_DEFAULTS.minLatencyMs)],
      ['--max-latency <duration>', formatDuration(SIMULATED_DEFAULTS.maxLatencyMs)],
      ['--profile <name>', JSON.stringify(SIMULATED_DEFAULTS.profile)],
      ['--seed <n>', String(SIMULATED_DEFAULTS.seed)],
      ['--batch-duration <duration>', formatDuration(LLM_SERVER_DEFAULTS.batchDurationMs)],
      ['--batch-window <duration>', formatDuration(LLM_SERVER_DEFAULTS.batchWindowMs)],
    ];
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Its own "(default: …)": after the flag, before the next one.
    for (const [flag, value] of defaults)
      expect(help).toMatch(new RegExp(`${literal(flag)} (?:(?! --[a-z]).)*\\(default: ${literal(value)}\\)`));
    // No keys named, every key is accepted: what the key flags say.
    expect(help).toMatch(/--api-keys <keys> accept only these API keys, keys separated by commas: .*every key is accepted/);
    expect(help).toMatch(/--api-keys-file <file> accept only the API keys in this file, one a line \(blank lines and # comments skipped\)/);
  });
});
