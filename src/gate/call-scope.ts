import type { CallDeadline } from './call-deadline.ts';

/** What a call's scope opens from: a deadline that may not have started yet, or a plain signal and instant. */
export interface CallScopeOptions {
  /** Aborts the call: its waits, the attempt in flight, its backoff. @default none */
  readonly signal?: AbortSignal | undefined;
  /** Clock instant by which the call must be done. @default Infinity (no deadline) */
  readonly deadlineMs?: number | undefined;
  /** A deadline that may not have started yet (an article's): it replaces `signal` and `deadlineMs`. @default none */
  readonly deadline?: CallDeadline | undefined;
}

/**
 * The deadline and signal a call's attempts run under, shared by them: the gate that first grants
 * an attempt starts a deadline still `pending`, and every later attempt reads it started.
 */
export interface CallScope {
  /** Aborts the call's attempts: the deadline's signal once it has started. */
  readonly signal: AbortSignal | undefined;
  /** The instant the call must be done by; `Infinity` while the deadline is pending. */
  readonly deadlineMs: number;
  /** The deadline still to start at the first grant, if any. */
  readonly pending: CallDeadline | undefined;
  /** Whether the call runs under a `CallDeadline` (an article's): its attempts are ranked by it at the limits. */
  readonly ranked: boolean;
  /** Starts a pending deadline at `atMs` (a grant): one granted attempt starts it for the call's others. */
  startAt(atMs: number): void;
}

/**
 * A call's scope, opened from its options. An unstarted deadline starts from its `fromMs` at once,
 * unless the limits are `shared`: this process cannot see the demand ahead of it there, so the
 * call's grant starts it, and an article waiting for that grant has not begun — it cannot fail for
 * the other processes' share of the queue.
 */
export class OpenScope implements CallScope {
  signal: AbortSignal | undefined;
  deadlineMs: number;
  pending: CallDeadline | undefined;
  readonly ranked: boolean;

  constructor(options: CallScopeOptions, shared: boolean) {
    const { deadline } = options;
    this.ranked = deadline !== undefined;
    if (deadline === undefined) {
      this.signal = options.signal;
      this.deadlineMs = options.deadlineMs ?? Infinity;
      this.pending = undefined;
      return;
    }
    if (!deadline.started && !shared) deadline.start(deadline.fromMs);
    this.signal = deadline.signal;
    this.deadlineMs = deadline.atMs;
    this.pending = deadline.started ? undefined : deadline;
  }

  startAt(atMs: number): void {
    const { pending } = this;
    if (pending === undefined) return;
    pending.start(atMs);
    this.deadlineMs = pending.atMs;
    this.signal = pending.signal;
    this.pending = undefined;
  }
}
