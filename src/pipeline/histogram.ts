/**
 * A fixed-memory histogram of non-negative values (durations in ms) with ~1 % relative precision.
 *
 * Buckets are logarithmic (HDR-style): a million calls cost the same few kilobytes as ten, so a
 * run's memory does not grow with its length. Values below `resolution` share the first bucket.
 */
export class Histogram {
  static readonly #BUCKETS_PER_DOUBLING = 70; // 2^(1/70) ≈ 1.0100: 1 % wide buckets
  readonly #resolution: number;
  readonly #counts: Float64Array;
  #count = 0;
  #min = Infinity;
  #max = -Infinity;

  /**
   * @param resolution smallest distinguishable value (default 0.001 — a microsecond in ms)
   * @param maxValue largest value kept exactly; larger ones land in the last bucket (max still exact)
   */
  constructor(resolution = 0.001, maxValue = 3_600_000) {
    if (!(resolution > 0) || !(maxValue > resolution)) {
      throw new TypeError(`Expected 0 < resolution < maxValue, got ${resolution} and ${maxValue}`);
    }
    this.#resolution = resolution;
    this.#counts = new Float64Array(this.#indexOf(maxValue) + 2);
  }

  get count(): number {
    return this.#count;
  }

  get min(): number {
    return this.#count === 0 ? Number.NaN : this.#min;
  }

  get max(): number {
    return this.#count === 0 ? Number.NaN : this.#max;
  }

  record(value: number): void {
    if (!(value >= 0)) return;
    const index = Math.min(this.#indexOf(value), this.#counts.length - 1);
    this.#counts[index]!++;
    this.#count++;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
  }

  /** The value at quantile `q` (0..1): a bucket's midpoint, clamped to the exact min and max. NaN when empty. */
  quantile(q: number): number {
    if (this.#count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    let seen = 0;
    for (let index = 0; index < this.#counts.length; index++) {
      seen += this.#counts[index]!;
      if (seen >= rank) {
        const value = index === 0 ? this.#resolution / 2 : this.#lowerBound(index) * Math.SQRT2 ** (1 / Histogram.#BUCKETS_PER_DOUBLING);
        return Math.min(this.#max, Math.max(this.#min, value));
      }
    }
    return this.#max;
  }

  #indexOf(value: number): number {
    if (value < this.#resolution) return 0;
    return 1 + Math.floor(Math.log2(value / this.#resolution) * Histogram.#BUCKETS_PER_DOUBLING);
  }

  #lowerBound(index: number): number {
    return this.#resolution * 2 ** ((index - 1) / Histogram.#BUCKETS_PER_DOUBLING);
  }
}
