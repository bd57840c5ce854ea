import type { Command } from 'ioredis';

/**
 * The deadlines of a connection's calls in flight, on one timer: each is its send plus the same
 * timeout, so they come in the order sent and the oldest unanswered call is the next to fail.
 * Replies come in the order sent too, so the queue holds about the calls in flight, not every call
 * of the timeout.
 */
export class CallWatchdog {
  /** Calls sent on a ready connection, oldest first, and when each must have been answered (`performance.now()` ms). */
  readonly #inFlight: Command[] = [];
  readonly #deadlinesMs: number[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The error a call past its deadline fails with. */
  readonly #timeoutError: () => Error;

  constructor(timeoutError: () => Error) {
    this.#timeoutError = timeoutError;
  }

  /** Puts a sent call under the watchdog; the answered calls at the head go first. */
  track(command: Command, deadlineMs: number): void {
    const queue = this.#inFlight;
    let head = this.#head;
    while (head < queue.length && queue[head]!.isSettled) head++;
    if (head === queue.length) this.#drop(queue.length);
    else if (head >= 64 && head * 2 >= queue.length) this.#drop(head);
    else this.#head = head;
    queue.push(command);
    this.#deadlinesMs.push(deadlineMs);
    if (this.#timer === undefined) this.#arm(deadlineMs);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Forgets the first `count` calls. */
  #drop(count: number): void {
    this.#inFlight.splice(0, count);
    this.#deadlinesMs.splice(0, count);
    this.#head = 0;
  }

  #arm(atMs: number): void {
    this.#timer = setTimeout(this.#watch, Math.max(0, atMs - performance.now()));
    this.#timer.unref();
  }

  /** Fails the calls past their deadline, forgets the answered ones, and waits for the next deadline. */
  readonly #watch = (): void => {
    this.#timer = undefined;
    const nowMs = performance.now();
    const queue = this.#inFlight;
    let head = this.#head;
    for (; head < queue.length; head++) {
      if (queue[head]!.isSettled) continue;
      if (this.#deadlinesMs[head]! > nowMs) break;
      queue[head]!.reject(this.#timeoutError());
    }
    if (head === queue.length) this.#drop(queue.length);
    else if (head > 1024 && head * 2 > queue.length) this.#drop(head);
    else this.#head = head;
    if (this.#head < queue.length) this.#arm(this.#deadlinesMs[this.#head]!);
  };
}
