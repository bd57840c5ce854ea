import { analyseSchedule, type ScheduleFigures } from '../lib/schedule.ts';
import { createSubject, type ImplementationId } from './subjects.ts';

export interface RateAccuracyOptions {
  readonly rate: number;
  readonly burst: number;
  readonly grants: number;
  readonly callers: number;
}

/**
 * `grants` tokens through one bucket on the real clock, taken by `callers` concurrent loops. The
 * first grant is taken alone so that t0 (the instant its caller resumes) sits within a microtask of
 * the bucket's own anchor; with 50 callers starting in the same tick it would otherwise be recorded
 * after all of them had queued, and on-time grants would look early.
 */
export async function runRateAccuracy(id: ImplementationId, options: RateAccuracyOptions): Promise<ScheduleFigures> {
  const subject = createSubject(id, options.rate, options.burst);
  const grantTimesMs: number[] = [];
  await subject.acquire();
  grantTimesMs.push(performance.now());
  let issued = 1;
  const caller = async (): Promise<void> => {
    while (issued < options.grants) {
      issued++;
      await subject.acquire();
      grantTimesMs.push(performance.now());
    }
  };
  await Promise.all(Array.from({ length: options.callers }, caller));
  return analyseSchedule(grantTimesMs, options.rate, options.burst);
}
