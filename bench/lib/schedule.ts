import { maxOf, minOf, quantile, sorted } from './stats.ts';

/** How a run of grants compares with the ideal token-bucket schedule. All times in ms. */
export interface ScheduleFigures {
  readonly grants: number;
  /** Achieved rate over configured: `(grants − burst) / (last − first)` in tokens/s, divided by `rate`. */
  readonly rateRatio: number;
  /** Grant time minus its ideal time `t0 + max(0, i − burst + 1) / rate`, t0 being the first grant. */
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
  readonly latenessMaxMs: number;
  /**
   * The smallest `actual − ideal` over the grants after the first (the first defines t0, so its own
   * lateness is 0 by construction): negative means some grant came before its time.
   */
  readonly earliestMs: number;
  /** Most grants inside any closed window of 1 s. */
  readonly maxInOneSecond: number;
  /** Max over grant pairs i ≤ j of `(j − i + 1) − (burst + rate·(t_j − t_i))`: tokens beyond the envelope. */
  readonly envelopeExcess: number;
  /** What lateness alone can explain: `rate × max lateness` in tokens. */
  readonly envelopeBound: number;
}

export function analyseSchedule(grantTimesMs: readonly number[], rate: number, burst: number): ScheduleFigures {
  const times = sorted(grantTimesMs);
  const count = times.length;
  const firstMs = times[0]!;
  const lastMs = times[count - 1]!;
  const perTokenMs = 1000 / rate;

  const lateness = times.map((atMs, i) => atMs - (firstMs + Math.max(0, i - burst + 1) * perTokenMs));

  let maxInOneSecond = 0;
  for (let i = 0, j = 0; i < count; i++) {
    while (j < count && times[j]! - times[i]! <= 1000) j++;
    maxInOneSecond = Math.max(maxInOneSecond, j - i);
  }

  let envelopeExcess = -Infinity;
  for (let i = 0; i < count; i++) {
    for (let j = i; j < count; j++) {
      const excess = j - i + 1 - (burst + (rate * (times[j]! - times[i]!)) / 1000);
      if (excess > envelopeExcess) envelopeExcess = excess;
    }
  }

  const latenessMaxMs = maxOf(lateness);
  return {
    grants: count,
    rateRatio: (count - burst) / ((lastMs - firstMs) / 1000) / rate,
    latenessP50Ms: quantile(lateness, 0.5),
    latenessP99Ms: quantile(lateness, 0.99),
    latenessMaxMs,
    earliestMs: count > 1 ? minOf(lateness.slice(1)) : 0,
    maxInOneSecond,
    envelopeExcess,
    envelopeBound: (rate * Math.max(0, latenessMaxMs)) / 1000,
  };
}

/** Pairs served out of arrival order: callers a < b (by call) where b was granted before a. */
export function fifoInversions(grantOrder: readonly number[]): number {
  let inversions = 0;
  for (let i = 0; i < grantOrder.length; i++) {
    for (let j = i + 1; j < grantOrder.length; j++) {
      if (grantOrder[i]! > grantOrder[j]!) inversions++;
    }
  }
  return inversions;
}
