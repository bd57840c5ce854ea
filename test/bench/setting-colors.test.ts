import { describe, expect, it } from 'vitest';
import { settingColors } from '../../src/bench/setting-colors.ts';
import { pairSettings } from '../../src/bench/sweep.ts';

/** Red + green + blue, 0–765: enough to tell a darker shade from a lighter one. */
const lightness = (hex: string) => [1, 3, 5].reduce((sum, at) => sum + Number.parseInt(hex.slice(at, at + 2), 16), 0);

describe('settingColors()', () => {
  it("gives settings that differ in rate and burst tableau10's hues, in order", () => {
    expect(settingColors(pairSettings([1000, 3, 2], [3, 1, 2]))).toEqual(['#4c78a8', '#f58518', '#e45756']);
  });

  it('gives every setting of an 8 × 3 grid its own colour: a hue per rate, darker to lighter along the bursts', () => {
    const settings = pairSettings([1, 2, 3, 4, 5, 6, 8, 10], [1, 2, 3], { grid: true });
    const colors = settingColors(settings);
    expect(colors).toHaveLength(24);
    expect(new Set(colors).size).toBe(24);
    for (let rate = 0; rate < 8; rate++) {
      const [b1, b2, b3] = colors.slice(rate * 3, rate * 3 + 3).map(lightness);
      expect(b1).toBeLessThan(b2!);
      expect(b2).toBeLessThan(b3!);
    }
  });

  it('groups by burst when there are more bursts than rates', () => {
    const colors = settingColors(pairSettings([5, 10], [1, 2, 3], { grid: true }));
    expect(new Set(colors).size).toBe(6);
    // rate=5 and rate=10 at the same burst: one hue, the faster rate lighter.
    expect(lightness(colors[0]!)).toBeLessThan(lightness(colors[3]!));
  });

  it('gives a hue each, all different, beyond ten settings or five shades of one hue', () => {
    const twelve = settingColors(pairSettings([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [1]));
    expect(new Set(twelve).size).toBe(12);
    const sixBursts = settingColors(pairSettings([5], [1, 2, 3, 4, 5, 6]));
    expect(sixBursts).toEqual(['#4c78a8', '#f58518', '#e45756', '#72b7b2', '#54a24b', '#eeca3b']);
    for (const color of [...twelve, ...sixBursts]) expect(color).toMatch(/^#[0-9a-f]{6}$/);
  });
});
