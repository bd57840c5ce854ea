import { describe, it, expect } from 'vitest';
import { createRandom } from '../../src/simulator/random.ts';

const draw = (random: () => number, count: number): number[] => Array.from({ length: count }, () => random());

describe('createRandom()', () => {
  it('createRandom() - gives the same sequence for the same seed', () => {
    expect(draw(createRandom(42), 100)).toEqual(draw(createRandom(42), 100));
  });

  it('createRandom() - gives different sequences for different seeds', () => {
    expect(draw(createRandom(1), 10)).not.toEqual(draw(createRandom(2), 10));
  });

  it('createRandom() - uses the low 32 bits of the seed', () => {
    expect(draw(createRandom(7 + 2 ** 32), 10)).toEqual(draw(createRandom(7), 10));
    expect(draw(createRandom(-1), 10)).toEqual(draw(createRandom(2 ** 32 - 1), 10));
  });

  it('createRandom() - returns floats in [0, 1), spread evenly', () => {
    const values = draw(createRandom(0), 20_000);
    expect(values.every((value) => value >= 0 && value < 1)).toBe(true);
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    expect(mean).toBeGreaterThan(0.49);
    expect(mean).toBeLessThan(0.51);
    const buckets = new Array<number>(10).fill(0);
    for (const value of values) buckets[Math.floor(value * 10)]! += 1;
    for (const count of buckets) {
      expect(count).toBeGreaterThan(1800);
      expect(count).toBeLessThan(2200);
    }
  });

  it('createRandom() - throws TypeError for a seed that is not an integer', () => {
    expect(() => createRandom(1.5)).toThrow(new TypeError('Expected seed to be an integer, got 1.5'));
    expect(() => createRandom(Number.NaN)).toThrow(TypeError);
    expect(() => createRandom(Infinity)).toThrow(TypeError);
  });
});
