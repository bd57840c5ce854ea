// The ResultStore seam: the JSONL file and the in-memory store take up, compact and keep a state by
// the same rules, written once (take-up.ts) — the same results in, the same said and kept out.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { JsonlResultStore } from '../../src/sinks/jsonl-result-store.ts';
import { MemoryResultStore } from '../../src/sinks/memory-result-store.ts';
import type { KeepSucceededOptions, ResultStore } from '../../src/sinks/result-store.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'result-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const result = (id: string, status: ArticleResult['status'], costUsd: number, outputs: object, fingerprints?: object): ArticleResult => ({
  id,
  title: `t${id}`,
  status,
  outputs: outputs as ArticleResult['outputs'],
  attempts: 1,
  elapsedMs: 10,
  callMs: 5,
  costUsd,
  ...(fingerprints !== undefined && { fingerprints: fingerprints as Record<string, string> }),
});

/** A run stopped, then resumed, with an article that failed twice and one whose task `a` changed. */
const EARLIER: readonly ArticleResult[] = [
  result('1', 'succeeded', 0.25, { a: 1, b: 1 }, { a: 'new', b: 'same' }),
  result('2', 'cancelled', 0.125, { a: 2 }, { a: 'new', b: 'same' }),
  result('3', 'failed', 0.5, {}, { a: 'new', b: 'same' }),
  result('4', 'succeeded', 0.5, { a: 4, b: 4 }, { a: 'old', b: 'same' }),
  result('2', 'succeeded', 0.0625, { a: 2, b: 2 }, { a: 'new', b: 'same' }),
  result('3', 'failed', 0.25, {}, { a: 'new', b: 'same' }),
];

/** The tasks as they now are: `a` changed since the lines marked `old`; `b` reads `a`. */
const redo: KeepSucceededOptions['redo'] = ({ fingerprints }) => (fingerprints?.a === 'old' ? ['a', 'b'] : []);

/** Each store, holding `results` as an earlier run left them. */
const STORES: readonly [
  string,
  (results: readonly ArticleResult[]) => Promise<{ store: ResultStore; held: () => Promise<ArticleResult[]> }>,
][] = [
  [
    'JsonlResultStore',
    async (results) => {
      const path = join(dir, 'results.jsonl');
      await writeFile(path, results.map((r) => `${JSON.stringify(r)}\n`).join(''));
      const held = async () =>
        (await readFile(path, 'utf8'))
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as ArticleResult);
      return { store: JsonlResultStore.at(path), held };
    },
  ],
  [
    'MemoryResultStore',
    async (results) => {
      const store = new MemoryResultStore({ results });
      return { store, held: async () => [...store.results] };
    },
  ],
];

describe.each(STORES)('%s', (_, make) => {
  it('takeUp keepUnfinished: each article once, its last result, its cost the sum of its results; what each resumed run does', async () => {
    const { store, held } = await make(EARLIER);
    const kept = await store.takeUp({ keepUnfinished: true, redo });
    expect(kept.spentUsd).toBe(1.6875);
    expect(kept.succeeded).toEqual(
      new Map([
        ['1', 't1'],
        ['2', 't2'],
      ]),
    );
    expect(kept.unfinished).toEqual(new Map([['3', 'failed']]));
    expect(kept.redo).toEqual(new Map([['4', ['a', 'b']]]));
    expect(kept.partial).toEqual(new Map());
    expect(kept.dropped).toBe(3);
    expect(kept.truncatedLastLine).toBe(false);
    expect((await held()).map(({ id, status, costUsd }) => ({ id, status, costUsd }))).toEqual([
      { id: '1', status: 'succeeded', costUsd: 0.25 },
      { id: '4', status: 'succeeded', costUsd: 0.5 },
      { id: '2', status: 'succeeded', costUsd: 0.1875 },
      { id: '3', status: 'failed', costUsd: 0.75 },
    ]);
    // Taken up again, nothing moves: what was spent is still all said.
    expect((await store.takeUp({ keepUnfinished: true })).spentUsd).toBe(1.6875);
  });

  it('takeUp without keepUnfinished drops the results of articles that did not succeed, and still says what they spent', async () => {
    const { store, held } = await make(EARLIER);
    const kept = await store.takeUp();
    expect(kept.spentUsd).toBe(1.6875);
    expect([...kept.succeeded.keys()]).toEqual(['1', '4', '2']);
    expect((await held()).map(({ id, costUsd }) => ({ id, costUsd }))).toEqual([
      { id: '1', costUsd: 0.25 },
      { id: '4', costUsd: 0.5 },
      { id: '2', costUsd: 0.0625 },
    ]);
  });

  it('an unfinished article is taken up with the outputs it keeps, less those to make again', async () => {
    const { store } = await make([result('5', 'cancelled', 0.1, { a: 5, b: 5, c: 5 }, { a: 'old', b: 'same' })]);
    const kept = await store.takeUp({ keepUnfinished: true, redo: () => ['a', 'b'] });
    expect(kept.partial).toEqual(new Map([['5', { c: 5 }]]));
    expect(kept.redo).toEqual(new Map([['5', ['a', 'b']]]));
    expect(kept.unfinished).toEqual(new Map([['5', 'cancelled']]));
  });

  it('writes, then compacts what a resumed run wrote after what it took up', async () => {
    const { store, held } = await make(EARLIER.slice(0, 3));
    await store.takeUp({ keepUnfinished: true });
    if (store instanceof JsonlResultStore) await store.open({ append: true });
    await store.write(result('3', 'succeeded', 0.25, { a: 3, b: 3 }));
    expect(store.written).toBe(1);
    await store.close();
    expect((await held()).map(({ id }) => id)).toEqual(['1', '2', '3', '3']);
    await store.compact();
    expect((await held()).map(({ id, status, costUsd }) => ({ id, status, costUsd }))).toEqual([
      { id: '1', status: 'succeeded', costUsd: 0.25 },
      { id: '2', status: 'cancelled', costUsd: 0.125 },
      { id: '3', status: 'succeeded', costUsd: 0.75 },
    ]);
  });

  it('keeps a state whole: what was saved, a copy; none once cleared', async () => {
    const { store } = await make([]);
    expect(await store.state.load()).toBeUndefined();
    const state = { pending: [{ batchId: 'b1' }], ended: ['1'] };
    await store.state.save(state);
    state.ended.push('2');
    expect(await store.state.load()).toEqual({ pending: [{ batchId: 'b1' }], ended: ['1'] });
    await store.state.clear();
    expect(await store.state.load()).toBeUndefined();
  });

  it('takes up nothing from a store that holds nothing', async () => {
    const { store } = await make([]);
    expect(await store.takeUp({ keepUnfinished: true })).toMatchObject({ spentUsd: 0, dropped: 0, truncatedLastLine: false });
  });
});

describe('JsonlResultStore', () => {
  it('drops a last line a kill cut short, and says so', async () => {
    const path = join(dir, 'torn.jsonl');
    await writeFile(path, `${JSON.stringify(result('1', 'succeeded', 0, { a: 1 }))}\n{"id":"2","status":"succ`);
    const kept = await JsonlResultStore.at(path).takeUp({ keepUnfinished: true });
    expect(kept.truncatedLastLine).toBe(true);
    expect([...kept.succeeded.keys()]).toEqual(['1']);
    expect(await readFile(path, 'utf8')).toBe(`${JSON.stringify(result('1', 'succeeded', 0, { a: 1 }))}\n`);
  });

  it('keeps its state beside the file, <path>.batches.json, written whole', async () => {
    const store = JsonlResultStore.at(join(dir, 'out.jsonl'));
    expect(store.state.name).toBe(join(dir, 'out.jsonl.batches.json'));
    await store.state.save({ ended: [] });
    expect(await readFile(store.state.name, 'utf8')).toBe('{"ended":[]}\n');
  });

  it('to a stream: written only, nothing to take up', async () => {
    const chunks: string[] = [];
    const { Writable } = await import('node:stream');
    const stream = new Writable({
      write(chunk: Buffer, _, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    const store = JsonlResultStore.to(stream, 'stdout');
    await store.write(result('1', 'succeeded', 0, {}));
    await store.close();
    expect(chunks.join('')).toBe(`${JSON.stringify(result('1', 'succeeded', 0, {}))}\n`);
    await expect(store.takeUp()).rejects.toThrow(new TypeError('Expected a results file to take up, got stdout'));
    await expect(store.state.save({})).rejects.toThrow(TypeError);
  });
});
