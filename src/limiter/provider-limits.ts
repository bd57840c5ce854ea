import { sleep, systemClock, type Clock } from '../clock.ts';
import { MaxWaitExceededError, TokenBucket } from './token-bucket.ts';

/** What a limit counts: requests, or LLM tokens (all, input only, output only). */
export type LimitKind = 'requests' | 'tokens' | 'input-tokens' | 'output-tokens';

export const LIMIT_KINDS: readonly LimitKind[] = ['requests', 'tokens', 'input-tokens', 'output-tokens'];

export interface LimitSpec {
  readonly kind: LimitKind;
  /** Units per second (a per-minute quota of 90 000 tokens is 1 500/s). `Infinity` for none. */
  readonly rate: number;
  /** The most that can go at once. */
  readonly burst: number;
}

/** What one call costs, estimated before it and reported after it. */
export interface CallCost {
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** A granted call's hold on the limits; `settle()` squares the estimate with the real usage once known. */
export interface LimitGrant {
  /** Refunds what the call did not use and debits what it overran. At most once; later calls are ignored. */
  settle(actual: { inputTokens: number; outputTokens: number }): void;
}

/** A call can never fit: it needs more than a limit's burst. Not worth retrying. */
export class LimitTooSmallError extends RangeError {
  override readonly name = 'LimitTooSmallError';

  constructor(
    readonly kind: LimitKind,
    readonly needed: number,
    readonly burst: number,
  ) {
    super(`the call needs ${Math.ceil(needed)} ${kind} but the ${kind} limit allows at most ${burst} at once`);
  }
}

export const isLimitTooSmallError = (error: unknown): error is LimitTooSmallError => error instanceof LimitTooSmallError;

function amountOf(kind: LimitKind, cost: CallCost): number {
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

const SETTLED: LimitGrant = { settle: () => {} };

/**
 * Every limit a provider sets — requests per second or minute, tokens, input and output tokens per
 * minute — each a {@link TokenBucket}, taken together.
 *
 * With the request limit alone, a call simply `acquire()`s one token (FIFO, exact refunds). With
 * token limits too, it first reserves its token cost on all of them at once and waits until the
 * last allows, x/time/rate style — if any cannot be met (more than its burst, or not within
 * `maxWaitMs`) every reservation is cancelled and nothing is taken — and only then `acquire()`s its
 * request token, so the request is counted when it really goes. An abort while waiting cancels the
 * token reservations as x/time/rate's `Cancel` does (tokens that later reservations already count
 * on stay spent); a refused request token gives the reserved tokens back. Token costs are
 * estimates; `settle()` refunds or debits the difference when the usage is known.
 */
export class ProviderLimits {
  readonly #clock: Clock;
  readonly #limits: readonly { readonly kind: LimitKind; readonly bucket: TokenBucket }[];

  /** Limits with the request limit alone, held by an existing bucket. */
  static of(requests: TokenBucket, clock: Clock = systemClock): ProviderLimits {
    return new ProviderLimits([{ kind: 'requests', bucket: requests }], clock);
  }

  /** Each limit is a spec (a new bucket is made for it) or an existing bucket. */
  constructor(specs: readonly (LimitSpec | { readonly kind: LimitKind; readonly bucket: TokenBucket })[], clock: Clock = systemClock) {
    if (specs.length === 0) throw new TypeError('Expected at least one limit, got none');
    const kinds = new Set<LimitKind>();
    for (const spec of specs) {
      if (!LIMIT_KINDS.includes(spec.kind)) {
        throw new TypeError(`Expected a limit kind (${LIMIT_KINDS.join(', ')}), got ${String(spec.kind)}`);
      }
      if (kinds.has(spec.kind)) throw new TypeError(`Expected one limit per kind, got "${spec.kind}" twice`);
      kinds.add(spec.kind);
    }
    this.#clock = clock;
    this.#limits = specs.map((spec) => ({
      kind: spec.kind,
      bucket: 'bucket' in spec ? spec.bucket : new TokenBucket({ rate: spec.rate, burst: spec.burst, clock }),
    }));
  }

  /** The bucket behind a kind of limit, if the provider has one (for headers sync and the adaptive rate). */
  bucket(kind: LimitKind): TokenBucket | undefined {
    return this.#limits.find((limit) => limit.kind === kind)?.bucket;
  }

  /** Whether any limit counts tokens (and so calls need a token estimate). */
  get countsTokens(): boolean {
    return this.#limits.some((limit) => limit.kind !== 'requests');
  }

  /**
   * Waits until `cost` fits every limit. Rejects at once with {@link LimitTooSmallError} when it
   * never can, with `MaxWaitExceededError` when not within `maxWaitMs`, and with `signal.reason`
   * on abort — taking nothing in each case.
   */
  async acquire(cost: CallCost, options: { signal?: AbortSignal | undefined; maxWaitMs?: number } = {}): Promise<LimitGrant> {
    const limits = this.#limits;
    if (limits.length === 1 && limits[0]!.kind === 'requests') {
      await this.#acquireOne(limits[0]!.bucket, cost.requests, options);
      return SETTLED;
    }
    const { signal } = options;
    const maxWaitMs = options.maxWaitMs ?? Infinity;
    signal?.throwIfAborted();
    for (const { kind, bucket } of limits) {
      const needed = amountOf(kind, cost);
      if (needed > bucket.burst && bucket.rate !== Infinity) throw new LimitTooSmallError(kind, needed, bucket.burst);
    }
    const startMs = this.#clock.now();
    const tokenLimits = limits.filter((limit) => limit.kind !== 'requests');
    const reservations = [];
    let delayMs = 0;
    for (const { kind, bucket } of tokenLimits) {
      const reservation = bucket.reserve(amountOf(kind, cost), { maxDelayMs: maxWaitMs });
      if (!reservation.ok) {
        for (const made of reservations) made.cancel();
        throw new MaxWaitExceededError(this.#waitFor(kind, cost), maxWaitMs);
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
    const requests = this.bucket('requests');
    if (requests !== undefined) {
      try {
        const leftMs = Math.max(0, maxWaitMs - (this.#clock.now() - startMs));
        await this.#acquireOne(requests, cost.requests, { signal, maxWaitMs: leftMs });
      } catch (error) {
        // Their time to act has passed, so cancel() would give nothing back: return them outright.
        for (const { kind, bucket } of tokenLimits) bucket.adjust(amountOf(kind, cost));
        throw error;
      }
    }
    return new TokenSettlement(limits, cost);
  }

  async #acquireOne(bucket: TokenBucket, n: number, options: { signal?: AbortSignal | undefined; maxWaitMs?: number }): Promise<void> {
    if (n > bucket.burst && bucket.rate !== Infinity) throw new LimitTooSmallError('requests', n, bucket.burst);
    await bucket.acquire(n, options);
  }

  /** The wait a refused reservation would have needed, for the error message. */
  #waitFor(kind: LimitKind, cost: CallCost): number {
    const bucket = this.bucket(kind)!;
    const missing = amountOf(kind, cost) - bucket.tokens();
    return missing <= 0 ? 0 : bucket.rate === 0 ? Infinity : (missing * 1000) / bucket.rate;
  }
}

class TokenSettlement implements LimitGrant {
  #settled = false;

  constructor(
    private readonly limits: readonly { readonly kind: LimitKind; readonly bucket: TokenBucket }[],
    private readonly estimate: CallCost,
  ) {}

  settle(actual: { inputTokens: number; outputTokens: number }): void {
    if (this.#settled) return;
    this.#settled = true;
    const real: CallCost = { requests: this.estimate.requests, ...actual };
    for (const { kind, bucket } of this.limits) {
      if (kind === 'requests') continue;
      const unused = amountOf(kind, this.estimate) - amountOf(kind, real);
      if (unused !== 0 && Number.isFinite(unused)) bucket.adjust(unused);
    }
  }
}
