import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/sinks/jsonl-writer.ts';
import { keepSucceeded } from '../../src/sinks/results-file.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'results-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('keepSucceeded()', () => {
  it('keeps every succeeded line, once, in order, across many chunks of writes; drops the rest', async () => {
    const path = join(dir, 'results.jsonl');
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++) {
      lines.push(JSON.stringify({ id: String(i), title: `t${i}`, status: i % 3 === 0 ? 'failed' : 'succeeded', summary: 'x'.repeat(40) }));
    }
    lines.push(lines[1]!); // a repeated success is kept once
    await writeFile(path, `${lines.join('\n')}\n`);
    const kept = await keepSucceeded(path);
    const expected = lines.slice(0, 5000).filter((line) => JSON.parse(line).status === 'succeeded');
    expect(expected.join('\n').length).toBeGreaterThan(3 * 64 * 1024);
    expect(await readFile(path, 'utf8')).toBe(`${expected.join('\n')}\n`);
    expect(kept.succeeded.size).toBe(expected.length);
    expect(kept.dropped).toBe(5000 - expected.length + 1);
  });

  it('a results file that cannot be read (a folder) is an OutputError naming it', async () => {
    const error = await keepSucceeded(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect((error as Error).message).toMatch(new RegExp(`^${dir}: cannot read file \\(EISDIR`));
  });
});
