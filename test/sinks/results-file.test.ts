import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/sinks/jsonl-writer.ts';
import { keepSucceeded } from '../../src/sinks/results-file.ts';

const linesOf = (text: string) => text.split('\n').filter((line) => line !== '');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'results-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('keepSucceeded()', () => {
  it('keeps every succeeded line, once (its last), in order, across many chunks of writes; drops the rest', async () => {
    const path = join(dir, 'results.jsonl');
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++) {
      lines.push(JSON.stringify({ id: String(i), title: `t${i}`, status: i % 3 === 0 ? 'failed' : 'succeeded', summary: 'x'.repeat(40) }));
    }
    lines.push(lines[1]!); // a repeated success is kept once: its last line, where that stands
    await writeFile(path, `${lines.join('\n')}\n`);
    const kept = await keepSucceeded(path);
    const expected = lines.slice(2).filter((line) => JSON.parse(line).status === 'succeeded');
    expect(expected.join('\n').length).toBeGreaterThan(3 * 64 * 1024);
    expect(await readFile(path, 'utf8')).toBe(`${expected.join('\n')}\n`);
    expect(kept.succeeded.size).toBe(expected.length);
    expect(kept.dropped).toBe(5000 - expected.length + 1);
  });

  it('says what its lines spent, those of unfinished articles too; keepUnfinished keeps each article once and the sum whole', async () => {
    const path = join(dir, 'results.jsonl');
    const line = (id: string, status: string, costUsd: number, outputs: object = {}) =>
      JSON.stringify({ id, title: `t${id}`, status, outputs, costUsd });
    const lines = [
      line('1', 'succeeded', 0.25),
      line('2', 'cancelled', 0.125, { a: 1 }),
      line('3', 'failed', 0.5),
      // A resumed run's lines: 2 succeeded this time; 3 failed again.
      line('2', 'succeeded', 0.0625, { a: 1, b: 2 }),
      line('3', 'cancelled', 0.25, { a: 3 }),
    ];
    await writeFile(path, `${lines.join('\n')}\n`);
    const kept = await keepSucceeded(path, { keepUnfinished: true });
    expect(kept.spentUsd).toBe(1.1875);
    expect([...kept.succeeded.keys()]).toEqual(['1', '2']);
    expect(kept.partial).toEqual(new Map([['3', { a: 3 }]]));
    // Each article once, its last line; each line's cost is its article's in all.
    expect(await readFile(path, 'utf8')).toBe(
      `${[line('1', 'succeeded', 0.25), line('2', 'succeeded', 0.1875, { a: 1, b: 2 }), line('3', 'cancelled', 0.75, { a: 3 })].join('\n')}\n`,
    );
    // Taken up again, nothing moves.
    expect((await keepSucceeded(path, { keepUnfinished: true })).spentUsd).toBe(1.1875);
    // Without it, the unfinished lines go, but what they spent is still said.
    const dropped = await keepSucceeded(path);
    expect(dropped.spentUsd).toBe(1.1875);
    expect(linesOf(await readFile(path, 'utf8'))).toHaveLength(2);
  });

  it('the last line of an article wins, whatever its status: a success run again and cut short is unfinished again', async () => {
    const path = join(dir, 'results.jsonl');
    const line = (id: string, status: string, costUsd: number, outputs: object) =>
      JSON.stringify({ id, title: `t${id}`, status, outputs, costUsd });
    const lines = [
      line('1', 'succeeded', 0.5, { a: 1, b: 1 }),
      line('2', 'succeeded', 0.5, { a: 2, b: 2 }),
      line('1', 'succeeded', 0.25, { a: 1, b: 9 }),
      line('2', 'cancelled', 0.125, { a: 2 }),
    ];
    await writeFile(path, `${lines.join('\n')}\n`);
    const kept = await keepSucceeded(path, { keepUnfinished: true });
    expect([...kept.succeeded.keys()]).toEqual(['1']);
    expect(kept.partial).toEqual(new Map([['2', { a: 2 }]]));
    expect(kept.dropped).toBe(3);
    expect(linesOf(await readFile(path, 'utf8'))).toEqual([
      line('1', 'succeeded', 0.75, { a: 1, b: 9 }),
      line('2', 'cancelled', 0.625, { a: 2 }),
    ]);
  });

  it('redo: a success with outputs to make again is taken up as unfinished, those outputs left out; its line stays as it is', async () => {
    const path = join(dir, 'results.jsonl');
    const line = (id: string, status: string, outputs: object, fingerprints?: object) =>
      JSON.stringify({ id, title: `t${id}`, status, outputs, ...(fingerprints && { fingerprints }) });
    const lines = [
      line('1', 'succeeded', { a: 1, b: 1 }, { a: 'old', b: 'same' }),
      line('2', 'succeeded', { a: 2, b: 2 }, { a: 'new', b: 'same' }),
      line('3', 'succeeded', { a: 3, b: 3 }), // written before fingerprints: as it is
      line('4', 'failed', { a: 4 }, { a: 'old', b: 'same' }),
      line('5', 'succeeded', { a: 5 }, { a: 'new' }), // task b added since
    ];
    await writeFile(path, `${lines.join('\n')}\n`);
    const seen: string[] = [];
    const kept = await keepSucceeded(path, {
      keepUnfinished: true,
      redo: ({ id, outputs, fingerprints }) => {
        seen.push(id);
        const changed = fingerprints !== undefined && fingerprints.a !== 'new' ? ['a', 'b'] : [];
        return [...changed, ...['a', 'b'].filter((task) => !(task in outputs) && !changed.includes(task))];
      },
    });
    expect(seen).toEqual(['1', '2', '3', '4', '5']);
    expect([...kept.succeeded.keys()]).toEqual(['2', '3']);
    // Only outputs the line held are redone; a task it lacks makes a success unfinished all the same.
    expect(kept.redo).toEqual(
      new Map([
        ['1', ['a', 'b']],
        ['4', ['a']],
      ]),
    );
    expect(kept.partial).toEqual(new Map([['5', { a: 5 }]]));
    expect(linesOf(await readFile(path, 'utf8'))).toEqual(lines);
  });

  it('a results file that cannot be read (a folder) is an OutputError naming it', async () => {
    const error = await keepSucceeded(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect((error as Error).message).toMatch(new RegExp(`^${dir}: cannot read file \\(EISDIR`));
  });
});
