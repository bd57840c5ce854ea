/**
 * Overload read from latency, for a server that states no limits and never answers 429 (a
 * self-hosted inference server queues what is over its capacity): the calls' latency, smoothed, is
 * compared with the least it has been — the server's own pace with no queue. Well above it, the
 * calls queue there. Once a cut has been made for a queue, only a queue still growing (the latency
 * higher than at that cut) calls for another: one draining after the cut is the cut working.
 */
export class LatencySignal {
  readonly #tolerance: number;
  #smoothedMs: number | undefined;
  #baseMs = Infinity;
  #samples = 0;
  /** The smoothed latency when the last cut was called for; undefined once the queue has gone. */
  #atCutMs: number | undefined;

  /** `tolerance`: how many times its least the smoothed latency may be before the calls are taken to queue. */
  constructor(tolerance: number) {
    this.#tolerance = tolerance;
  }

  /** Records one call's latency, in ms; true when it calls for a cut. */
  record(latencyMs: number): boolean {
    const smoothedMs = this.#smoothedMs === undefined ? latencyMs : this.#smoothedMs + SMOOTHING * (latencyMs - this.#smoothedMs);
    this.#smoothedMs = smoothedMs;
    this.#samples += 1;
    this.#baseMs = Math.min(this.#baseMs, smoothedMs);
    if (this.#samples < MIN_SAMPLES) return false;
    if (smoothedMs <= this.#baseMs * this.#tolerance + NOISE_MS) {
      this.#atCutMs = undefined;
      return false;
    }
    if (this.#atCutMs !== undefined && smoothedMs <= this.#atCutMs) return false;
    this.#atCutMs = smoothedMs;
    return true;
  }
}

/** Each call's weight in the smoothed latency: the last ten or so calls make it. */
const SMOOTHING = 0.2;
/** Calls before the least latency seen is believed. */
const MIN_SAMPLES = 8;
/** A rise smaller than this is a loopback's or a timer's noise, not a queue, however fast the server. */
const NOISE_MS = 10;
