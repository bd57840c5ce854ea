import { describe, it, expect } from 'vitest';
import { Histogram } from '../../src/pipeline/histogram.ts';

describe('Histogram', () => {
  it('.quantile() - is within 1 % of the exact quantile over a wide range', () => {
    const histogram = new Histogram();
    const values = Array.from({ length: 10_000 }, (_, i) => 0.01 * 1.0015 ** i);
    for (const value of values) histogram.record(value);
    for (const q of [0.5, 0.95, 0.99]) {
      const exact = values[Math.ceil(q * values.length) - 1]!;
      expect(Math.abs(histogram.quantile(q) - exact) / exact).toBeLessThan(0.01);
    }
    expect(histogram.min).toBe(values[0]);
    expect(histogram.max).toBe(values.at(-1));
    expect(histogram.count).toBe(values.length);
  });

  it('.quantile() - is NaN when empty and exact for a single value', () => {
    const histogram = new Histogram();
    expect(histogram.quantile(0.5)).toBeNaN();
    histogram.record(412);
    expect(histogram.quantile(0.99)).toBe(412);
  });

  it('.record() - ignores negative and NaN values, keeps zero', () => {
    const histogram = new Histogram();
    histogram.record(-1);
    histogram.record(Number.NaN);
    histogram.record(0);
    expect(histogram.count).toBe(1);
    expect(histogram.quantile(0.5)).toBe(0);
  });

  it('new Histogram() - throws a TypeError for a bad range', () => {
    expect(() => new Histogram(0)).toThrow(TypeError);
    expect(() => new Histogram(1, 0.5)).toThrow(TypeError);
  });
});
