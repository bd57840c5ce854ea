/**
 * The windows the OpenAI-compatible hosts state their limits over, and how `serve` restates its
 * per-minute quota over them: the whole window's worth at the minute's rate, less what the minute
 * has used — what the window would have left if this minute's use were all of it.
 */

export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;
/** A month as a limit counts it: 30 days (the hosts reset on the calendar; a nominal month is what a rate is read against). */
export const MONTH_MS = 30 * DAY_MS;

/** A per-minute `limit` and `remaining` restated over a window of `windowMs`: whole counts, never more remaining than the limit. */
export function overWindow(limit: number, remaining: number, windowMs: number): { limit: number; remaining: number } {
  const windowLimit = Math.floor((limit * windowMs) / MINUTE_MS);
  return { limit: windowLimit, remaining: Math.max(0, Math.min(windowLimit, windowLimit - (limit - remaining))) };
}
