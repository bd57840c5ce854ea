import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/validation/duration.ts';

describe('parseDuration()', () => {
  it.each([
    ['0', 0],
    ['300ms', 300],
    ['1.5s', 1500],
    ['.5s', 500],
    ['2m3.5s', 123_500],
    ['1h30m', 5_400_000],
    ['500us', 0.5],
    ['500µs', 0.5],
    ['250ns', 0.00025],
    [' 2s ', 2000],
    ['-1.5h', -5_400_000],
    ['+2ms', 2],
  ])("reads Go's %s as %d ms", (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each(['', '5', '5 s', '2S', '1d', 'ms', '1.2.3s', '--1s', '1s2'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('formatDuration()', () => {
  it.each([
    [0, '0s'],
    [400, '400ms'],
    [0.2, '1ms'],
    [1500, '1.5s'],
    [360_000, '6m0s'],
    [912_000, '15m12s'],
    [3_723_500, '1h2m3.5s'],
  ])('writes %d ms as %s, as Go does', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips', () => {
    for (const ms of [1, 999, 1000, 61_001, 7_200_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });

  it('reads back every whole ms exactly, where a float product would not (8.104 × 1000 is 8103.999…)', () => {
    expect(parseDuration('8.104s')).toBe(8104);
    for (let ms = 0; ms <= 3_600_000; ms += 97) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});
