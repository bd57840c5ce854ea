// The host dialects from the command line: `serve --headers=…` speaking a host's limits, a run told
// its host's dialect by the providers file (or guessing it from the base URL) saying so once on
// stderr, and a dialect the file misspells refused in one line.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, runCli, startServe, type Serve } from './run-cli.ts';

const KEY = 'sk-host-dialects';
let none: Serve;
let groq: Serve;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  const quick = ['--min-latency=0ms', '--max-latency=0ms', '--log-level=warn'];
  [none, groq, temp] = await Promise.all([
    startServe(['--headers=none', '--rate=20', '--burst=5', ...quick]),
    startServe(['--headers=groq', '--rate=5', '--tpm=60000', ...quick]),
    makeTempDir(),
  ]);
});
afterAll(async () => {
  for (const serve of [none, groq]) serve?.run.send('SIGTERM');
  await Promise.all([none?.run.result, groq?.run.result]);
  await temp?.remove();
});

async function chat(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Say hello.' }] }),
  });
}

async function providersFile(provider: object): Promise<string> {
  const path = join(temp.dir, `providers-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(
    path,
    JSON.stringify({ providers: [{ name: 'local', type: 'openai', model: 'm', limits: [{ kind: 'requests', rate: 50 }], ...provider }] }),
  );
  return path;
}

describe('serve --headers', () => {
  it('groq: the requests a day, the tokens a minute, resets as durations', async () => {
    const response = await chat(groq.url);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe(String(5 * 60 * 1440));
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('60000');
    expect(response.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m\d+(\.\d+)?s$/);
  });

  it('none: no rate-limit headers at all', async () => {
    const response = await chat(none.url);
    expect(response.status).toBe(200);
    expect([...response.headers.keys()].filter((name) => name.includes('ratelimit') || name.startsWith('retry-after'))).toEqual([]);
  });
});

describe('a run told its host dialect', () => {
  it('"headers": "none" with syncHeaders and adaptive: said once on stderr, and the run goes through', async () => {
    const config = await providersFile({ baseUrl: `${none.url}/v1`, headers: 'none', syncHeaders: true, adaptive: true });
    const result = await runCli(['--config', config, '--articles=6', '--workers=6', '--quiet'], { env: { OPENAI_API_KEY: KEY } });
    expect(result.code, result.stderr).toBe(0);
    const notes = result.stderr.split('\n').filter((line) => line.startsWith('note: '));
    expect(notes).toEqual([
      'note: provider "local" ("headers": "none") sends no rate-limit headers and no 429: --sync-headers has nothing to read; --adaptive reads the calls\' latency',
    ]);
  });

  it('a dialect the file misspells: one line naming the field and the choices, exit 2', async () => {
    const config = await providersFile({ baseUrl: `${none.url}/v1`, headers: 'grok' });
    const result = await runCli(['--config', config, '--articles=1'], { env: { OPENAI_API_KEY: KEY } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `error: ${config}: providers[0].headers: expected one of "openai", "groq", "together", "mistral", "none", got "grok"\n`,
    );
  });

  it("a base URL's host known to speak a dialect: the guess said once", async () => {
    const result = await runCli(['--provider=openai', '--base-url=https://api.groq.com/openai/v1', '--articles=1', '--dry-run'], {
      env: { OPENAI_API_KEY: undefined },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr.split('\n').filter((line) => line.startsWith('note: '))).toEqual([
      'note: provider "openai" reads Groq\'s rate-limit headers, guessed from the host api.groq.com (a providers file\'s "headers" field chooses)',
    ]);
  });
});
