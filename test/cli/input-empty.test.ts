// An input that holds no article: an upstream export that produced nothing must not pass for a
// day's work done. One line on stderr and exit 2 — the input is not what a run needs, as when
// every line of it is invalid — and, for a file, before anything is written.
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, makeTempDir, runCli } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(() => temp.remove());

describe.concurrent('news-processor - an input that holds no article', () => {
  it.each([
    ['an empty JSONL file', 'empty.jsonl', ''],
    ['a JSONL file of blank lines', 'blank.jsonl', '\n  \n\n'],
    ['an empty JSON array', 'empty.json', '[]\n'],
    ['a CSV header and no record', 'header.csv', 'id,title,content\n'],
  ])('%s: one line on stderr, exit 2, no --output written', async (_, name, text) => {
    const input = join(temp.dir, name);
    await writeFile(input, text);
    const output = join(temp.dir, `${name}.results.jsonl`);
    const result = await runCli([...FAST, '--input', input, '--output', output]);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`error: ${input}: holds no article\n`);
    expect(result.code).toBe(2);
    await expect(access(output)).rejects.toThrow(/ENOENT/);
  });

  it('the same for --dry-run, --batch and a sweep (bench --input): nothing to plan, submit or measure', async () => {
    const input = join(temp.dir, 'none.jsonl');
    await writeFile(input, '');
    for (const args of [
      ['--input', input, '--dry-run'],
      ['--input', input, '--batch', '--output', join(temp.dir, 'batch.jsonl')],
      ['bench', '--input', input, '--rate=5'],
    ]) {
      const result = await runCli(args);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 2, stderr: `error: ${input}: holds no article\n` });
    }
  });

  it('standard input that ends before any article: the run says so at its end, exit 2', async () => {
    const result = await runCli([...FAST, '--input', '-', '--quiet'], { stdin: '\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: stdin: ended before any article was read; the run was stopped there\n');
    expect(result.stdout).toMatch(/ 0 articles .*\| Succeeded:0 Failed:0 /);
  });
});
