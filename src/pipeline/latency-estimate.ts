/** The weights TCP gives a new round trip in its smoothed mean and mean deviation (RFC 6298). */
const MEAN_WEIGHT = 1 / 8;
const DEVIATION_WEIGHT = 1 / 4;
/** How many calls' worth a prior guess counts for in the expected time: the first answers move it, one does not replace it. */
const PRIOR_WEIGHT = 4;

/**
 * What a call takes, learnt from the calls so far.
 *
 * - {@link highMs}, a time few calls exceed, is learnt as TCP learns a round trip (RFC 6298): a
 *   smoothed mean plus two smoothed mean deviations, the first answer counting as a mean with
 *   half of itself for deviation. Until a call has answered, the prior guess.
 * - {@link meanMs}, the expected time, starts from the prior guess and moves with each answer, a
 *   plain mean over the first few (the prior counting as {@link PRIOR_WEIGHT} of them), then a
 *   moving average: one quick first answer does not set the pace for a whole run.
 */
export class LatencyEstimate {
  #meanMs: number;
  #samples = 0;
  #smoothedMs: number | undefined;
  #deviationMs = 0;

  /** @param priorMs what a call is taken to take until calls have answered */
  constructor(priorMs: number) {
    this.#meanMs = priorMs;
  }

  record(latencyMs: number): void {
    this.#samples++;
    this.#meanMs += Math.max(MEAN_WEIGHT, 1 / (this.#samples + PRIOR_WEIGHT)) * (latencyMs - this.#meanMs);
    if (this.#smoothedMs === undefined) {
      this.#smoothedMs = latencyMs;
      this.#deviationMs = latencyMs / 2;
      return;
    }
    this.#deviationMs += DEVIATION_WEIGHT * (Math.abs(latencyMs - this.#smoothedMs) - this.#deviationMs);
    this.#smoothedMs += MEAN_WEIGHT * (latencyMs - this.#smoothedMs);
  }

  /** The expected time of a call, in ms. */
  get meanMs(): number {
    return this.#meanMs;
  }

  /** A time few calls take longer than, in ms. */
  get highMs(): number {
    return this.#smoothedMs === undefined ? this.#meanMs : this.#smoothedMs + 2 * this.#deviationMs;
  }
}
