import { setMaxListeners } from 'node:events';
import type { Clock } from '../clock.ts';

interface Slot {
  readonly controller: AbortController;
  cancelTimer: () => void;
}

/**
 * Abort signals that fire at a deadline, shared by every holder whose deadline falls in the same
 * `granularityMs` slot (rounded up: a signal never fires early, at most `granularityMs` late).
 *
 * A run starts thousands of articles per second, each with its own deadline; one AbortController
 * and one timer per article cost more than the rest of the pipeline. Articles started within the
 * same few milliseconds share one instead. The parent signal (Ctrl-C) aborts every slot with its
 * own reason, through a single listener.
 */
export class DeadlineSignals {
  readonly #clock: Clock;
  readonly #granularityMs: number;
  readonly #reason: () => unknown;
  readonly #parent: AbortSignal | undefined;
  readonly #slots = new Map<number, Slot>();
  readonly #onParentAbort = () => this.#abortAll(this.#parent!.reason);

  /**
   * @param reason makes the abort reason when a deadline passes (e.g. a TimeoutError)
   * @param parent when it aborts, every current and future signal aborts with its reason
   */
  constructor(clock: Clock, granularityMs: number, reason: () => unknown, parent?: AbortSignal) {
    if (!(granularityMs > 0)) throw new TypeError(`Expected granularityMs to be > 0, got ${String(granularityMs)}`);
    this.#clock = clock;
    this.#granularityMs = granularityMs;
    this.#reason = reason;
    this.#parent = parent;
    parent?.addEventListener('abort', this.#onParentAbort, { once: true });
  }

  /** Stops listening to the parent signal and cancels every pending timer. */
  dispose(): void {
    this.#parent?.removeEventListener('abort', this.#onParentAbort);
    for (const slot of this.#slots.values()) slot.cancelTimer();
    this.#slots.clear();
  }

  /**
   * A signal that aborts no earlier than `deadlineMs`. A slot lives until its deadline even when
   * its holders finish early — aborting a signal nobody listens to any more is harmless, and
   * recreating it for the next article would cost what sharing saves. At most
   * `timeout / granularityMs` slots exist at once; `dispose()` cancels them.
   */
  signalFor(deadlineMs: number): AbortSignal {
    const key = Math.ceil(deadlineMs / this.#granularityMs);
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      const controller = new AbortController();
      // Every call in flight for the slot's articles listens to it: many more than Node's
      // default of 10 is the point, not a leak.
      setMaxListeners(0, controller.signal);
      const created: Slot = { controller, cancelTimer: noop };
      if (this.#parent?.aborted) controller.abort(this.#parent.reason);
      else {
        created.cancelTimer = this.#clock.setTimer(key * this.#granularityMs - this.#clock.now(), () => {
          this.#slots.delete(key);
          controller.abort(this.#reason());
        });
      }
      this.#slots.set(key, created);
      slot = created;
    }
    return slot.controller.signal;
  }

  #abortAll(reason: unknown): void {
    for (const slot of this.#slots.values()) {
      slot.cancelTimer();
      slot.controller.abort(reason);
    }
  }
}

const noop = () => {};
