/**
 * The rate at which calls have been getting through lately: the instants the last `samples`
 * successful calls came back, and the rate they span. Against a quota that is being overrun, what
 * gets through is the quota — so after a 429 this says how far to come down, where a fixed factor
 * can only guess. Answer instants, not send instants: the last successes to come back are the
 * fast ones among those sent lately and every one sent earlier, so their send instants span the
 * latency's spread on top of the calls' — 200–800 ms of latency read 20/s as about 17/s — while
 * answers, each as late as its latency, come back at the rate the calls went out.
 */
export class DeliveryRate {
  readonly #atMs: Float64Array;
  #count = 0;
  #next = 0;

  constructor(samples: number) {
    this.#atMs = new Float64Array(samples);
  }

  /** A call that got through came back at `atMs`. */
  record(atMs: number): void {
    this.#atMs[this.#next] = atMs;
    this.#next = (this.#next + 1) % this.#atMs.length;
    this.#count = Math.min(this.#count + 1, this.#atMs.length);
  }

  /**
   * Calls per second spanned by the successes back at or after `sinceMs` (n of them over the time
   * from the first to the last: n − 1 gaps); undefined with fewer than `minSamples` of them, or
   * none apart in time.
   */
  perSecond(sinceMs: number, minSamples: number): number | undefined {
    let n = 0;
    let first = Infinity;
    let last = -Infinity;
    for (let index = 0; index < this.#count; index++) {
      const atMs = this.#atMs[index]!;
      if (atMs < sinceMs) continue;
      n++;
      if (atMs < first) first = atMs;
      if (atMs > last) last = atMs;
    }
    if (n < minSamples || last === first) return undefined;
    return ((n - 1) * 1000) / (last - first);
  }
}
