import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, ROOT, makeTempDir, runCli, type CliResult } from './run-cli.ts';

interface ResultLine {
  id: string;
  status: string;
  attempts: number;
  error?: { type?: unknown; message?: unknown };
}

interface Summary {
  articles: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  deadLetters: number;
}

/** The lines of a results file; each must be a whole JSON object, and the file must end with a newline. */
async function readResults(path: string): Promise<ResultLine[]> {
  const text = await readFile(path, 'utf8');
  if (text === '') return [];
  expect(text.endsWith('\n'), 'the last line is cut short').toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as ResultLine);
}

/** Every result well formed: an id, a status, attempts; a failure says what it was. */
function expectWellFormed(results: readonly ResultLine[]): void {
  for (const result of results) {
    expect(result.id).toBeTypeOf('string');
    expect(['succeeded', 'failed', 'cancelled']).toContain(result.status);
    expect(result.attempts).toBeTypeOf('number');
    if (result.status !== 'succeeded') {
      expect(result.error?.type, result.id).toBeTypeOf('string');
      expect(result.error?.message, result.id).toBeTypeOf('string');
    }
  }
}

function parseSummary(result: CliResult): Summary {
  return JSON.parse(result.stdout) as Summary;
}

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

describe.concurrent('news-processor --output', { timeout: 60_000 }, () => {
  it('writes every article of the input as exactly one JSONL line', async () => {
    const output = join(temp.dir, 'fixture-results.jsonl');
    const result = await runCli([
      ...FAST,
      '--input',
      'fixtures/articles.jsonl',
      '--profile=stress',
      '--timeout=100ms',
      '--output',
      output,
      '--json',
    ]);
    const summary = parseSummary(result);
    expect(result.code).toBe(summary.failed > 0 ? 1 : 0);

    const inputIds = (await readFile(join(ROOT, 'fixtures/articles.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => String((JSON.parse(line) as { id: unknown }).id));
    const results = await readResults(output);
    expectWellFormed(results);
    expect(results).toHaveLength(summary.articles);
    expect(new Set(results.map((r) => r.id))).toEqual(new Set(inputIds));
    expect(results).toHaveLength(inputIds.length);
    expect(results.filter((r) => r.status === 'succeeded')).toHaveLength(summary.succeeded);
    expect(results.filter((r) => r.status === 'failed')).toHaveLength(summary.failed);
  });

  it('into a directory that does not exist: exit 2, one line naming --output, nothing on stdout', async () => {
    const output = join(temp.dir, 'no-such-dir', 'results.jsonl');
    const result = await runCli([...FAST, '--articles=3', '--output', output]);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr.split('\n'), result.stderr).toHaveLength(2);
    expect(result.stderr).toMatch(/^error: --output .*no-such-dir.*\n$/);
    expect(result.code).toBe(2);
  });

  it('a write error on --output during the run (disk full): one line naming --output, no stack trace, non-zero exit', async () => {
    // /dev/full opens fine and fails every write with ENOSPC, as a full disk does.
    const result = await runCli([...FAST, '--articles=50', '--output', '/dev/full', '--json'], { killAfterMs: 15_000 });
    expect(result.timedOut, 'the run hung (killed after 15 s)').toBe(false);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).not.toMatch(/Unhandled 'error' event/);
    const errors = result.stderr.split('\n').filter((line) => line.startsWith('error: '));
    expect(errors, result.stderr).toEqual([expect.stringMatching(/--output.*ENOSPC|ENOSPC.*--output/)]);
    expect(result.signal).toBeNull();
    expect(result.code).not.toBe(0);
  });

  it('refuses an --output that is the --input file under another spelling, and leaves the input intact', async () => {
    const input = join(temp.dir, 'input-copy.jsonl');
    await copyFile(join(ROOT, 'fixtures/articles.jsonl'), input);
    const before = await readFile(input, 'utf8');
    // The same file, spelt differently (join() would normalise the `./` away).
    const sameFile = `${temp.dir}/./input-copy.jsonl`;
    const result = await runCli([...FAST, '--input', input, '--output', sameFile]);
    const after = await readFile(input, 'utf8');
    expect(after === before, `the input file was overwritten: ${before.length} bytes before, ${after.length} after`).toBe(true);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n'), result.stderr).toHaveLength(2);
    expect(result.stderr).toMatch(/^error: .*--output.*\n$/);
    expect(result.code).toBe(2);
  });
});

describe.concurrent('news-processor - failures and exit codes', { timeout: 60_000 }, () => {
  it('exits 1 when some article fails', async () => {
    const result = await runCli([
      '--profile=stress',
      '--max-attempts=1',
      '--articles=50',
      '--rate=inf',
      '--min-latency=0ms',
      '--max-latency=1ms',
      '--timeout=200ms',
      '--json',
    ]);
    const summary = parseSummary(result);
    expect(summary.failed).toBeGreaterThan(0);
    expect(summary.succeeded + summary.failed + summary.cancelled).toBe(50);
    expect(result.code).toBe(1);
  });

  it('loses nothing: 1,000 articles under the stress profile each end as one result', async () => {
    const output = join(temp.dir, 'stress-results.jsonl');
    const result = await runCli(
      [
        '--articles=1000',
        '--profile=stress',
        '--rate=inf',
        '--workers=50',
        '--min-latency=0ms',
        '--max-latency=2ms',
        '--timeout=100ms',
        // The breaker still opens and closes; a short cooldown keeps its waits from being most of the run
        // (at the default 5 s the run took 15 s quiet and over the 30 s kill timeout on a loaded machine).
        '--breaker-cooldown=100ms',
        '--output',
        output,
        '--json',
      ],
      { killAfterMs: 90_000 },
    );
    expect(result.timedOut, result.stderr).toBe(false);
    const summary = parseSummary(result);
    expect(summary.articles).toBe(1000);
    expect(summary.succeeded + summary.failed).toBe(1000);
    expect(summary.cancelled).toBe(0);
    expect(summary.deadLetters).toBe(summary.failed);
    expect(result.code).toBe(summary.failed > 0 ? 1 : 0);

    const results = await readResults(output);
    expectWellFormed(results);
    expect(results).toHaveLength(1000);
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1000);
    for (let id = 1; id <= 1000; id++) expect(ids.has(String(id)), `article ${id}`).toBe(true);
    expect(results.filter((r) => r.status === 'failed')).toHaveLength(summary.failed);
  }, 100_000);
});
