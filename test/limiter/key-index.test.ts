import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyIndex } from '../../src/limiter/key-index.ts';

/** An index and a `Map` fed the same inserts and removes; slots are handed out as the limiter does. */
function twin(slots: number, seed?: number) {
  const index = new KeyIndex(slots, seed);
  const reference = new Map<string, number>();
  const free = Array.from({ length: slots }, (_, slot) => slots - 1 - slot);
  return {
    index,
    reference,
    insert(key: string) {
      const slot = free.pop()!;
      index.insert(key, index.hash(key), slot);
      reference.set(key, slot);
    },
    remove(key: string) {
      const slot = reference.get(key)!;
      index.remove(slot);
      reference.delete(key);
      free.push(slot);
    },
    check(keys: Iterable<string>) {
      expect(index.size).toBe(reference.size);
      for (const key of keys) expect(index.find(key, index.hash(key)), key).toBe(reference.get(key) ?? -1);
      for (const [key, slot] of reference) expect(index.keyOf(slot)).toBe(key);
    },
  };
}

describe('KeyIndex', () => {
  it('finds what it holds and nothing else, through any mix of inserts and removes', () => {
    // A small table and few distinct keys, so runs of colliding entries form and removals shift them.
    const key = fc.constantFrom(...Array.from({ length: 24 }, (_, i) => `k${i}`), '', 'é', '\u{1F600}', '\ud800');
    fc.assert(
      fc.property(fc.array(key, { maxLength: 300 }), fc.integer(), (keys, seed) => {
        const t = twin(32, seed);
        for (const k of keys) {
          if (t.reference.has(k)) t.remove(k);
          else if (t.reference.size < 32) t.insert(k);
          t.check([k]);
        }
        t.check([...keys, 'never']);
      }),
    );
  });

  it('keeps every key in its slot when it grows', () => {
    const t = twin(1024);
    for (let i = 0; i < 600; i++) t.insert(`client-${i}`);
    for (let i = 0; i < 600; i += 3) t.remove(`client-${i}`);
    t.index.grow(4096);
    t.check(Array.from({ length: 700 }, (_, i) => `client-${i}`));
  });

  it('tells equal strings apart only by content, not identity', () => {
    const index = new KeyIndex(8);
    index.insert('203.0.113.7', index.hash('203.0.113.7'), 3);
    const sameContent = ['203.0.113', '7'].join('.');
    expect(index.find(sameContent, index.hash(sameContent))).toBe(3);
  });

  it('re-seeds and rebuilds when keys chosen to collide make a long probe, and still finds them all', () => {
    const seed = 12345;
    const index = new KeyIndex(4096, seed);
    // What an attacker who knew the seed would send: keys whose hashes share a home in the table.
    const mask = 8191;
    const home = index.hash('target') & mask;
    const colliding: string[] = [];
    for (let i = 0; colliding.length < 200; i++) {
      const key = `x${i}`;
      if ((index.hash(key) & mask) === home) colliding.push(key);
    }
    colliding.forEach((key, slot) => {
      index.insert(key, index.hash(key), slot);
    });
    expect(index.seed).not.toBe(seed);
    // After the rebuild the same keys spread out: finding each looks at a few entries, as chance allows.
    colliding.forEach((key, slot) => {
      expect(index.find(key, index.hash(key))).toBe(slot);
    });
    expect(index.size).toBe(200);
  });

  it('hashes with a seed of its own unless given one', () => {
    const seeds = new Set(Array.from({ length: 8 }, () => new KeyIndex(1).seed));
    expect(seeds.size).toBeGreaterThan(1);
    expect(new KeyIndex(1, 7).hash('a')).toBe(new KeyIndex(1, 7).hash('a'));
  });
});
