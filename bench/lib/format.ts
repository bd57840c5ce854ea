/** Number formats for the bench tables. */

export function formatOpsPerSecond(opsPerSecond: number): string {
  if (!Number.isFinite(opsPerSecond)) return String(opsPerSecond);
  if (opsPerSecond >= 1e6) return `${(opsPerSecond / 1e6).toFixed(2)} M/s`;
  if (opsPerSecond >= 1e3) return `${(opsPerSecond / 1e3).toFixed(1)} k/s`;
  return `${opsPerSecond.toFixed(0)} /s`;
}

export const formatMs = (ms: number, digits = 3): string => `${ms.toFixed(digits)} ms`;

export const formatRatio = (ratio: number, digits = 2): string => (Number.isFinite(ratio) ? `${ratio.toFixed(digits)}×` : String(ratio));

/** Half the min–max range as a share of the median, e.g. `±3%`. */
export function formatSpread(values: readonly number[], median: number): string {
  const spread = (Math.max(...values) - Math.min(...values)) / 2 / median;
  return `±${(spread * 100).toFixed(spread < 0.1 ? 1 : 0)}%`;
}
