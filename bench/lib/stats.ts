/** Order statistics over plain arrays of numbers (copied and sorted; the input is left alone). */

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The `q` quantile (0 ≤ q ≤ 1) with linear interpolation between order statistics; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const ordered = sorted(values);
  const position = (ordered.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.ceil(position);
  return ordered[below]! + (ordered[above]! - ordered[below]!) * (position - below);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export const minOf = (values: readonly number[]): number => values.reduce((a, b) => Math.min(a, b), Infinity);

export const maxOf = (values: readonly number[]): number => values.reduce((a, b) => Math.max(a, b), -Infinity);
