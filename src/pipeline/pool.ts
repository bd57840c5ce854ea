import { checkInteger } from '../validation/checks.ts';

const YIELD_EVERY_ITEMS = 256;

export interface PoolOptions {
  /** Items processed at once; also the most ever pulled from the source ahead of completion. */
  readonly concurrency: number;
  /** Once aborted, no further item is pulled; those in flight are left to finish (they see the signal themselves). */
  readonly signal?: AbortSignal | undefined;
  /**
   * Asked before every pull: resolves when a new item may start (backpressure — the pipeline
   * waits until the limits could serve a new article before its deadline). It should settle when
   * `signal` aborts; a rejection stops the pool like a failing source.
   */
  readonly admit?: (() => Promise<void> | undefined) | undefined;
}

/**
 * Runs `worker` over `source` with at most `concurrency` at once, pulling the next item only when
 * a slot is free (and `admit` allows) — so a million-item source costs the memory of
 * `concurrency` items. `workerId` (0-based) names the slot an item runs in; `index` (0-based) is
 * the order items were pulled in.
 *
 * Each slot is a loop: pull an item, run it, pull the next. The slots share one iterator, which
 * keeps intake lazy without per-item bookkeeping; nothing is queued, so no queueing library is
 * needed (a slot costs one promise chain, not a task object per item).
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
  const { concurrency, signal, admit } = options;
  checkInteger('concurrency', concurrency, 1);
  const iterator = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  let exhausted = false;
  let pulled = 0;
  let done = 0;
  const stopped = () => exhausted || failure !== undefined || signal?.aborted === true;

  const slot = async (workerId: number): Promise<void> => {
    // Checked before every pull: an item pulled after an abort would never run, and be lost.
    while (!stopped()) {
      let next: IteratorResult<T>;
      try {
        const admitted = admit?.();
        if (admitted !== undefined) {
          await admitted;
          if (stopped()) return;
        }
        next = await iterator.next();
      } catch (error) {
        exhausted = true;
        failure ??= { error };
        return;
      }
      if (next.done === true) {
        exhausted = true;
        return;
      }
      try {
        await worker(next.value, workerId, pulled++);
      } catch (error) {
        failure ??= { error };
      }
      // Items that finish without ever waiting on I/O or a timer (a provider answering at once)
      // would chain promises forever and starve the event loop: no signal handler (Ctrl-C), no
      // stream error (a closed stdout) could run. A turn of the loop now and then lets them in.
      if (++done % YIELD_EVERY_ITEMS === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  };

  await Promise.all(Array.from({ length: concurrency }, (_, workerId) => slot(workerId)));
  if (!exhausted) await iterator.return?.();
  if (failure !== undefined) throw failure.error;
}
