/**
 * Durations as Go writes them (`time.ParseDuration` / `Duration.String`): `300ms`, `1.5s`, `2m3.5s`,
 * `1h30m`, `500us`. One grammar for the flags, the providers file and OpenAI's reset headers.
 */

/** Each unit as a whole multiplier of ms and a power of ten to divide by: exact for whole-ms values. */
const UNIT_MS: Readonly<Record<string, readonly [multiplier: number, divisorExponent: number]>> = {
  ns: [1, 6],
  us: [1, 3],
  µs: [1, 3], // U+00B5, as Go prints it
  μs: [1, 3], // U+03BC
  ms: [1, 0],
  s: [1000, 0],
  m: [60_000, 0],
  h: [3_600_000, 0],
};

const PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** What {@link parseDuration} accepts, for error messages. */
export const DURATION_SYNTAX = 'a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h)';

/**
 * Milliseconds in a Go duration — a sequence of decimal numbers each with a unit (`1h30m`,
 * `2m3.5s`, `1.5s`, `500us`), optionally signed — or `undefined` when the text is not one. A bare
 * `0` is zero; any other number without a unit is refused, as Go refuses it (5 ms or 5 s?).
 * Surrounding white space is ignored; units are case-sensitive (`m` is minutes, `ms` milliseconds).
 */
export function parseDuration(text: string): number | undefined {
  let rest = text.trim();
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest.startsWith('-')) sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let totalMs = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < rest.length) {
    const match = PART.exec(rest);
    if (match === null) return undefined;
    // The number's digits as an integer, scaled and divided once: `8.104s` is 8104 × 1000 / 10³,
    // exactly 8104 ms, where 8.104 × 1000 would be 8103.999999999999.
    const [whole = '', fraction = ''] = match[1]!.split('.');
    const [multiplier, divisorExponent] = UNIT_MS[match[2]!]!;
    totalMs += (Number(whole + fraction) * multiplier) / 10 ** (fraction.length + divisorExponent);
  }
  return Number.isFinite(totalMs) ? sign * totalMs : undefined;
}

/**
 * Whole milliseconds as Go's `Duration.String()` prints them: `0s`, `400ms`, `1.5s`, `6m0s`,
 * `1h2m3.5s`. Fractions of a millisecond are rounded up (a wait said this way is never short).
 */
export function formatDuration(ms: number): string {
  const totalMs = Math.ceil(ms);
  if (totalMs <= 0) return '0s';
  if (totalMs < 1000) return `${totalMs}ms`;
  const hours = Math.floor(totalMs / 3_600_000);
  const minutes = Math.floor((totalMs % 3_600_000) / 60_000);
  const restMs = totalMs % 60_000;
  const fraction =
    restMs % 1000 === 0
      ? ''
      : `.${String(restMs % 1000)
          .padStart(3, '0')
          .replace(/0+$/, '')}`;
  const seconds = `${Math.floor(restMs / 1000)}${fraction}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}
