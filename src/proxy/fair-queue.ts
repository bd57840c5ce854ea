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
  /** The waiters as a binary min-heap on (finish tag, arrival): the next one out in O(log n), not a scan. One that gave up stays until it comes up, skipped then. */
  readonly #waiting: Waiter<unknown>[] = [];
  /** Waiters that have not given up. */
  #live = 0;
  #serving = false;

  /** Requests waiting their turn (not the one being served). */
  get size(): number {
    return this.#live;
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
    if (!this.#serving && this.#live === 0) {
      // Nobody ahead: served at once, without waiting for a turn of the pump.
      this.#serving = true;
      this.#virtualTime = Math.max(this.#virtualTime, startTag);
      const served = serve();
      const next = () => {
        this.#serving = false;
        if (this.#live > 0) void this.#pump();
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
          if (!waiter.done) {
            waiter.done = true;
            this.#live--;
            reject(signal.reason);
          }
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#push(waiter as Waiter<unknown>);
      this.#live++;
      if (!this.#serving) void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    this.#serving = true;
    try {
      for (let waiter = this.#pop(); waiter !== undefined; waiter = this.#pop()) {
        // One that gave up while it waited is passed over.
        if (waiter.done) continue;
        this.#live--;
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
    // Only waiters that gave up can be left: let go of them too.
    this.#waiting.length = 0;
    this.#lastFinish.clear();
    this.#virtualTime = 0;
  }

  #push(waiter: Waiter<unknown>): void {
    const heap = this.#waiting;
    let at = heap.push(waiter) - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!before(heap[at]!, heap[parent]!)) break;
      [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
      at = parent;
    }
  }

  /** Takes out the waiter with the lowest finish tag (the earliest arrival among equals). */
  #pop(): Waiter<unknown> | undefined {
    const heap = this.#waiting;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    heap[0] = last;
    for (let at = 0; ; ) {
      const left = 2 * at + 1;
      const right = left + 1;
      let least = at;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === at) break;
      [heap[at], heap[least]] = [heap[least]!, heap[at]!];
      at = least;
    }
    return top;
  }
}

/** Whether `a` goes before `b`: the lower finish tag, then the earlier arrival. */
function before(a: Waiter<unknown>, b: Waiter<unknown>): boolean {
  return a.finishTag < b.finishTag || (a.finishTag === b.finishTag && a.seq < b.seq);
}
