/**
 * Weighted fair queuing of the requests waiting for one upstream: each key (a flow) is served in
 * proportion to its weight while several wait, whatever each one sends. Start-time fair queuing:
 * a request is tagged on arrival with its flow's virtual finish — the later of the queue's virtual
 * time and the flow's last finish, plus its cost over the flow's weight — and the lowest tag goes
 * next. A flood from one key queues behind its own earlier requests, not ahead of another key's.
 *
 * One request at a time is handed to `serve` (the upstream's limits acquire, in order): so the
 * upstream's grants come in the queue's order. The queue knows nothing of HTTP or LLMs.
 */

interface Waiter<T> {
  readonly flow: string;
  readonly startTag: number;
  readonly finishTag: number;
  readonly seq: number;
  readonly serve: () => Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  done: boolean;
}

export class FairQueue {
  #virtualTime = 0;
  #seq = 0;
  readonly #lastFinish = new Map<string, number>();
  readonly #waiting: Waiter<unknown>[] = [];
  #serving = false;

  /** Requests waiting their turn (not the one being served). */
  get size(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `serve` when the request's turn comes (flow `flow` of weight `weight`, costing `cost`),
   * resolving with what it gives. Rejects with `signal.reason`, without serving, when the signal
   * aborts while it waits.
   */
  take<T>(flow: string, weight: number, cost: number, serve: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    const startTag = Math.max(this.#virtualTime, this.#lastFinish.get(flow) ?? 0);
    const finishTag = startTag + cost / weight;
    this.#lastFinish.set(flow, finishTag);
    if (!this.#serving && this.#waiting.length === 0) {
      // Nobody ahead: served at once, without waiting for a turn of the pump.
      this.#serving = true;
      this.#virtualTime = Math.max(this.#virtualTime, startTag);
      const served = serve();
      const next = () => {
        this.#serving = false;
        if (this.#waiting.length > 0) void this.#pump();
        else this.#forget();
      };
      served.then(next, next);
      return served;
    }
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        flow,
        startTag,
        finishTag,
        seq: this.#seq++,
        serve,
        resolve,
        reject,
        signal,
        onAbort: undefined,
        done: false,
      };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          const index = this.#waiting.indexOf(waiter as Waiter<unknown>);
          if (index >= 0) this.#waiting.splice(index, 1);
          if (!waiter.done) {
            waiter.done = true;
            reject(signal.reason);
          }
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#waiting.push(waiter as Waiter<unknown>);
      if (!this.#serving) void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    this.#serving = true;
    try {
      while (this.#waiting.length > 0) {
        const waiter = this.#next();
        this.#virtualTime = Math.max(this.#virtualTime, waiter.startTag);
        if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
        try {
          const value = await waiter.serve();
          if (!waiter.done) waiter.resolve(value);
        } catch (error) {
          if (!waiter.done) waiter.reject(error);
        }
        waiter.done = true;
      }
      this.#forget();
    } finally {
      this.#serving = false;
    }
  }

  /** Nobody waits: the flows' history no longer matters (and the map stays bounded). */
  #forget(): void {
    this.#lastFinish.clear();
    this.#virtualTime = 0;
  }

  /** Takes out the waiter with the lowest finish tag (the earliest arrival among equals). */
  #next(): Waiter<unknown> {
    let best = 0;
    for (let index = 1; index < this.#waiting.length; index++) {
      const a = this.#waiting[index]!;
      const b = this.#waiting[best]!;
      if (a.finishTag < b.finishTag || (a.finishTag === b.finishTag && a.seq < b.seq)) best = index;
    }
    return this.#waiting.splice(best, 1)[0]!;
  }
}
