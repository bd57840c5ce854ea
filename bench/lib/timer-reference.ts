import { quantile } from './stats.ts';

export interface TimerReference {
  readonly waits: number;
  readonly delayMs: number;
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
  readonly latenessMaxMs: number;
}

/**
 * What bare Node timers deliver on this machine right now: `waits` sequential `setTimeout(delayMs)`,
 * each measured from the call to the callback with `performance.now()`. No limiter can wake more
 * precisely than this on timers alone, so it frames the lateness figures.
 */
export async function measureTimerReference(waits: number, delayMs: number): Promise<TimerReference> {
  const lateness: number[] = [];
  for (let i = 0; i < waits; i++) {
    const calledMs = performance.now();
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    lateness.push(performance.now() - calledMs - delayMs);
  }
  return {
    waits,
    delayMs,
    latenessP50Ms: quantile(lateness, 0.5),
    latenessP99Ms: quantile(lateness, 0.99),
    latenessMaxMs: quantile(lateness, 1),
  };
}
