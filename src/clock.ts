import { checkNumber } from './validation/checks.ts';

/**
 * Time as the rest of the library sees it: a monotonic millisecond reading and one-shot timers.
 *
 * Every time-dependent component takes a `Clock`, so tests drive a {@link ManualClock} (exact,
 * instant) and production uses {@link systemClock} (`performance.now()` and real timers).
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences between readings mean anything. */
  now(): number;
  /**
   * Calls `callback` once, asynchronously, no earlier than `delayMs` from now on this clock's
   * scale. Callers that must not act early still re-check `now()`: a clock backed by other timers
   * may not promise as much. Returns a function that cancels the timer (a no-op once it has fired).
   */
  setTimer(delayMs: number, callback: () => void): () => void;
}

// Captured once: the global `performance` is a lazy getter in Node 20, and reading the clock is
// most of what a fast-path `tryAcquire()` costs.
const perf = performance;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The real clock: `performance.now()` and timers.
 *
 * Node's timers run on a whole-millisecond loop clock, so `setTimeout(ceil(delay))` lands up to a
 * millisecond or two late, and one measured from a stale loop time can fire early. This clock
 * wakes in two stages instead: `setTimeout` for the whole milliseconds, then `setImmediate` turns
 * for the sub-millisecond rest — waiters are then granted within a few hundredths of a millisecond
 * of due, at the cost of at most a millisecond of event-loop turns per wake.
 */
export const systemClock: Clock = {
  now: () => perf.now(),
  setTimer(delayMs, callback) {
    const dueMs = perf.now() + delayMs;
    let handle: NodeJS.Timeout | NodeJS.Immediate | undefined;
    let immediate = false;
    const schedule = (remainingMs: number) => {
      immediate = remainingMs < 1;
      // setTimeout takes at most 2^31 − 1 ms (~24.8 days); longer waits re-arm when it fires.
      handle = immediate ? setImmediate(wake) : setTimeout(wake, Math.min(Math.floor(remainingMs), MAX_TIMEOUT_MS));
    };
    const wake = () => {
      const remainingMs = dueMs - perf.now();
      if (remainingMs > 0) return schedule(remainingMs);
      handle = undefined;
      callback();
    };
    // Never calls back synchronously, even for a delay of 0: callers arm timers mid-update.
    schedule(delayMs);
    return () => {
      if (handle === undefined) return;
      if (immediate) clearImmediate(handle as NodeJS.Immediate);
      else clearTimeout(handle as NodeJS.Timeout);
      handle = undefined;
    };
  },
};

/**
 * Resolves after `delayMs` on `clock`; rejects with `signal.reason` if `signal` aborts first
 * (at once if it already has).
 */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal!.reason);
    };
    const cancel = clock.setTimer(delayMs, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface ManualTimer {
  readonly atMs: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * A clock that moves only when told to. `advance()` fires due timers in time order (ties in the
 * order they were set), setting `now()` to each timer's instant before calling it and letting the
 * promise continuations it triggers run before the next one.
 */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  constructor(startMs = 0) {
    checkNumber('startMs', startMs);
    this.#nowMs = startMs;
  }

  /** The manual time, in ms: where `advance()` and `set()` left it. */
  now(): number {
    return this.#nowMs;
  }

  /** Timers not yet fired. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Jumps to `ms` (backwards too) without firing anything; `advance(0)` then fires what is due. */
  set(ms: number): void {
    checkNumber('ms', ms);
    this.#nowMs = ms;
  }

  /** Calls `callback` once the manual time reaches now + `delayMs` (in `advance()` or `set()`, never synchronously here). Returns a function that cancels it. */
  setTimer(delayMs: number, callback: () => void): () => void {
    const timer: ManualTimer = { atMs: this.#nowMs + Math.max(0, delayMs), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      const index = this.#timers.indexOf(timer);
      if (index !== -1) this.#timers.splice(index, 1);
    };
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    checkNumber('ms', ms, { min: 0, finite: false });
    const targetMs = this.#nowMs + ms;
    await settle();
    for (;;) {
      const next = this.#earliestDue(targetMs);
      if (next === undefined) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      if (next.atMs > this.#nowMs) this.#nowMs = next.atMs;
      next.callback();
      await settle();
    }
    this.#nowMs = Math.max(this.#nowMs, targetMs);
    await settle();
  }

  #earliestDue(limitMs: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const timer of this.#timers) {
      if (timer.atMs > limitMs) continue;
      if (best === undefined || timer.atMs < best.atMs || (timer.atMs === best.atMs && timer.seq < best.seq)) {
        best = timer;
      }
    }
    return best;
  }
}

/** Lets every queued promise continuation run (a macrotask turn drains the microtask queue). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
