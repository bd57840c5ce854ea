import { describe, it, expect } from 'vitest';
import { runPool } from '../../src/pipeline/pool.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('runPool()', () => {
  it('runs at most `concurrency` at once and pulls the next item only when a slot frees', async () => {
    let pulled = 0;
    let active = 0;
    let peak = 0;
    let maxAhead = 0;
    let done = 0;
    function* source() {
      for (let i = 0; i < 200; i++) {
        pulled++;
        maxAhead = Math.max(maxAhead, pulled - done);
        yield i;
      }
    }
    await runPool(
      source(),
      async () => {
        active++;
        peak = Math.max(peak, active);
        for (let i = 0; i < 1 + (done % 3); i++) await tick();
        active--;
        done++;
      },
      { concurrency: 4 },
    );
    expect(done).toBe(200);
    expect(peak).toBe(4);
    expect(maxAhead).toBeLessThanOrEqual(4);
  });

  it('gives each running item its own worker id in [0, concurrency)', async () => {
    const busy = new Set<number>();
    const seen = new Set<number>();
    await runPool(
      Array.from({ length: 50 }, (_, i) => i),
      async (_, workerId) => {
        expect(busy.has(workerId)).toBe(false);
        busy.add(workerId);
        seen.add(workerId);
        await tick();
        busy.delete(workerId);
      },
      { concurrency: 3 },
    );
    expect([...seen].sort()).toEqual([0, 1, 2]);
  });

  it('stops pulling once the signal aborts and waits for the items in flight', async () => {
    const controller = new AbortController();
    const finished: number[] = [];
    let pulled = 0;
    function* source() {
      for (let i = 0; ; i++) {
        pulled++;
        yield i;
      }
    }
    await runPool(
      source(),
      async (item) => {
        if (item === 10) controller.abort();
        await tick();
        finished.push(item);
      },
      { concurrency: 2, signal: controller.signal },
    );
    expect(pulled).toBe(11);
    expect(finished.sort((a, b) => a - b)).toEqual(Array.from({ length: 11 }, (_, i) => i));
  });

  it('rejects with the source error after the items in flight have finished', async () => {
    const finished: number[] = [];
    async function* source() {
      yield 1;
      yield 2;
      throw new Error('bad line 3');
    }
    await expect(
      runPool(
        source(),
        async (item) => {
          await tick();
          finished.push(item);
        },
        { concurrency: 5 },
      ),
    ).rejects.toThrow('bad line 3');
    expect(finished.sort()).toEqual([1, 2]);
  });

  it('throws a TypeError for a bad concurrency', async () => {
    await expect(runPool([], async () => {}, { concurrency: 0 })).rejects.toThrow(TypeError);
  });
});
