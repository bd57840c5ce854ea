/**
 * The windows the OpenAI-compatible hosts state their limits over, and how `serve` restates its
 * per-minute quota over them: the whole window's worth at the minute's rate. What remains it states
 * as it does in every style — what may be sent now before a refusal — for that is all its quota
 * would take: a client synced to it never overruns it.
 */

export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;
/** A month as a limit counts it: 30 days (the hosts reset on the calendar; a nominal month is what a rate is read against). */
export const MONTH_MS = 30 * DAY_MS;

/** A per-minute `limit` restated over a window of `windowMs`: a whole count. */
export function overWindow(limit: number, windowMs: number): number {
  return Math.floor((limit * windowMs) / MINUTE_MS);
}
