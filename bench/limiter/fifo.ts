import { delay } from '../lib/delay.ts';
import { fifoInversions } from '../lib/schedule.ts';
import { createSubject, type ImplementationId } from './subjects.ts';

export interface FifoOptions {
  readonly rate: number;
  readonly burst: number;
  readonly callers: number;
  /** Pause between one caller's `acquire()` and the next one's. */
  readonly staggerMs: number;
}

export interface FifoFigures {
  /** Caller indexes (call order) in the order their tokens were granted. */
  readonly grantOrder: number[];
  readonly inversions: number;
}

/** Callers arrive one after another while the bucket is empty; does the grant order follow the call order? */
export async function runFifo(id: ImplementationId, options: FifoOptions): Promise<FifoFigures> {
  const subject = createSubject(id, options.rate, options.burst);
  const grantOrder: number[] = [];
  const waits: Promise<unknown>[] = [];
  for (let caller = 0; caller < options.callers; caller++) {
    if (caller > 0) await delay(options.staggerMs);
    waits.push(subject.acquire().then(() => grantOrder.push(caller)));
  }
  await Promise.all(waits);
  return { grantOrder, inversions: fifoInversions(grantOrder) };
}
