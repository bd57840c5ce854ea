import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { createBackoff, decorrelatedJitterDelayMs, exponentialDelayMs, fullJitterDelayMs } from '../../src/retry/backoff.ts';

/** The largest double below 1: the top of what `Math.random` can return. */
const ALMOST_ONE = 1 - Number.EPSILON / 2;
const fixed = (value: number) => () => value;

describe('exponentialDelayMs()', () => {
  it.each([
    { attempt: 1, options: {}, expected: 100 },
    { attempt: 2, options: {}, expected: 200 },
    { attempt: 3, options: {}, expected: 400 },
    { attempt: 5, options: {}, expected: 1600 },
    { attempt: 6, options: {}, expected: 2000 },
    { attempt: 10_000, options: {}, expected: 2000 },
    { attempt: 1, options: { baseMs: 250, capMs: 1000 }, expected: 250 },
    { attempt: 3, options: { baseMs: 250, capMs: 1000 }, expected: 1000 },
    { attempt: 4, options: { baseMs: 250, capMs: 1000 }, expected: 1000 },
    { attempt: 7, options: { baseMs: 50, capMs: 50 }, expected: 50 },
  ])('exponentialDelayMs() - attempt $attempt with $options is $expected ms', ({ attempt, options, expected }) => {
    expect(exponentialDelayMs(attempt, options)).toBe(expected);
  });

  it.each([0, -1, 1.5, Number.NaN, Infinity])('exponentialDelayMs() - rejects attempt %s', (attempt) => {
    expect(() => exponentialDelayMs(attempt)).toThrow(new TypeError(`Expected attempt to be an integer >= 1, got ${attempt}`));
  });
});

describe('fullJitterDelayMs()', () => {
  it.each([
    { attempt: 1, random: 0, expected: 0 },
    { attempt: 1, random: 0.5, expected: 50 },
    { attempt: 3, random: 0.5, expected: 200 },
    { attempt: 3, random: 0.25, expected: 100 },
    { attempt: 6, random: 0.5, expected: 1000 },
    { attempt: 40, random: 0.5, expected: 1000 },
    { attempt: 6, random: 0, expected: 0 },
  ])('fullJitterDelayMs() - attempt $attempt, random $random is $expected ms', ({ attempt, random, expected }) => {
    expect(fullJitterDelayMs(attempt, {}, fixed(random))).toBe(expected);
  });

  it('fullJitterDelayMs() - stays just below the exponential delay at the top of random', () => {
    const delayMs = fullJitterDelayMs(3, {}, fixed(ALMOST_ONE));
    expect(delayMs).toBeLessThan(400);
    expect(delayMs).toBeCloseTo(400, 9);
    expect(fullJitterDelayMs(20, {}, fixed(ALMOST_ONE))).toBeLessThan(2000);
  });

  it('fullJitterDelayMs() - is uniform in [0, exponential delay) for any random in [0, 1)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const delayMs = fullJitterDelayMs(attempt, {}, fixed(r));
        expect(delayMs).toBeGreaterThanOrEqual(0);
        expect(delayMs).toBeLessThanOrEqual(exponentialDelayMs(attempt));
      }),
    );
  });
});

describe('decorrelatedJitterDelayMs()', () => {
  it.each([
    { previousDelayMs: undefined, random: 0, expected: 100 },
    { previousDelayMs: undefined, random: 0.5, expected: 200 },
    { previousDelayMs: 0, random: 0.5, expected: 200 },
    { previousDelayMs: 40, random: 0.5, expected: 200 },
    { previousDelayMs: 100, random: 0.5, expected: 200 },
    { previousDelayMs: 300, random: 0, expected: 100 },
    { previousDelayMs: 300, random: 0.5, expected: 500 },
    { previousDelayMs: 500, random: 0.5, expected: 800 },
    { previousDelayMs: 1000, random: 0.5, expected: 1550 },
    { previousDelayMs: 1000, random: 0.75, expected: 2000 },
    { previousDelayMs: 2000, random: ALMOST_ONE, expected: 2000 },
  ])('decorrelatedJitterDelayMs() - previous $previousDelayMs, random $random is $expected ms', ({ previousDelayMs, random, expected }) => {
    expect(decorrelatedJitterDelayMs(previousDelayMs, {}, fixed(random))).toBe(expected);
  });

  it('decorrelatedJitterDelayMs() - stays within [base, min(cap, previous · 3)]', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (previousDelayMs, r) => {
          const delayMs = decorrelatedJitterDelayMs(previousDelayMs, { baseMs: 100, capMs: 2000 }, fixed(r));
          expect(delayMs).toBeGreaterThanOrEqual(100);
          expect(delayMs).toBeLessThanOrEqual(Math.min(2000, Math.max(100, previousDelayMs) * 3));
        },
      ),
    );
  });

  it.each([-1, Number.NaN, Infinity])('decorrelatedJitterDelayMs() - rejects previousDelayMs %s', (previousDelayMs) => {
    expect(() => decorrelatedJitterDelayMs(previousDelayMs)).toThrow(
      new TypeError(`Expected previousDelayMs to be a finite number >= 0 (ms), got ${previousDelayMs}`),
    );
  });
});

describe('createBackoff()', () => {
  it('createBackoff() - defaults to full jitter', () => {
    const backoff = createBackoff(undefined, undefined, fixed(0.5));
    expect([1, 2, 3].map((attempt) => backoff(attempt, 0))).toEqual([50, 100, 200]);
  });

  it.each([
    { kind: 'exponential' as const, expected: [100, 200, 400, 800, 1600, 2000] },
    { kind: 'full' as const, expected: [50, 100, 200, 400, 800, 1000] },
  ])('createBackoff() - $kind follows the attempt number', ({ kind, expected }) => {
    const backoff = createBackoff(kind, {}, fixed(0.5));
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoff(attempt, 12_345))).toEqual(expected);
  });

  it('createBackoff() - decorrelated grows from the previous delay', () => {
    const backoff = createBackoff('decorrelated', {}, fixed(0.5));
    let previousDelayMs = 0;
    const delaysMs: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      previousDelayMs = backoff(attempt, previousDelayMs);
      delaysMs.push(previousDelayMs);
    }
    expect(delaysMs).toEqual([200, 350, 575, 912.5, 1418.75]);
  });

  it.each([
    [{ baseMs: 0 }, 'Expected baseMs to be a finite number > 0 (ms), got 0'],
    [{ baseMs: -5 }, 'Expected baseMs to be a finite number > 0 (ms), got -5'],
    [{ baseMs: Number.NaN }, 'Expected baseMs to be a finite number > 0 (ms), got NaN'],
    [{ baseMs: Infinity }, 'Expected baseMs to be a finite number > 0 (ms), got Infinity'],
    [{ capMs: 50 }, 'Expected capMs to be a finite number >= 100 (ms), got 50'],
    [{ baseMs: 10, capMs: Infinity }, 'Expected capMs to be a finite number >= 10 (ms), got Infinity'],
    [{ capMs: Number.NaN }, 'Expected capMs to be a finite number >= 100 (ms), got NaN'],
  ])('createBackoff() - rejects options %o at once', (options, message) => {
    expect(() => createBackoff('full', options)).toThrow(new TypeError(message));
    expect(() => exponentialDelayMs(1, options)).toThrow(new TypeError(message));
  });

  it('createBackoff() - rejects an unknown kind', () => {
    expect(() => createBackoff('linear' as never)).toThrow(
      new TypeError('Expected kind to be one of "exponential", "full", "decorrelated", got "linear"'),
    );
  });

  it('createBackoff() - the returned backoff rejects a bad attempt', () => {
    for (const kind of ['exponential', 'full', 'decorrelated'] as const) {
      expect(() => createBackoff(kind)(0, 0)).toThrow(TypeError);
    }
  });
});
