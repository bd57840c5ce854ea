import type { CallDeadline } from './call-deadline.ts';
import type { ProviderLimits } from '../quota/provider-limits.ts';

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

/** A call's scope as its opener fills it in: {@link CallScope}, writable. */
export interface OpenedScope {
  signal: AbortSignal | undefined;
  deadlineMs: number;
  pending: CallDeadline | undefined;
  ranked: boolean;
}

/**
 * Opens a call's scope from its options into `scope`, for attempts through `gates`. An unstarted
 * deadline starts from its `fromMs` at once, unless the limits of one of the gates are shared
 * (asked only then): this process cannot see the demand ahead of it there, so the call's grant
 * starts it, and an article waiting for that grant has not begun — it cannot fail for the other
 * processes' share of the queue.
 */
export function openScope(scope: OpenedScope, options: CallScopeOptions, gates: readonly { readonly limits: ProviderLimits }[]): void {
  const { deadline } = options;
  scope.ranked = deadline !== undefined;
  if (deadline === undefined) {
    scope.signal = options.signal;
    scope.deadlineMs = options.deadlineMs ?? Infinity;
    scope.pending = undefined;
    return;
  }
  if (!deadline.started && !gates.some(sharesLimits)) deadline.start(deadline.fromMs);
  scope.signal = deadline.signal;
  scope.deadlineMs = deadline.atMs;
  scope.pending = deadline.started ? undefined : deadline;
}

/** Starts `scope`'s pending deadline at `atMs` (a grant): see {@link CallScope.startAt}. */
export function startScope(scope: OpenedScope, atMs: number): void {
  const { pending } = scope;
  if (pending === undefined) return;
  pending.start(atMs);
  scope.deadlineMs = pending.atMs;
  scope.signal = pending.signal;
  scope.pending = undefined;
}

const sharesLimits = (gate: { readonly limits: ProviderLimits }): boolean => gate.limits.shared === true;
