import type { TokenUsage } from '../provider/provider.ts';
import { expected } from '../validation/checks.ts';
import { brandedGuard } from '../error-brand.ts';
import { LIMIT_KINDS, type LimitKind } from '../provider/rate-limit-signals.ts';

/**
 * The seam between the call gate and whatever keeps a provider's quota: an in-process
 * {@link LocalLimits} over token buckets, or one shared by several processes (through Redis). The
 * gate, the adaptive rate and header sync talk to this interface only.
 */

// What a limit counts is the provider contract's word: its limits are stated in those kinds.
export { LIMIT_KINDS, type LimitKind } from '../provider/rate-limit-signals.ts';

/** One limit of a provider: requests, or LLM tokens (all, input only, output only). */
export interface LimitSpec {
  /** What the limit counts: requests, tokens (input and output), input tokens or output tokens. */
  readonly kind: LimitKind;
  /** Units per second (a per-minute quota of 90 000 tokens is 1 500/s). `Infinity` for none. */
  readonly rate: number;
  /** The most that can go at once. */
  readonly burst: number;
}

/** What one call costs, estimated before it and reported after it. */
export interface CallCost {
  /** Requests: 1 for a call. */
  readonly requests: number;
  /** The prompt's tokens (estimated before the call). */
  readonly inputTokens: number;
  /** The most tokens the answer may take (what the call reserves). */
  readonly outputTokens: number;
}

/** A granted call's hold on the limits; `settle()` squares the estimate with the real usage once known. */
export interface LimitGrant {
  /** Refunds what the call did not use and debits what it overran. At most once; later calls are ignored. */
  settle(actual: TokenUsage): void;
}

/** What `ProviderLimits.acquire()` takes besides the cost: a signal, the longest wait, a rank. */
export interface LimitAcquireOptions {
  /** Aborting it rejects the wait with `signal.reason`, taking nothing. @default none */
  readonly signal?: AbortSignal | undefined;
  /**
   * Fail at once with `MaxWaitExceededError`, taking nothing, when the grant cannot come within this many ms.
   * @default Infinity (no limit)
   */
  readonly maxWaitMs?: number | undefined;
  /**
   * Lower ranks are served first among calls waiting in this process (see `TokenBucket`'s `rank`);
   * a shared implementation may order by arrival alone.
   * @default none (unranked: served by arrival, behind ranked calls)
   */
  readonly rank?: number | undefined;
}

/**
 * Every limit one provider sets, taken together. Asynchronous, so that an implementation may keep
 * its state elsewhere (one round trip per acquire); the methods that change the limits return at
 * once and apply their change as soon as they can.
 */
export interface ProviderLimits {
  /** The limits as configured. */
  readonly specs: readonly LimitSpec[];
  /** Whether any limit counts LLM tokens (and so a call needs a token estimate). */
  readonly countsTokens: boolean;
  /**
   * Whether other processes take from these limits too (a quota shared through Redis). This
   * process then cannot see all the demand ahead of an article, so admission cannot promise its
   * calls a grant in time: an article's deadline starts at its first call's grant instead, and an
   * article waiting for that grant has not started — it cannot fail for the other processes'
   * share of the queue. @default false
   */
  readonly shared?: boolean | undefined;
  /** The request limit's rate now, in calls per second (moved by the adaptive rate); `Infinity` without one. */
  readonly rate: number;
  /**
   * Waits until `cost` fits every limit and takes it, all at once: nothing is spent on one limit
   * when another refuses. Rejects at once with `LimitTooSmallError` when the cost can never fit,
   * with `MaxWaitExceededError` when not within `maxWaitMs`, with `signal.reason` on abort.
   */
  acquire(cost: CallCost, options?: LimitAcquireOptions): Promise<LimitGrant>;
  /** Sets the request rate from now on (the adaptive rate's lever); never above the configured one. */
  setRate(rate: number): void;
  /** The provider says only `remaining` of `kind` is left now: take away the excess. Never raises. */
  lowerTo(kind: LimitKind, remaining: number): void;
  /**
   * Milliseconds until `calls` more calls, queued behind every call already waiting, would be
   * granted (0: now) — each costing `perCall` on every limit (its tokens too), or one request
   * when not given. What the pipeline admits new work by; an implementation that cannot tell
   * answers 0, or counts the requests only.
   */
  backlogMs(calls: number, perCall?: CallCost): number;
}

/** A call can never fit: it needs more than a limit's burst. Not worth retrying. */
export class LimitTooSmallError extends RangeError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'LimitTooSmallError';

  constructor(
    /** The limit the call does not fit. */
    readonly kind: LimitKind,
    /** What the call needs of that limit. */
    readonly needed: number,
    /** The limit's burst: the most it grants at once. */
    readonly burst: number,
  ) {
    super(`the call needs ${Math.ceil(needed)} ${kind} but the ${kind} limit allows at most ${burst} at once`);
  }
}

/**
 * Whether `error` is a {@link LimitTooSmallError}, from this copy of the package or another one
 * loaded beside it (`ProviderLimits` written against their own copy).
 */
export const isLimitTooSmallError = brandedGuard(LimitTooSmallError, 'LimitTooSmallError');

/** How much of `kind` a call costs. */
export function amountOf(kind: LimitKind, cost: CallCost): number {
  switch (kind) {
    case 'requests':
      return cost.requests;
    case 'tokens':
      return cost.inputTokens + cost.outputTokens;
    case 'input-tokens':
      return cost.inputTokens;
    case 'output-tokens':
      return cost.outputTokens;
  }
}

/** A request limit alone: the shorthand for `rate` calls per second with `burst`. */
export function requestLimit(rate: number, burst: number): LimitSpec[] {
  return [{ kind: 'requests', rate, burst }];
}

/** Throws a `TypeError` unless `specs` is a non-empty array of limits of known kinds, each kind once. */
export function checkLimitSpecs(specs: readonly LimitSpec[]): void {
  if (!Array.isArray(specs) || specs.length === 0) throw expected('specs', 'a non-empty array of limits', specs);
  const kinds = new Set<LimitKind>();
  for (const spec of specs) {
    if (!LIMIT_KINDS.includes(spec.kind)) throw expected('a limit kind', `one of ${LIMIT_KINDS.join(', ')}`, spec.kind);
    if (kinds.has(spec.kind)) throw expected('each limit kind', 'given once', `${spec.kind} twice`);
    kinds.add(spec.kind);
  }
}

/**
 * What settling a call gives `kind` back: its estimate less what the call used (negative when it
 * used more); 0 when nothing changes, or the estimate was unbounded.
 */
export function unusedOf(kind: LimitKind, estimate: CallCost, actual: TokenUsage): number {
  const change = amountOf(kind, estimate) - amountOf(kind, { requests: estimate.requests, ...actual });
  return Number.isFinite(change) ? change : 0;
}

/** A grant with nothing to settle. */
export const SETTLED: LimitGrant = Object.freeze({ settle: () => {} });

/** The limits as a provider keeps them: copies, frozen, of what it was given. */
export function frozenSpecs(specs: readonly LimitSpec[]): readonly LimitSpec[] {
  return specs.map((spec) => Object.freeze({ kind: spec.kind, rate: spec.rate, burst: spec.burst }));
}
