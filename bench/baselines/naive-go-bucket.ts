import { sleep, type Clock } from '../../src/clock.ts';

/**
 * Go's `time.Now()` and `time.After(d)` as a literal port writes them: `performance.now()` and a
 * bare `setTimeout`, which truncates fractional milliseconds and raises anything under 1 ms to 1 ms.
 */
const plainTime: Clock = {
  now: () => performance.now(),
  setTimer(delayMs, callback) {
    const handle = setTimeout(callback, delayMs);
    return () => clearTimeout(handle);
  },
};

/**
 * The original Go pipeline's token bucket (see the README), ported line for line as the baseline to beat: float tokens, refill
 * from elapsed time capped at the maximum, and an `Acquire` that polls — refill, take one token if
 * there is one, else sleep `(1 − tokens) / rate` and go round again. No queue: every waiter has
 * its own timer and whoever wakes first after a refill wins. Aborting a sleep is Go's
 * `select { case <-ctx.Done(): … case <-time.After(wait): }`.
 *
 * The fields are public, as the Go struct's are to its package; the bench uses that to release a
 * capped run at once (tokens and capacity to Infinity, rate to 0).
 */
export class NaiveGoBucket {
  tokens: number;
  maxTokens: number;
  /** Tokens per second. */
  refillRate: number;
  lastRefillMs: number;
  readonly #time: Clock;

  constructor(rate: number, burst: number, time: Clock = plainTime) {
    this.#time = time;
    this.tokens = burst;
    this.maxTokens = burst;
    this.refillRate = rate;
    this.lastRefillMs = time.now();
  }

  refill(): void {
    const nowMs = this.#time.now();
    const elapsedSeconds = (nowMs - this.lastRefillMs) / 1000;
    this.tokens = Math.min(this.maxTokens, this.tokens + elapsedSeconds * this.refillRate);
    this.lastRefillMs = nowMs;
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    for (;;) {
      this.refill();
      if (this.tokens >= 1) {
        this.tokens--;
        return;
      }
      const waitMs = ((1 - this.tokens) / this.refillRate) * 1000;
      await sleep(this.#time, waitMs, signal);
    }
  }

  tryAcquire(): boolean {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens--;
      return true;
    }
    return false;
  }

  /** The count after a refill: the bench's view of the Go struct's `tokens` field. */
  available(): number {
    this.refill();
    return this.tokens;
  }
}
