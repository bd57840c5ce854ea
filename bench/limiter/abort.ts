import { ManualClock } from '../../src/clock.ts';
import { TokenBucket } from '../../src/limiter/token-bucket.ts';
import { NaiveGoBucket } from '../baselines/naive-go-bucket.ts';
import { delay } from '../lib/delay.ts';
import { createSubject, type ImplementationId } from './subjects.ts';

/** Refund differences below this are float residue, not tokens (the bucket's own tolerance). */
const EXACT_TOKENS = 1e-9;
/** Grant instants on the manual clock within this of the slot are float residue of `due − now` arithmetic. */
const EXACT_MS = 1e-6;

export interface AbortOptions {
  readonly rate: number;
  /** When the first of the two waiters aborts, in ms after both queued. */
  readonly abortAfterMs: number;
}

export interface MoveUpFigures {
  /** The second waiter's grant, in ms after it called (real clock). */
  readonly grantedAfterMs: number;
  /** The aborted waiter's slot, where the second should land: 1/rate. */
  readonly freedSlotMs: number;
  /** The second waiter's own slot, had nobody aborted: 2/rate. */
  readonly ownSlotMs: number;
  readonly movedUp: boolean;
}

export interface RefundFigures {
  /** `tokens()` just after the abort (manual clock). */
  readonly tokensAfterAbort: number;
  /** The same reading on a twin bucket where the aborted waiter never called. */
  readonly tokensExpected: number;
  readonly exact: boolean;
  /** The second waiter's grant on the manual clock, in ms after it called. */
  readonly grantedAtMs: number;
  /** Granted at the freed slot, 1/rate, to within float residue. */
  readonly grantedAtFreedSlot: boolean;
}

/**
 * Real clock: spend the burst of 1, queue A (with a signal) then B, abort A. B's own slot is 2/rate
 * away; if it moves up it is granted at A's slot, 1/rate.
 */
export async function runMoveUp(id: ImplementationId, options: AbortOptions): Promise<MoveUpFigures | undefined> {
  const subject = createSubject(id, options.rate, 1);
  if (!subject.supportsAbort) return undefined;
  await subject.acquire();
  const controller = new AbortController();
  const calledMs = performance.now();
  subject.acquire(controller.signal).catch(() => {});
  const granted = subject.acquire().then(() => performance.now() - calledMs);
  await delay(options.abortAfterMs);
  controller.abort();
  const grantedAfterMs = await granted;
  const freedSlotMs = 1000 / options.rate;
  const ownSlotMs = 2000 / options.rate;
  return { grantedAfterMs, freedSlotMs, ownSlotMs, movedUp: grantedAfterMs < (freedSlotMs + ownSlotMs) / 2 };
}

/** The bucket-side view, reduced to what the manual-clock check needs from each implementation. */
interface ManualSubject {
  acquire(signal?: AbortSignal): Promise<void>;
  tokens(): number;
}

function manualSubject(id: ImplementationId, rate: number, clock: ManualClock): ManualSubject | undefined {
  switch (id) {
    case 'ours': {
      const bucket = new TokenBucket({ rate, burst: 1, clock });
      return {
        acquire: (signal) => (signal === undefined ? bucket.acquire() : bucket.acquire(1, { signal })),
        tokens: () => bucket.tokens(),
      };
    }
    case 'naive': {
      const bucket = new NaiveGoBucket(rate, 1, clock);
      return { acquire: (signal) => bucket.acquire(signal), tokens: () => bucket.available() };
    }
    case 'limiter':
      return undefined;
  }
}

/**
 * Manual clock, so the refund can be checked to the last bit: the same steps as {@link runMoveUp}
 * next to a twin bucket where A never called; right after the abort both must hold the same tokens.
 */
export async function runRefund(id: ImplementationId, options: AbortOptions): Promise<RefundFigures | undefined> {
  const clock = new ManualClock(0);
  const bucket = manualSubject(id, options.rate, clock);
  const twin = manualSubject(id, options.rate, clock);
  if (bucket === undefined || twin === undefined) return undefined;
  await bucket.acquire();
  await twin.acquire();
  const controller = new AbortController();
  bucket.acquire(controller.signal).catch(() => {});
  let grantedAtMs = Number.NaN;
  void bucket.acquire().then(() => {
    grantedAtMs = clock.now();
  });
  void twin.acquire();
  await clock.advance(options.abortAfterMs);
  controller.abort();
  const tokensAfterAbort = bucket.tokens();
  const tokensExpected = twin.tokens();
  await clock.advance(3000 / options.rate);
  return {
    tokensAfterAbort,
    tokensExpected,
    exact: Math.abs(tokensAfterAbort - tokensExpected) <= EXACT_TOKENS,
    grantedAtMs,
    grantedAtFreedSlot: Math.abs(grantedAtMs - 1000 / options.rate) <= EXACT_MS,
  };
}
