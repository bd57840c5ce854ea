import type { BenchSetting } from './sweep.ts';

/** Vega's `tableau10`, the scheme the chart used to take from vega: ten hues that stay apart. */
const TABLEAU10 = ['#4c78a8', '#f58518', '#e45756', '#72b7b2', '#54a24b', '#eeca3b', '#b279a2', '#ff9da6', '#9d755d', '#bab0ac'];

/** More shades of one hue than this stop being told apart; such sweeps get a hue per setting. */
const MAX_SHADES = 4;

/**
 * One colour per setting, all different, in the order given. A sweep with more settings than a
 * categorical scheme has hues (a grid of 8 rates × 3 bursts is 24) would repeat colours, so settings
 * that share a value are grouped: a hue per rate (or per burst, when there are more bursts than
 * rates), and within it darker to lighter shades along the other value. A sweep whose settings all
 * differ in both gets a hue each, from `tableau10` when ten are enough.
 */
export function settingColors(settings: readonly BenchSetting[]): string[] {
  const rates = distinct(settings.map((s) => s.rate));
  const bursts = distinct(settings.map((s) => s.burst));
  const hueOf = rates.length >= bursts.length ? (s: BenchSetting) => s.rate : (s: BenchSetting) => s.burst;
  const groups = distinct(settings.map(hueOf));
  const members = groups.map((value) => settings.filter((s) => hueOf(s) === value).length);
  if (groups.length === settings.length || Math.max(...members) > MAX_SHADES) return hues(settings.length);
  const base = hues(groups.length);
  const seen = groups.map(() => 0);
  return settings.map((s) => {
    const group = groups.indexOf(hueOf(s));
    const count = members[group]!;
    // From 45 % towards black to 20 % towards white: far enough apart to tell, none washed out on white.
    const shade = count === 1 ? 0 : -0.45 + (0.65 * seen[group]!++) / (count - 1);
    return mix(base[group]!, shade);
  });
}

function distinct<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** `count` hues: tableau10 when it has enough, else evenly round the wheel, alternately darker and lighter so neighbours differ. */
function hues(count: number): string[] {
  if (count <= TABLEAU10.length) return TABLEAU10.slice(0, count);
  return Array.from({ length: count }, (_, i) => hslToHex((360 * i) / count, 0.6, i % 2 === 0 ? 0.42 : 0.6));
}

/** `hex` moved `amount` of the way towards white (> 0) or black (< 0). */
function mix(hex: string, amount: number): string {
  const target = amount > 0 ? 255 : 0;
  const channels = [1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16));
  return toHex(channels.map((c) => c + (target - c) * Math.abs(amount)));
}

function hslToHex(hueDeg: number, saturation: number, lightness: number): string {
  const a = saturation * Math.min(lightness, 1 - lightness);
  const channel = (n: number) => {
    const k = (n + hueDeg / 30) % 12;
    return 255 * (lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)));
  };
  return toHex([channel(0), channel(8), channel(4)]);
}

function toHex(channels: readonly number[]): string {
  return `#${channels
    .map((c) =>
      Math.round(Math.min(255, Math.max(0, c)))
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
}
