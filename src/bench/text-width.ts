/**
 * Em widths that common sans-serif faces stay under, bold included: DejaVu Sans, the widest and
 * what `rsvg-convert` falls back to, has digits at 0.64 em (0.70 bold); Helvetica and Arial are
 * narrower throughout. Vega, without a canvas, lays text out at `0.8 em × length`, which
 * overstates a line of digits and lower case by a third; this stays closer and never understates.
 */
const NARROW = new Set([...' .,:;·|!il()[]/']);
const WIDE = new Set([...'%mwMW@—=+<>~#&−×']);

/** An upper bound on the width of one line of `text` at `fontSizePx` in a sans-serif face, in px. */
export function textWidthPx(text: string, fontSizePx: number): number {
  let em = 0;
  for (const char of text) em += NARROW.has(char) ? 0.4 : WIDE.has(char) ? 1.05 : char >= 'A' && char <= 'Z' ? 0.86 : 0.72;
  return em * fontSizePx;
}
