// The command's last rough edges: a standard output that cannot be written or whose reader goes
// away, stops that say how to finish, a base URL answering with a web page, and the small ones.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArticleResult, RunSummary } from '../../src/index.ts';
import { FAST, makeTempDir, ROOT, runCli, startCli, type CliResult } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(() => temp.remove());

async function resultsOf(path: string): Promise<ArticleResult[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ArticleResult);
}

/** No stack, no `Unhandled 'error' event`: what a person sees is lines the command wrote. */
function expectNoCrash(result: CliResult): void {
  expect(result.timedOut, 'the run hung').toBe(false);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr).not.toMatch(/Unhandled|ENOSPC: no space left on device, write/);
}

const FULL = '/dev/full';

describe.runIf(existsSync(FULL))('a standard output that cannot be written (> /dev/full)', () => {
  const onFull = async (args: readonly string[]) => {
    const fd = openSync(FULL, 'w');
    try {
      return await runCli(args, { stdoutFd: fd });
    } finally {
      closeSync(fd);
    }
  };
  const LINE = /^error: standard output: cannot write: no space left on device \(ENOSPC\)/m;

  it.each([
    ['a run printing its lines', [...FAST, '--articles=5']],
    ['--quiet', [...FAST, '--articles=5', '--quiet']],
    ['--json', [...FAST, '--articles=5', '--json']],
    ['--output -', [...FAST, '--articles=5', '--output', '-']],
    ['bench', ['bench', '--articles=3', '--rate=inf,50', '--min-latency=0ms', '--max-latency=1ms']],
    ['--help', ['--help']],
    ['--version', ['--version']],
  ])('%s: exit 1 and one line saying so', async (_label, args) => {
    const result = await onFull(args);
    expectNoCrash(result);
    expect(result.code).toBe(1);
    expect(result.stderr.match(new RegExp(LINE.source, 'gm')) ?? []).toHaveLength(1);
  });

  it('found mid-run it stops the run as Ctrl-C would; found by the summary it says only the summary was lost', async () => {
    const midRun = await onFull([...FAST, '--articles=2000', '--min-latency=2ms', '--max-latency=4ms']);
    expect(midRun.stderr).toMatch(/; the run was stopped$/m);
    const atEnd = await onFull([...FAST, '--articles=3', '--json']);
    expect(atEnd.stderr).toMatch(/; the summary could not be printed$/m);
  });

  it('serve says on stderr where it listens, and serves all the same', async () => {
    const fd = openSync(FULL, 'w');
    try {
      const run = startCli(['serve', '--port=0'], { stdoutFd: fd });
      await run.waitForStderr(
        /^warning: standard output: cannot write: no space left on device \(ENOSPC\); listening on http:\/\/127\.0\.0\.1:\d+ all the same$/m,
        20_000,
      );
      const port = /127\.0\.0\.1:(\d+)/.exec(run.stderr())![1];
      const health = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer x' } });
      expect(health.status).toBeLessThan(500);
      run.send('SIGTERM');
      expect((await run.result).code).toBe(0);
    } finally {
      closeSync(fd);
    }
  });

  it('with --output FILE the stop says --resume finishes, and the resumed run does', async () => {
    const output = join(temp.dir, 'full.jsonl');
    const stopped = await onFull([...FAST, '--articles=2000', '--min-latency=2ms', '--max-latency=4ms', '--output', output]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/; the run was stopped: run again with --resume to finish the rest$/m);
    const kept = await resultsOf(output);
    expect(kept.length).toBeGreaterThan(0);
    const resumed = await runCli([...FAST, '--articles=2000', '--output', output, '--resume', '--json']);
    expect(resumed.code).toBe(0);
    const finished = await resultsOf(output);
    expect(new Set(finished.filter((r) => r.status === 'succeeded').map((r) => r.id)).size).toBe(2000);
  });
});

describe('a standard output whose reader goes away (… | head -1)', () => {
  it('with --output FILE: exit 141, and stderr says why the file holds cancelled lines and how to finish', async () => {
    const output = join(temp.dir, 'head.jsonl');
    const run = startCli(['--articles=200', '--rate=inf', '--min-latency=20ms', '--max-latency=40ms', '--output', output]);
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const result = await run.result;
    expectNoCrash(result);
    expect(result.code).toBe(141);
    expect(result.stderr).toMatch(
      new RegExp(
        `^stopped: standard output was closed by its reader; the results so far are in ${output.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: run again with --resume to finish the rest$`,
        'm',
      ),
    );
    const cancelled = (await resultsOf(output)).filter((r) => r.status === 'cancelled');
    expect(cancelled.length).toBeGreaterThan(0);
    for (const r of cancelled) expect(r.error?.message).toBe('standard output was closed by its reader');
  });

  it('without a results file it ends silently, as a C tool does', async () => {
    const run = startCli([...FAST, '--articles=2000', '--min-latency=1ms', '--max-latency=2ms']);
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const result = await run.result;
    expectNoCrash(result);
    expect(result.code).toBe(141);
    expect(result.stderr).toBe('');
  });
});

describe('a run stopped by a signal with --output FILE', () => {
  it.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)('%s: the summary says --resume finishes the rest', async (signal) => {
    const output = join(temp.dir, `${signal}.jsonl`);
    const run = startCli(['--articles=100', '--rate=10', '--burst=2', '--quiet', '--output', output]);
    // Once a result is written, the run is under way with its handlers installed.
    const deadline = Date.now() + 20_000;
    while ((await resultsOf(output).catch(() => [])).length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    run.send(signal);
    const result = await run.result;
    expectNoCrash(result);
    expect(result.code).toBe({ SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }[signal]);
    expect(result.stdout).toMatch(
      new RegExp(
        `^Interrupted \\(${signal}\\): intake stopped; the articles in flight were cancelled: run again with --resume to finish the rest\\.$`,
        'm',
      ),
    );
  });
});

describe('a --base-url that answers 200 with a web page', () => {
  let server: Server;
  let url: string;
  let requests = 0;
  beforeAll(async () => {
    server = createServer((_request, response) => {
      requests++;
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body>It works.</body></html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each([
    ['openai', '/v1', 'OPENAI_API_KEY'],
    ['anthropic', '', 'ANTHROPIC_API_KEY'],
  ])('%s: the run stops at once with the --base-url hint, exit 2, no retries', async (provider, path, variable) => {
    requests = 0;
    const result = await runCli(
      [`--provider=${provider}`, '--base-url', `${url}${path}`, '--articles=20', '--workers=2', '--rate=inf', '--json'],
      { env: { [variable]: 'test-key' } },
    );
    expectNoCrash(result);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(
        `^error: provider "${provider}" stopped the run: 200 with text/html, not a JSON object: "<!DOCTYPE html> <html><head><title>Welcome to nginx!.*…"; check --base-url .*$`,
        'm',
      ),
    );
    const summary = JSON.parse(result.stdout) as RunSummary;
    expect(summary.retries).toBe(0);
    expect(summary.stoppedBy?.type).toBe('NotAnApiError');
    // Only the calls already sent when the first answer came: the workers' worth.
    expect(requests).toBeLessThanOrEqual(2);
  });
});

describe('the small edges', () => {
  it('--articles takes an exponent (1e3) when the number is whole, and refuses one that is not', async () => {
    const result = await runCli([...FAST, '--articles=1e3', '--json']);
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as RunSummary).articles).toBe(1000);
    const refused = await runCli([...FAST, '--articles=2.5e0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: option '--articles <n>' argument '2\.5e0' is invalid\. Expected a whole number/m);
  });

  it('--help spells the built-in tasks as the docs do', async () => {
    const { stdout } = await runCli(['--help']);
    expect(stdout).toMatch(/summarize,\s+then\s+sentiment/);
    expect(stdout).not.toMatch(/summaris/);
  });

  // `script` (util-linux) gives the command a terminal for its standard input.
  const script = ['/usr/bin/script', '/bin/script'].find((path) => existsSync(path));
  it.skipIf(script === undefined)('--input - on a terminal says it reads standard input, then reads what is typed', async () => {
    const child = spawn(
      script!,
      ['-qec', 'node dist/cli/news-processor.js --input - --rate=inf --min-latency=0ms --max-latency=1ms --quiet', '/dev/null'],
      {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    let seen = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (seen += chunk));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    const deadline = Date.now() + 20_000;
    while (!seen.includes('reading articles from standard input') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(seen).toMatch(/reading articles from standard input, the terminal: one JSON object per line, Ctrl-D to end/);
    child.stdin.write('{"id":"a","title":"Typed","content":"An article typed at the terminal, line by line."}\n');
    child.stdin.write('\x04');
    expect(await closed).toBe(0);
    expect(seen).toMatch(/\| 1 article \| Succeeded:1 Failed:0 \|/);
  });
});
