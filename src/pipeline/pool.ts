import pLimit from 'p-limit';

export interface PoolOptions {
  /** Items processed at once; also the most ever pulled from the source ahead of completion. */
  readonly concurrency: number;
  /** Once aborted, no further item is pulled; those in flight are left to finish (they see the signal themselves). */
  readonly signal?: AbortSignal;
}

/**
 * Runs `worker` over `source` with at most `concurrency` at once, pulling the next item only when
 * a slot is free — so a million-item source costs the memory of `concurrency` items. `workerId`
 * (0-based) names the slot an item runs in.
 *
 * Resolves when the source is exhausted (or the signal aborted) and every started item finished.
 * If the source throws, intake stops, the items in flight finish, and the pool rejects with that
 * error. A worker must not reject; if one does, the pool stops intake and rejects likewise.
 */
export async function runPool<T>(
  source: Iterable<T> | AsyncIterable<T>,
  worker: (item: T, workerId: number) => Promise<void>,
  options: PoolOptions,
): Promise<void> {
  const { concurrency, signal } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new TypeError(`Expected concurrency to be an integer >= 1, got ${String(concurrency)}`);
  }
  const limit = pLimit(concurrency);
  const freeIds = Array.from({ length: concurrency }, (_, i) => concurrency - 1 - i);
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  let slotFreed: (() => void) | undefined;

  const onAbort = () => slotFreed?.();
  signal?.addEventListener('abort', onAbort, { once: true });
  const iterator = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  const stopped = () => signal?.aborted === true || failure !== undefined;
  let exhausted = false;
  try {
    while (!stopped()) {
      while (running.size >= concurrency && !stopped()) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
        slotFreed = undefined;
      }
      // Checked again after the wait: an item pulled after an abort would be lost.
      if (stopped()) break;
      const next = await iterator.next();
      if (next.done === true) {
        exhausted = true;
        break;
      }
      const item = next.value;
      const workerId = freeIds.pop()!;
      const task = limit(() => worker(item, workerId)).then(
        () => {},
        (error: unknown) => {
          failure ??= { error };
        },
      );
      const tracked = task.finally(() => {
        running.delete(tracked);
        freeIds.push(workerId);
        slotFreed?.();
      });
      running.add(tracked);
    }
  } catch (error) {
    exhausted = true;
    failure ??= { error };
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await Promise.all(running);
    if (!exhausted) await iterator.return?.();
  }
  if (failure !== undefined) throw failure.error;
}
