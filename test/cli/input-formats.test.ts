import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, makeTempDir, runCli } from './run-cli.ts';

const CSV_IDS = ['201', '202', 'sci-0008', '204'];

describe.concurrent('news-processor --input - CSV, a JSON array, chosen by extension or --input-format', { timeout: 60_000 }, () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir();
  });
  afterAll(async () => {
    await temp.remove();
  });

  const idsOf = async (path: string): Promise<string[]> =>
    (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: string }).id)
      .sort();

  it('reads fixtures/articles.csv by its extension, with the YAML tasks that read its author column', async () => {
    const output = join(temp.dir, 'csv.jsonl');
    const result = await runCli([
      ...FAST,
      '--input',
      'fixtures/articles.csv',
      '--tasks',
      'fixtures/tasks.yaml',
      '--output',
      output,
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ articles: 4, succeeded: 4, calls: 8 });
    expect(await idsOf(output)).toEqual([...CSV_IDS].sort());
  });

  it('reads CSV from standard input with --input-format csv, and a .txt file so named', async () => {
    const stdin = await runCli([...FAST, '--input', '-', '--input-format', 'csv', '--json'], {
      stdin: await readFile('fixtures/articles.csv'),
    });
    expect(stdin.code).toBe(0);
    expect(JSON.parse(stdin.stdout)).toMatchObject({ articles: 4, succeeded: 4 });
    const txt = join(temp.dir, 'articles.txt');
    await copyFile('fixtures/articles.csv', txt);
    const named = await runCli([...FAST, '--input', txt, '--input-format=csv', '--json']);
    expect(named.code).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ articles: 4, succeeded: 4 });
    // Without the flag a .txt is JSON Lines, as before: its header is not JSON.
    const unnamed = await runCli([...FAST, '--input', txt]);
    expect(unnamed.code).toBe(2);
    expect(unnamed.stderr).toMatch(/^error: .*articles\.txt:1: invalid JSON/);
  });

  it('reads a .json array of articles, and one from standard input with --input-format json', async () => {
    const lines = (await readFile('fixtures/articles.jsonl', 'utf8')).trim().split('\n');
    const array = join(temp.dir, 'articles.json');
    await writeFile(array, `[\n${lines.join(',\n')}\n]\n`);
    const file = await runCli([...FAST, '--input', array, '--json']);
    expect(file.code).toBe(0);
    expect(JSON.parse(file.stdout)).toMatchObject({ articles: 30, succeeded: 30 });
    const stdin = await runCli([...FAST, '--input', '-', '--input-format', 'json', '--json'], { stdin: await readFile(array) });
    expect(stdin.code).toBe(0);
    expect(JSON.parse(stdin.stdout)).toMatchObject({ articles: 30, succeeded: 30 });
  });
});
