import { execFileSync, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, linesOf, makeTempDir, ROOT, runCli } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

const articles = (count: number, from = 1) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: from + i, title: `T${from + i}`, content: `Body number ${from + i}.` }),
  ).join('\n');

describe.concurrent('news-processor --input from streams', { timeout: 60_000 }, () => {
  it('--input - reads standard input (a pipe), every article run', async () => {
    const result = await runCli([...FAST, '--input', '-', '--quiet', '--json'], { stdin: `${articles(25)}\n` });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // A stream is not counted ahead: nothing is said of articles not started.
    expect(JSON.parse(result.stdout)).toMatchObject({ articles: 25, succeeded: 25, notStarted: null });
  });

  it('reads /dev/stdin and a FIFO, each once, without hanging', async () => {
    const devStdin = await runCli([...FAST, '--input', '/dev/stdin', '--json'], { stdin: articles(3) });
    expect(devStdin.code).toBe(0);
    expect(JSON.parse(devStdin.stdout)).toMatchObject({ articles: 3, succeeded: 3 });

    const fifo = join(temp.dir, 'articles.fifo');
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', `printf '%s\\n' "$0" > "$1"`, articles(4), fifo]);
    const result = await runCli([...FAST, '--input', fifo, '--json']);
    writer.kill();
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ articles: 4, succeeded: 4 });
  });

  it('a bad line in a stream stops the run there: file:line on stderr, exit 2, the results before it kept', async () => {
    const output = join(temp.dir, 'stream-bad.jsonl');
    const input = `${articles(5)}\n{"id": 99, "content": \n${articles(5, 6)}\n`;
    const result = await runCli([...FAST, '--input', '-', '--output', output, '--quiet'], { stdin: input });
    expect(result.code).toBe(2);
    expect(linesOf(result.stderr)).toEqual([expect.stringMatching(/^error: stdin:6: invalid JSON \(.*\); the run was stopped there$/)]);
    const kept = linesOf(await readFile(output, 'utf8')).map((line) => JSON.parse(line) as { id: string; status: string });
    expect(kept.map((r) => r.id).sort()).toEqual(['1', '2', '3', '4', '5']);
    expect(kept.every((r) => r.status === 'succeeded')).toBe(true);
  });

  it('a line over 16 MiB is "file:line: line too long", exit 2, before any call', async () => {
    const file = join(temp.dir, 'long-line.jsonl');
    await writeFile(file, `${articles(1)}\n{"id":2,"content":"${'x'.repeat(17 * 1024 * 1024)}"}\n`);
    const result = await runCli([...FAST, '--input', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: ${file}:2: line too long (over 16777216 bytes)\n`);
    expect(result.stdout).toBe('');
  });

  it('invalid UTF-8 is an error naming the line, never replacement characters', async () => {
    const file = join(temp.dir, 'latin1.jsonl');
    await writeFile(file, Buffer.concat([Buffer.from(`${articles(1)}\n{"id":2,"content":"caf`), Buffer.from([0xe9]), Buffer.from('"}\n')]));
    const result = await runCli([...FAST, '--input', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: ${file}:2: invalid UTF-8\n`);
  });

  it('escapes the bytes a bad line echoes: no raw control characters reach the terminal', async () => {
    const file = join(temp.dir, 'control.jsonl');
    await writeFile(file, `{"id":1,"title":{"x":"\\u001b[31m"},"content":"x"}\n`);
    const result = await runCli([...FAST, '--input', file]);
    expect(result.code).toBe(2);
    // Control characters are not in the output at all.
    expect(result.stderr).not.toMatch(/\p{Cc}(?<!\n)/u);
    expect(result.stderr).toContain('\\u001b[31m');
  });
});

describe.concurrent('news-processor --output', { timeout: 60_000 }, () => {
  it('refuses an existing non-empty file, naming --resume and --overwrite; --overwrite replaces it', async () => {
    const output = join(temp.dir, 'existing.jsonl');
    await writeFile(output, '{"id":"1","status":"succeeded","title":"paid for"}\n');
    const refused = await runCli([...FAST, '--articles=2', '--output', output]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `error: --output ${output} exists and is not empty: --resume to complete that run, --overwrite to replace it\n`,
    );
    expect(await readFile(output, 'utf8')).toContain('paid for');

    const replaced = await runCli([...FAST, '--articles=2', '--output', output, '--overwrite', '--quiet']);
    expect(replaced.code).toBe(0);
    expect(linesOf(await readFile(output, 'utf8'))).toHaveLength(2);
  });

  it('--output - puts the results on stdout and the human output on stderr', async () => {
    const result = await runCli([...FAST, '--articles=3', '--output', '-', '--quiet']);
    expect(result.code).toBe(0);
    const results = linesOf(result.stdout).map((line) => JSON.parse(line) as { status: string });
    expect(results).toHaveLength(3);
    expect(results.every((r) => r.status === 'succeeded')).toBe(true);
    expect(result.stderr).toMatch(/^Rate limit=inf\/s burst=3 \| 3 articles \| Succeeded:3 Failed:0/m);
  });

  it('writes 30,000 results with 50 workers and no warning on stderr (one drain listener, not one per write)', async () => {
    const output = join(temp.dir, 'many.jsonl');
    const result = await runCli([
      '--articles=30000',
      '--rate=inf',
      '--workers=50',
      '--min-latency=0ms',
      '--max-latency=0ms',
      '--output',
      output,
      '--quiet',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect((await readFile(output, 'utf8')).split('\n')).toHaveLength(30_001);
  });

  it.each([
    [['--input', ''], "error: --input needs a file name, or '-' for standard input"],
    [['--output', ''], "error: --output needs a file name, or '-' for standard output"],
    [['--config', ''], 'error: --config needs a file name'],
    [['--resume'], 'error: --resume needs --output: the results file to take up'],
    [['--output', '-', '--resume'], 'error: --resume needs a results file, not standard output'],
  ])('%j is one line naming the flag, exit 2', async (flags, message) => {
    const result = await runCli(flags[0] === '--config' ? flags : [...FAST, ...flags]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`${message}\n`);
    expect(result.stdout).toBe('');
  });
});

describe.concurrent('news-processor - the first minute', { timeout: 60_000 }, () => {
  it('--version and -V print the package version', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });

  it("takes Go's duration spellings: 1m30s, 500us, 1.5s, 2m3.5s", async () => {
    const result = await runCli(['--articles=1', '--rate=inf', '--timeout=1m30s', '--min-latency=500us', '--max-latency=1.5ms', '--json']);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as { succeeded: number; callLatencyMs: { max: number } };
    expect(summary.succeeded).toBe(1);
    expect(summary.callLatencyMs.max).toBeGreaterThanOrEqual(0.5);
  });

  it('a bad duration lists what is accepted', async () => {
    const result = await runCli(['--timeout=5 seconds']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "error: option '--timeout <duration>' argument '5 seconds' is invalid. Expected a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h).\n",
    );
  });
});
