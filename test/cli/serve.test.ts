import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { formatDuration, SIMULATED_DEFAULTS } from '../../src/index.ts';
import { LLM_SERVER_DEFAULTS } from '../../src/server/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { post } from '../server/http.ts';
import { linesOf, runCli, startCli, type CliRun } from './run-cli.ts';

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
      expect((await post(`${url}/v1/chat/completions`, HELLO, key)).headers['x-ratelimit-limit-requests']).toBe('1');
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
      ['--profile=calm'],
      "error: option '--profile <name>' argument 'calm' is invalid. Expected one of: default, production, stress, outage.",
    ],
    [
      ['--outage=8s..2s'],
      "error: option '--outage <window>' argument '8s..2s' is invalid. Expected a window like 2s..8s (start before end).",
    ],
    [['--min-latency=2s', '--max-latency=1s'], 'error: --min-latency (2.000s) must not exceed --max-latency (1.000s)'],
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
      ['--min-latency <duration>', formatDuration(SIMULATED_DEFAULTS.minLatencyMs)],
      ['--max-latency <duration>', formatDuration(SIMULATED_DEFAULTS.maxLatencyMs)],
      ['--profile <name>', JSON.stringify(SIMULATED_DEFAULTS.profile)],
      ['--seed <n>', String(SIMULATED_DEFAULTS.seed)],
    ];
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Its own "(default: …)": after the flag, before the next one.
    for (const [flag, value] of defaults)
      expect(help).toMatch(new RegExp(`${literal(flag)} (?:(?! --[a-z]).)*\\(default: ${literal(value)}\\)`));
  });
});
