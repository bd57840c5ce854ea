import { checkInteger } from '../validation/checks.ts';

const YIELD_EVERY_ITEMS = 256;

export interface PoolOptions {
  /** Items processed at once, at most; also the most ever pulled from the source ahead of completion. */
  readonly concurrency: number;
  /** Once aborted, no further item is pulled; those in flight are left to finish (they see the signal themselves). @default none */
  readonly signal?: AbortSignal | undefined;
  /**
   * Asked before every pull: resolves when a new item may start (backpressure — the pipeline
   * waits until the limits could serve a new article before its deadline). It should settle when
   * `signal` aborts; a rejection stops the pool like a failing source.
   * @default none (an item starts as soon as a slot is free)
   */
  readonly admit?: (() => Promise<void> | undefined) | undefined;
  /**
   * Told when pulling from the source fails; the pool then ends as if the source were done (the
   * items in flight finish) instead of rejecting.
   * @default none (the pool rejects with the error)
   */
  readonly onSourceError?: ((error: unknown) => void) | undefined;
}

/**
 * Runs `worker` over `source` with at most `concurrency` at once, pulling the next item only when
 * a slot is free (and `admit` allows) — so a million-item source costs the memory of the items in
 * flight. `workerId` (0-based) names the slot an item runs in (a freed slot is reused first);
 * `index` (0-based) is the order items were pulled in.
 *
 * One loop pulls and starts items; a slot is only a number until an item runs in it, so a pool of
 * 100,000 workers costs nothing until 100,000 items are really in flight. The loop waits a turn
 * before each pull, which lets items that finish within a few turns (a provider answering at
 * once) make room before more are started: in flight is what the work needs, not what the
 * concurrency allows.
 *
 * Resolves when the source is exhausted (or the signal aborted) and every started item finished.
 * If the source throws, intake stops, the items in flight finish, and the pool rejects with that
 * error. A worker must not reject; if one does, the pool stops intake and rejects likewise.
 */
export async function runPool<T>(
  source: Iterable<T> | AsyncIterable<T>,
  worker: (item: T, workerId: number, index: number) => Promise<void>,
  options: PoolOptions,
): Promise<void> {
  const { concurrency, signal, admit, onSourceError } = options;
  checkInteger('concurrency', concurrency, 1);
  const iterator = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  const freeSlots: number[] = [];
  let nextSlot = 0;
  let active = 0;
  let failure: { error: unknown } | undefined;
  let exhausted = false;
  let pulled = 0;
  /** Wakes the loop when an item finishes (a slot is free, or the last one is done). */
  let wake: (() => void) | undefined;
  const stopped = () => exhausted || failure !== undefined || signal?.aborted === true;

  const run = async (item: T, workerId: number, index: number): Promise<void> => {
    try {
      await worker(item, workerId, index);
    } catch (error) {
      failure ??= { error };
    }
    active--;
    freeSlots.push(workerId);
    wake?.();
  };
  const slotFreed = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
    });

  // Checked before every pull: an item pulled after an abort would never run, and be lost.
  while (!stopped()) {
    if (active >= concurrency) {
      await slotFreed();
      continue;
    }
    let next: IteratorResult<T>;
    try {
      const admitted = admit?.();
      if (admitted !== undefined) {
        await admitted;
        if (stopped()) break;
      }
      next = await iterator.next();
    } catch (error) {
      if (onSourceError === undefined) failure ??= { error };
      else {
        exhausted = true;
        onSourceError(error);
      }
      break;
    }
    if (next.done === true) {
      exhausted = true;
      break;
    }
    active++;
    void run(next.value, freeSlots.pop() ?? nextSlot++, pulled++);
    // Items that finish without ever waiting on I/O or a timer would chain promises forever and
    // starve the event loop: no signal handler (Ctrl-C), no stream error (a closed stdout) could
    // run. A turn of the loop now and then lets them in.
    if (pulled % YIELD_EVERY_ITEMS === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  while (active > 0) await slotFreed();
  if (!exhausted) await iterator.return?.();
  if (failure !== undefined) throw failure.error;
}
