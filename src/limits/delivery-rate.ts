/**
 * The rate at which calls have been getting through lately: the send instants of the last
 * `samples` successful calls, and the rate they span. Against a quota that is being overrun, what
 * gets through is the quota — so after a 429 this says how far to come down, where a fixed factor
 * can only guess. Send instants, not answer instants: answers come back with the latency's spread.
 */
export class DeliveryRate {
  readonly #sentAtMs: Float64Array;
  #count = 0;
  #next = 0;

  constructor(samples: number) {
    this.#sentAtMs = new Float64Array(samples);
  }

  /** A call sent at `sentAtMs` got through. */
  record(sentAtMs: number): void {
    this.#sentAtMs[this.#next] = sentAtMs;
    this.#next = (this.#next + 1) % this.#sentAtMs.length;
    this.#count = Math.min(this.#count + 1, this.#sentAtMs.length);
  }

  /**
   * Calls per second spanned by the successes sent at or after `sinceMs` (n of them over the time
   * from the first to the last: n − 1 gaps); undefined with fewer than `minSamples` of them, or
   * none apart in time.
   */
  perSecond(sinceMs: number, minSamples: number): number | undefined {
    let n = 0;
    let first = Infinity;
    let last = -Infinity;
    for (let index = 0; index < this.#count; index++) {
      const atMs = this.#sentAtMs[index]!;
      if (atMs < sinceMs) continue;
      n++;
      if (atMs < first) first = atMs;
      if (atMs > last) last = atMs;
    }
    if (n < minSamples || last === first) return undefined;
    return ((n - 1) * 1000) / (last - first);
  }
}
