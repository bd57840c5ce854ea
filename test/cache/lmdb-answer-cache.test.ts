import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LmdbAnswerCache } from '../../src/cache/lmdb-answer-cache.ts';
import { makeTempDir, ROOT } from '../cli/run-cli.ts';
import { entryFor } from './lmdb-entries.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
});

afterAll(async () => {
  await temp.remove();
});

const answer = { output: { summary: 'S', keywords: ['a'] }, usage: { inputTokens: 10, outputTokens: 5 } };

describe('LmdbAnswerCache', () => {
  it('.get() - an answer put is read back whole, by its key only, after the cache is opened again', async () => {
    const dir = join(temp.dir, 'again', 'nested');
    const cache = await LmdbAnswerCache.open(dir);
    expect(cache.location).toBe(dir);
    expect(await cache.get('k')).toBeUndefined();
    await cache.put('k', answer);
    await cache.put('no-usage', { output: { x: 1 } });
    expect(await cache.get('k')).toEqual(answer);
    expect(await cache.get('other')).toBeUndefined();
    await cache.close();
    const reopened = await LmdbAnswerCache.open(dir);
    expect(await reopened.get('k')).toEqual(answer);
    expect(await reopened.get('no-usage')).toEqual({ output: { x: 1 } });
    expect(reopened.size).toBe(2);
    await reopened.close();
  });

  it('.get() - an answer older than ttlMs is gone', async () => {
    let nowMs = 1_000_000;
    const cache = await LmdbAnswerCache.open(join(temp.dir, 'ttl'), { ttlMs: 60_000, now: () => nowMs });
    await cache.put('k', answer);
    nowMs += 59_999;
    expect(await cache.get('k')).toEqual(answer);
    nowMs += 1;
    expect(await cache.get('k')).toBeUndefined();
    await cache.close();
  });

  it('LmdbAnswerCache.open() - refuses a file where the directory should be, and a bad ttlMs', async () => {
    const file = join(temp.dir, 'a-file');
    await writeFile(file, 'x');
    await expect(LmdbAnswerCache.open(file)).rejects.toThrow(`${file} is a file: the cache is a directory of its own`);
    await expect(LmdbAnswerCache.open(join(temp.dir, 'bad-ttl'), { ttlMs: 0 })).rejects.toThrow(/ttlMs/);
  });

  it('a writer killed (SIGKILL) mid-write leaves every entry whole: those committed, nothing torn', async () => {
    const dir = join(temp.dir, 'crash');
    const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'cache', 'lmdb-writer-child.ts'), dir], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let committed = 0;
    // Killed once it has committed a few thousand entries, while it goes on writing.
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (text: string) => {
        committed = Number(text.trim().split('\n').at(-1));
        if (committed >= 4000) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before it was killed`)));
    });
    await new Promise((resolve) => child.once('close', resolve));
    const cache = await LmdbAnswerCache.open(dir);
    const stored = cache.size;
    expect(stored).toBeGreaterThanOrEqual(committed);
    // Every entry there is whole, and the entries are the first ones written, with no gap.
    for (let n = 0; n < stored; n++) expect(await cache.get(`k${n}`)).toEqual(entryFor(n));
    expect(await cache.get(`k${stored}`)).toBeUndefined();
    await cache.close();
  }, 60_000);
});
