/**
 * When a call must be done by, for a caller whose deadline may not have started yet: an article's
 * deadline counts from its start, or — on limits other processes share, where this process cannot
 * see the demand ahead of it (`ProviderLimits.shared`) — from its first call's grant. Which of the
 * two is the limits' business: the gate starts the deadline, not the caller.
 */
export interface CallDeadline {
  /** The clock instant the call must be done by; `Infinity` until the deadline has started. */
  readonly atMs: number;
  /** Aborts at the deadline (once started) and when the caller stops. */
  readonly signal: AbortSignal | undefined;
  /** Whether the deadline has started. */
  readonly started: boolean;
  /** The instant the deadline counts from unless the limits start it at their grant: the caller's start. */
  readonly fromMs: number;
  /**
   * Before the deadline has started: the longest wait for a first grant worth taking. A grant
   * further off takes nothing; the call sleeps until one would be that near and asks again.
   */
  firstGrantWithinMs(): number;
  /** Starts the deadline counting from `atMs`; once started, it stays as it is. */
  start(atMs: number): void;
}
