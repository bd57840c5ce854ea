import type { Clock } from '../clock.ts';
import type { Route } from '../route/route.ts';

/** A wait this short is none: the difference is float arithmetic, not time. */
const EPSILON_MS = 1e-6;

/**
 * Backpressure from the limits to the source: a new article is admitted only when the limits
 * could grant all of its calls before its deadline, counting every call already waiting and every
 * call the articles under way will still make. An article that cannot finish does not start, so
 * it spends no token that would be thrown away — and more workers never mean less done.
 *
 * Nor does an article start while a provider it needs has its circuit open: it waits for the
 * circuit's half-open instant, its budget untouched.
 *
 * The wait is computed, not polled: one timer, for the first article waiting, at the instant the
 * limits' backlog will have shrunk enough. Articles are admitted in the order they asked.
 */
export class Admission {
  readonly #clock: Clock;
  readonly #budgetMs: () => number;
  /** Each route, with the calls one article makes through it. */
  readonly #callsPerArticle: ReadonlyMap<Route, number>;
  /** Calls that admitted articles will still make through each route (not yet waiting at its limits). */
  readonly #promised = new Map<Route, number>();
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  #cancelTimer: (() => void) | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.#releaseAll();
  /** Stops listening to each route's circuit: a probe that settles may let the next article in. */
  readonly #unwatch: (() => void)[];

  /**
   * @param routes the route of each task an article goes through, in order
   * @param budgetMs how long an article may wait for the limits in all (its timeout less the time
   *   its calls will take), asked afresh at each decision
   */
  constructor(routes: readonly Route[], clock: Clock, budgetMs: () => number, signal: AbortSignal | undefined) {
    const callsPerArticle = new Map<Route, number>();
    for (const route of routes) callsPerArticle.set(route, (callsPerArticle.get(route) ?? 0) + 1);
    this.#callsPerArticle = callsPerArticle;
    for (const route of callsPerArticle.keys()) this.#promised.set(route, 0);
    this.#clock = clock;
    this.#budgetMs = budgetMs;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    this.#unwatch = [...callsPerArticle.keys()].map((route) =>
      route.onCircuitChange(() => {
        // Not now: reading the circuit's state while scheduling is what turns it half-open.
        queueMicrotask(() => {
          if (this.#waiting.length > 0) this.#schedule();
        });
      }),
    );
  }

  /** Stops listening to the signal and drops the timer. */
  dispose(): void {
    this.#signal?.removeEventListener('abort', this.#onAbort);
    for (const unwatch of this.#unwatch) unwatch();
    this.#releaseAll();
  }

  /**
   * Resolves when a new article may start; `undefined` when it may start now (no promise to wait
   * for). Articles asking while others wait line up behind them. When the signal aborts, every
   * wait resolves at once without admitting: the caller sees the signal and starts nothing.
   */
  admit(): Promise<void> | undefined {
    if (this.#signal?.aborted) return undefined;
    if (this.#waiting.length === 0 && this.#fits()) {
      this.#start();
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      if (this.#waiting.length === 1) this.#schedule();
    });
  }

  /** The article is about to call `route`: that call leaves the promised and joins the limits' own count. */
  calling(route: Route): void {
    this.#promised.set(route, this.#promised.get(route)! - 1);
  }

  /** The article ended; `uncalled` are the routes of the tasks it never got to. */
  finished(uncalled: readonly Route[]): void {
    for (const route of uncalled) this.#promised.set(route, this.#promised.get(route)! - 1);
    this.#running--;
    // Promised calls given back can let the next article in before the timer would.
    if (this.#waiting.length > 0) this.#schedule();
  }

  #start(): void {
    this.#running++;
    for (const [route, calls] of this.#callsPerArticle) this.#promised.set(route, this.#promised.get(route)! + calls);
  }

  /** Ms until a new article's calls would all fit in its budget (0: they fit now). */
  #waitMs(): number {
    // An article alone must be let in even if it cannot finish: the run would stop otherwise, and
    // its failure says why. Not while a circuit is open, though: an article started now would only
    // spend its budget waiting for it — or, were its budget shorter, fail at once without a probe;
    // the timer set for its half-open instant lets one in to probe, so the run never stalls.
    const alone = this.#running === 0;
    const budgetMs = alone ? 0 : this.#budgetMs();
    let waitMs = 0;
    for (const [route, calls] of this.#callsPerArticle) {
      waitMs = Math.max(waitMs, route.circuitWaitMs());
      if (alone) continue;
      // Each call counted at what the route's calls take (their tokens too, once it has seen some).
      const backlogMs = route.backlogMs(this.#promised.get(route)! + calls, route.typicalCost());
      // Float residue at the instant the timer was set for must not re-arm it for a picosecond, forever.
      if (backlogMs > budgetMs + EPSILON_MS) waitMs = Math.max(waitMs, backlogMs - budgetMs);
    }
    // Half-open, the articles under way make the probe; with none, one is let in to make it.
    return alone && waitMs === Infinity ? 0 : waitMs;
  }

  #fits(): boolean {
    return this.#waitMs() === 0;
  }

  /** Lets in every waiting article that fits now, then sets the timer for the next one. */
  #schedule(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.#waiting.length > 0) {
      const waitMs = this.#waitMs();
      // Infinity: the circuit is half-open, and its next change schedules again.
      if (waitMs === Infinity) return;
      if (waitMs > 0) {
        this.#cancelTimer = this.#clock.setTimer(waitMs, () => {
          this.#cancelTimer = undefined;
          this.#schedule();
        });
        return;
      }
      this.#start();
      this.#waiting.shift()!();
    }
  }

  #releaseAll(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
