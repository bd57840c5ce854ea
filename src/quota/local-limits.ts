import { sleep, systemClock, type Clock } from '../clock.ts';
import type { TokenUsage } from '../provider/provider.ts';
import { MaxWaitExceededError, TokenBucket } from '../limiter/token-bucket.ts';
import { checkClock, checkObject } from '../validation/checks.ts';
import {
  amountOf,
  checkLimitSpecs,
  frozenSpecs,
  SETTLED,
  unusedOf,
  LimitTooSmallError,
  type CallCost,
  type LimitAcquireOptions,
  type LimitGrant,
  type LimitKind,
  type LimitSpec,
  type ProviderLimits,
} from './provider-limits.ts';

/** What `new LocalLimits()` takes: the limits, and the clock they run on. */
export interface LocalLimitsOptions {
  /** Every limit the provider sets: requests, tokens, input or output tokens, each kind once. */
  readonly limits: readonly LimitSpec[];
  /** Time source of the buckets. @default systemClock */
  readonly clock?: Clock | undefined;
}

interface Limit {
  readonly spec: LimitSpec;
  readonly bucket: TokenBucket;
}

/**
 * A provider's limits in this process: one {@link TokenBucket} per limit, taken together.
 *
 * With the request limit alone, a call simply `acquire()`s one token (ranked FIFO, exact refunds).
 * With token limits too, it first reserves its token cost on all of them at once and waits until
 * the last allows, x/time/rate style — if any cannot be met (more than its burst, or not within
 * `maxWaitMs`) every reservation is cancelled and nothing is taken — and only then `acquire()`s its
 * request token, so the request is counted when it really goes. An abort while waiting cancels the
 * token reservations as x/time/rate's `Cancel` does (tokens that later reservations already count
 * on stay spent); a refused request token gives the reserved tokens back. Token costs are
 * estimates; `settle()` refunds or debits the difference when the usage is known.
 */
export class LocalLimits implements ProviderLimits {
  /** The limits as configured. */
  readonly specs: readonly LimitSpec[];
  /** Whether any limit counts LLM tokens. */
  readonly countsTokens: boolean;
  readonly #clock: Clock;
  readonly #limits: readonly Limit[];
  readonly #tokenLimits: readonly Limit[];
  readonly #requests: Limit | undefined;

  constructor(options: LocalLimitsOptions) {
    checkObject('options', options);
    const { limits, clock = systemClock } = options;
    checkLimitSpecs(limits);
    checkClock('clock', clock);
    this.#clock = clock;
    this.specs = frozenSpecs(limits);
    this.#limits = this.specs.map((spec) => ({ spec, bucket: new TokenBucket({ rate: spec.rate, burst: spec.burst, clock }) }));
    this.#tokenLimits = this.#limits.filter((limit) => limit.spec.kind !== 'requests');
    this.#requests = this.#limits.find((limit) => limit.spec.kind === 'requests');
    this.countsTokens = this.#tokenLimits.length > 0;
  }

  /** The bucket behind a kind of limit, if there is one: for tests and benchmarks that look inside. */
  bucket(kind: LimitKind): TokenBucket | undefined {
    return this.#limits.find((limit) => limit.spec.kind === kind)?.bucket;
  }

  /** The request limit's rate now, in calls per second; `Infinity` without one. */
  get rate(): number {
    return this.#requests?.bucket.rate ?? Infinity;
  }

  /** Sets the request rate from now on; never above the configured one. */
  setRate(rate: number): void {
    const requests = this.#requests;
    if (requests === undefined) return;
    requests.bucket.setRate(Math.min(rate, requests.spec.rate));
  }

  /** The provider says only `remaining` of `kind` is left now: takes away the excess. Never raises. */
  lowerTo(kind: LimitKind, remaining: number): void {
    const bucket = this.bucket(kind);
    if (bucket === undefined) return;
    const excess = bucket.tokens() - remaining;
    if (excess > 0) bucket.adjust(-excess);
  }

  /** Ms until `calls` more calls, queued behind every call already waiting, would be granted (0: now). */
  backlogMs(calls: number, perCall?: CallCost): number {
    if (perCall === undefined) return this.#requests?.bucket.msUntil(calls) ?? 0;
    let ms = 0;
    for (const { spec, bucket } of this.#limits) {
      const needed = calls * amountOf(spec.kind, perCall);
      if (needed > 0) ms = Math.max(ms, bucket.msUntil(needed));
    }
    return ms;
  }

  /** Waits until `cost` fits every limit and takes it, all at once (a strict FIFO over the buckets); rejects as `ProviderLimits.acquire` says. */
  async acquire(cost: CallCost, options: LimitAcquireOptions = {}): Promise<LimitGrant> {
    if (!this.countsTokens) {
      if (this.#requests !== undefined) await this.#acquireRequest(this.#requests, cost, options, options.maxWaitMs);
      return SETTLED;
    }
    const { signal } = options;
    const maxWaitMs = options.maxWaitMs ?? Infinity;
    signal?.throwIfAborted();
    for (const { spec, bucket } of this.#limits) {
      const needed = amountOf(spec.kind, cost);
      if (needed > bucket.burst && bucket.rate !== Infinity) throw new LimitTooSmallError(spec.kind, needed, bucket.burst);
    }
    const startMs = this.#clock.now();
    const reservations = [];
    let delayMs = 0;
    for (const { spec, bucket } of this.#tokenLimits) {
      const needed = amountOf(spec.kind, cost);
      const reservation = bucket.reserve(needed, { maxDelayMs: maxWaitMs });
      if (!reservation.ok) {
        const waitMs = bucket.msUntil(needed);
        for (const made of reservations) made.cancel();
        throw new MaxWaitExceededError(waitMs, maxWaitMs);
      }
      reservations.push(reservation);
      delayMs = Math.max(delayMs, reservation.delayMs);
    }
    if (delayMs > 0) {
      try {
        await sleep(this.#clock, delayMs, signal);
      } catch (error) {
        for (const made of reservations) made.cancel();
        throw error;
      }
    }
    if (this.#requests !== undefined) {
      try {
        await this.#acquireRequest(this.#requests, cost, options, Math.max(0, maxWaitMs - (this.#clock.now() - startMs)));
      } catch (error) {
        // Their time to act has passed, so cancel() would give nothing back: return them outright.
        for (const { spec, bucket } of this.#tokenLimits) bucket.adjust(amountOf(spec.kind, cost));
        throw error;
      }
    }
    return new TokenSettlement(this.#tokenLimits, cost);
  }

  #acquireRequest(requests: Limit, cost: CallCost, options: LimitAcquireOptions, maxWaitMs: number | undefined): Promise<void> {
    const { bucket } = requests;
    if (cost.requests > bucket.burst && bucket.rate !== Infinity) throw new LimitTooSmallError('requests', cost.requests, bucket.burst);
    return bucket.acquire(cost.requests, { signal: options.signal, maxWaitMs, rank: options.rank });
  }
}

class TokenSettlement implements LimitGrant {
  #settled = false;

  constructor(
    private readonly limits: readonly Limit[],
    private readonly estimate: CallCost,
  ) {}

  settle(actual: TokenUsage): void {
    if (this.#settled) return;
    this.#settled = true;
    for (const { spec, bucket } of this.limits) {
      const unused = unusedOf(spec.kind, this.estimate, actual);
      if (unused !== 0) bucket.adjust(unused);
    }
  }
}
