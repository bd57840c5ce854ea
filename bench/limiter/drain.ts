import { delay } from '../lib/delay.ts';
import { retainedHeapBytes } from '../lib/heap.ts';
import { createSubject, type ImplementationId } from './subjects.ts';

export interface DrainOptions {
  readonly waiters: number;
  readonly rate: number;
  readonly burst: number;
  /** Give up on a run after this long and project the drain time from the progress so far. */
  readonly capMs: number;
}

export interface DrainFigures {
  /** Last grant minus the first `acquire()` call, in ms (the time at the cap when capped). */
  readonly drainMs: number;
  /** `(waiters − burst) / rate`: no schedule can grant the last token earlier. */
  readonly floorMs: number;
  /** `drainMs / floorMs`, or, when capped, the projection `elapsed × (waiters − burst) / (granted − burst) / floor`. */
  readonly drainOverFloor: number;
  readonly capped: boolean;
  readonly grantedBeforeCap: number;
}

/**
 * Heap bytes per queued waiter: `waiters` calls to `acquire()` on a bucket that has one token,
 * their promises held as a caller holds them, measured before any of them can be served (all of
 * it runs in one synchronous turn, so no timer fires in between). Then everyone is let through.
 */
export async function measureBytesPerWaiter(id: ImplementationId, options: DrainOptions): Promise<number> {
  // A discarded small pass first: the collections it triggers age out and flush the bytecode of
  // code that ran earlier in the process, which would otherwise shrink the heap mid-measurement.
  await fillAndRelease(id, { ...options, waiters: 1000 });
  return fillAndRelease(id, options);
}

async function fillAndRelease(id: ImplementationId, options: DrainOptions): Promise<number> {
  const subject = createSubject(id, options.rate, options.burst);
  const held: unknown[] = Array.from({ length: options.waiters }, () => null);
  const bytes = retainedHeapBytes(() => {
    for (let i = 0; i < options.waiters; i++) held[i] = subject.acquire();
  });
  subject.release();
  await Promise.all(held);
  return bytes / options.waiters;
}

/** `waiters` callers queue at once on the real clock; how long until the last is granted? */
export async function runDrain(id: ImplementationId, options: DrainOptions): Promise<DrainFigures> {
  const subject = createSubject(id, options.rate, options.burst);
  const floorMs = ((options.waiters - options.burst) / options.rate) * 1000;
  let granted = 0;
  let lastGrantMs = Number.NaN;
  const onGrant = () => {
    granted++;
    lastGrantMs = performance.now();
  };
  const startMs = performance.now();
  const waits: Promise<void>[] = [];
  for (let i = 0; i < options.waiters; i++) waits.push(subject.acquire().then(onGrant));
  const all = Promise.all(waits);

  let capTimer: NodeJS.Timeout | undefined;
  const cap = new Promise<'capped'>((resolve) => {
    capTimer = setTimeout(() => resolve('capped'), options.capMs);
  });
  const outcome = await Promise.race([all.then(() => 'drained' as const), cap]);
  clearTimeout(capTimer);
  if (outcome === 'drained') {
    const drainMs = lastGrantMs - startMs;
    return { drainMs, floorMs, drainOverFloor: drainMs / floorMs, capped: false, grantedBeforeCap: granted };
  }
  const elapsedMs = performance.now() - startMs;
  const grantedBeforeCap = granted;
  subject.release();
  await all;
  // Let the released timers (one per naive waiter) finish before the next run starts.
  await delay(5);
  const projectedMs =
    grantedBeforeCap > options.burst ? (elapsedMs * (options.waiters - options.burst)) / (grantedBeforeCap - options.burst) : Infinity;
  return { drainMs: elapsedMs, floorMs, drainOverFloor: projectedMs / floorMs, capped: true, grantedBeforeCap };
}
