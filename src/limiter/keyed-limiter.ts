import { systemClock, type Clock } from '../clock.ts';
import { checkClock, checkInteger, checkNumber, checkObject, checkString } from '../validation/checks.ts';
import { KeyIndex } from './key-index.ts';
import { type AcquireOptions, TokenBucket } from './token-bucket.ts';

/** What a keyed limiter holds unless told otherwise. */
export const KEYED_LIMITER_DEFAULTS = Object.freeze({
  /** Live keys at most; past it the least recently used is evicted (it starts full again). */
  maxKeys: 1_000_000,
});

/** What `new KeyedLimiter()` takes: each key's rate and burst, the most keys kept at once, and the clock. */
export interface KeyedLimiterOptions {
  /** Tokens added per second to each key's bucket. `Infinity` allows everything; `0` only the initial burst. */
  readonly rate: number;
  /** Each key's capacity: the most one key can take at one instant. A new key starts full. */
  readonly burst: number;
  /** Time source. Tests pass a `ManualClock`. @default systemClock */
  readonly clock?: Clock | undefined;
  /** Live keys at most, an integer >= 1. @default 1_000_000 */
  readonly maxKeys?: number | undefined;
}

/** One take's verdict, with what rate-limit headers need to say. */
export interface RateLimitDecision {
  /** Whether the tokens were taken. */
  readonly allowed: boolean;
  /** The key's capacity (the burst). */
  readonly limit: number;
  /** Whole tokens left after this take. */
  readonly remaining: number;
  /** Ms until the key's bucket is full again (0 when full). */
  readonly resetMs: number;
  /** Ms until the tokens asked for will be there: 0 when allowed, `Infinity` when they never can (more than the burst, rate 0). */
  readonly retryAfterMs: number;
}

/**
 * What per-key limiting asks of where the buckets live: this process ({@link KeyedLimiter}) or a
 * server several processes share (Redis). `take` may answer at once or after a round trip.
 */
export interface RateLimitStore {
  /** Tokens per second per key. */
  readonly rate: number;
  /** Each key's capacity. */
  readonly burst: number;
  /** Keys held, when the store can say cheaply (a shared store may not); read for the live-key gauge. */
  readonly size?: number | undefined;
  /** Takes `n` tokens from `key`'s bucket if they are there; says what is left either way. */
  take(key: string, n?: number): RateLimitDecision | Promise<RateLimitDecision>;
  /**
   * Puts `n` tokens taken before back in `key`'s bucket (never past its burst): what a take at a
   * worst case gives back once the actual use is known. @default none (what is taken stays taken)
   */
  give?(key: string, n: number): void | Promise<void>;
}

/** Whole-token counts read a hair under the truth after float refills: this close is there. */
const EPSILON_TOKENS = 1e-9;
/** Slots the clock hand looks at per new key, dropping buckets that have refilled. */
const SWEEP_STEPS = 2;
/** Slots allocated up front; the arrays double from there up to `maxKeys`. */
const INITIAL_SLOTS = 1024;

/**
 * A token bucket per key — per client address, per API key — with the semantics of
 * {@link TokenBucket} (float tokens, lazy refill, a new key starts full, time going backwards adds
 * nothing) and the same arithmetic, for servers with millions of clients.
 *
 * Memory. A key's state is two numbers in typed arrays indexed by a slot, found through a hash
 * index of typed arrays ({@link KeyIndex}): no object per key, under 70 bytes per live key beyond
 * the key string. A bucket that has refilled to
 * full is indistinguishable from a new one, so it is dropped without changing any future answer
 * (on a clock that never goes backwards, as the system clock never does): every new key moves a
 * clock hand over a couple of slots and drops the buckets it finds full again, so idle keys go
 * without a timer and the keys held stay within about twice those not yet full. `maxKeys` caps the
 * keys held; past it the hand evicts one that was not used since it last passed (the CLOCK
 * approximation of least recently used) — which only means that client starts full again, as a
 * client never seen would. A burst's worth more than it should, at most once per eviction: size
 * `maxKeys` above the clients you expect to be limited at any one time.
 *
 * Prefer {@link take} (what HTTP middleware needs: a verdict and header figures, never waiting).
 * {@link acquire} waits its turn, FIFO per key, through a `TokenBucket` the key borrows while it
 * has waiters. Safe to share by every request handler (one event loop, no locks needed).
 */
export class KeyedLimiter implements RateLimitStore {
  /** Each key's refill rate, in requests per second. */
  readonly rate: number;
  /** Each key's bucket size: the most requests a key may make at once. */
  readonly burst: number;
  readonly #clock: Clock;
  readonly #maxKeys: number;
  /** Key → slot in the arrays below. */
  readonly #index: KeyIndex;
  /** Per slot: the token count at `#lastMs`. */
  #tokens: Float64Array;
  /** Per slot: the latest clock reading the count was brought to (never moves back). */
  #lastMs: Float64Array;
  /** Per slot: used since the hand last passed (spared once from eviction). */
  #used: Uint8Array;
  /** A stack of free slots below `#nextSlot`. */
  #free: Int32Array;
  #freeCount = 0;
  /** Slots handed out so far: every slot below is held or free. */
  #nextSlot = 0;
  /** The clock hand: the next slot to look at. */
  #hand = 0;
  /** Keys with waiters, each on a bucket of its own (and out of the arrays) until its queue is empty. */
  readonly #waiting = new Map<string, TokenBucket>();

  constructor(options: KeyedLimiterOptions) {
    checkObject('options', options);
    const { rate, burst, clock = systemClock, maxKeys = KEYED_LIMITER_DEFAULTS.maxKeys } = options;
    checkNumber('rate', rate, { min: 0, finite: false, unit: 'tokens per second' });
    checkNumber('burst', burst, { min: 0 });
    checkClock('clock', clock);
    checkInteger('maxKeys', maxKeys, 1);
    this.rate = rate;
    this.burst = burst;
    this.#clock = clock;
    this.#maxKeys = maxKeys;
    const capacity = Math.min(maxKeys, INITIAL_SLOTS);
    this.#tokens = new Float64Array(capacity);
    this.#lastMs = new Float64Array(capacity);
    this.#used = new Uint8Array(capacity);
    this.#free = new Int32Array(capacity);
    this.#index = new KeyIndex(capacity);
  }

  /** Keys held: those whose buckets are not full, and full ones the hand has not reached yet; at most `maxKeys`, plus keys with waiters. */
  get size(): number {
    return this.#index.size + this.#waiting.size;
  }

  /**
   * Takes `n` tokens from `key`'s bucket if they are there (and no one is waiting on it). The
   * per-request hot path: `key` is trusted to be a string.
   */
  take(key: string, n = 1): RateLimitDecision {
    if (typeof n !== 'number' || !(n >= 0 && n < Infinity)) checkNumber('n', n, { min: 0 });
    const { rate, burst } = this;
    if (rate === Infinity) return { allowed: true, limit: burst, remaining: Math.floor(burst), resetMs: 0, retryAfterMs: 0 };
    if (this.#waiting.size !== 0) {
      const waiting = this.#waiting.get(key);
      if (waiting !== undefined) return this.#decideWaiting(waiting, waiting.tryAcquire(n), n);
    }
    const nowMs = this.#clock.now();
    const hash = this.#index.hash(key);
    const slot = this.#index.find(key, hash);
    if (slot === -1) {
      // A new key is a full bucket: it needs a slot only once it is not full any more.
      if (n > burst) return this.#decide(false, burst, n);
      const tokens = burst - n;
      if (tokens < burst) this.#store(this.#insert(key, hash, nowMs), tokens, nowMs);
      return this.#decide(true, tokens, n);
    }
    const tokens = this.#refilled(slot, nowMs);
    this.#used[slot] = 1;
    // A refusal stores nothing, as in TokenBucket: the same float operations give the same answers.
    if (tokens < n) return this.#decide(false, tokens, n);
    this.#store(slot, tokens - n, nowMs);
    return this.#decide(true, tokens - n, n);
  }

  /**
   * Puts `n` tokens taken before back in `key`'s bucket, up to its burst: a take at a worst case
   * settled on the actual use. A key with waiters (`acquire`) keeps its count: they were lined up
   * behind it.
   */
  give(key: string, n: number): void {
    if (typeof n !== 'number' || !(n >= 0 && n < Infinity)) checkNumber('n', n, { min: 0 });
    if (this.rate === Infinity || n === 0 || this.#waiting.has(key)) return;
    const slot = this.#index.find(key, this.#index.hash(key));
    // No slot: the bucket is full already.
    if (slot === -1) return;
    const nowMs = this.#clock.now();
    this.#store(slot, Math.min(this.burst, this.#refilled(slot, nowMs) + n), nowMs);
  }

  /** Takes `n` tokens from `key` if they are there; whether it did. */
  tryAcquire(key: string, n = 1): boolean {
    return this.take(key, n).allowed;
  }

  /**
   * Resolves once `n` tokens of `key` are granted, after every waiter on that key before it — with
   * {@link TokenBucket.acquire}'s semantics: a `RangeError` for n > burst, `maxWaitMs` fails at once
   * taking nothing, an abort rejects with `signal.reason` and refunds exactly.
   */
  async acquire(key: string, n = 1, options: AcquireOptions = {}): Promise<void> {
    checkString('key', key);
    checkNumber('n', n, { min: 0 });
    checkObject('options', options);
    if (options.maxWaitMs !== undefined) checkNumber('maxWaitMs', options.maxWaitMs, { min: 0, finite: false });
    if (options.signal?.aborted) throw options.signal.reason;
    if (this.rate === Infinity) return;
    let bucket = this.#waiting.get(key);
    if (bucket === undefined) {
      if (this.take(key, n).allowed) return;
      // Its count moves to a bucket of its own, which keeps the queue; the slot is freed meanwhile.
      const slot = this.#index.find(key, this.#index.hash(key));
      let tokens = this.burst;
      if (slot !== -1) {
        tokens = this.#tokens[slot]!;
        this.#drop(slot);
      }
      bucket = new TokenBucket({ rate: this.rate, burst: this.burst, clock: this.#clock, tokens });
      this.#waiting.set(key, bucket);
    }
    try {
      await bucket.acquire(n, options);
    } finally {
      this.#settleWaiting(key, bucket);
    }
  }

  /** Once a key's queue is empty, its count goes back to the arrays (or nowhere, if full) and the bucket is dropped. */
  #settleWaiting(key: string, bucket: TokenBucket): void {
    if (bucket.waiting > 0 || this.#waiting.get(key) !== bucket) return;
    this.#waiting.delete(key);
    const tokens = Math.max(0, bucket.tokens());
    if (tokens >= this.burst) return;
    const nowMs = this.#clock.now();
    this.#store(this.#insert(key, this.#index.hash(key), nowMs), tokens, nowMs);
  }

  #decide(allowed: boolean, tokens: number, n: number): RateLimitDecision {
    const { rate, burst } = this;
    return {
      allowed,
      limit: burst,
      remaining: Math.floor(tokens + EPSILON_TOKENS),
      resetMs: tokens >= burst ? 0 : rate === 0 ? Infinity : ((burst - tokens) * 1000) / rate,
      retryAfterMs: allowed ? 0 : n > burst || rate === 0 ? Infinity : ((n - tokens) * 1000) / rate,
    };
  }

  /** A key with waiters: the bucket's count is negative while they are charged, and newcomers line up behind them. */
  #decideWaiting(bucket: TokenBucket, allowed: boolean, n: number): RateLimitDecision {
    const { burst } = this;
    return {
      allowed,
      limit: burst,
      remaining: Math.max(0, Math.floor(bucket.tokens() + EPSILON_TOKENS)),
      resetMs: bucket.msUntil(burst),
      retryAfterMs: allowed ? 0 : n > burst ? Infinity : bucket.msUntil(n),
    };
  }

  /** The slot's count at `nowMs`, exactly as `TokenBucket` computes it: lazy refill, capped; an earlier reading adds nothing. */
  #refilled(slot: number, nowMs: number): number {
    const lastMs = this.#lastMs[slot]!;
    const elapsedMs = nowMs > lastMs ? nowMs - lastMs : 0;
    const tokens = this.#tokens[slot]! + (elapsedMs * this.rate) / 1000;
    return tokens > this.burst ? this.burst : tokens;
  }

  /** Stores the count as of `nowMs`; the update time only moves forward, as in `TokenBucket`. */
  #store(slot: number, tokens: number, nowMs: number): void {
    this.#tokens[slot] = tokens;
    if (nowMs > this.#lastMs[slot]!) this.#lastMs[slot] = nowMs;
  }

  /** A slot for a new key, first making room: full buckets go, then (past `maxKeys`) one not recently used. */
  #insert(key: string, hash: number, nowMs: number): number {
    this.#sweep(nowMs);
    if (this.#index.size >= this.#maxKeys) this.#evict(nowMs);
    let slot: number;
    if (this.#freeCount > 0) slot = this.#free[--this.#freeCount]!;
    else {
      slot = this.#nextSlot++;
      if (slot >= this.#tokens.length) this.#grow();
    }
    this.#index.insert(key, hash, slot);
    this.#used[slot] = 0;
    this.#lastMs[slot] = nowMs;
    return slot;
  }

  /** Moves the hand over a few slots, dropping the buckets that are full again and clearing use bits. */
  #sweep(nowMs: number): void {
    for (let step = 0; step < SWEEP_STEPS && this.#nextSlot > 0; step++) {
      const slot = this.#advanceHand();
      if (this.#index.keyOf(slot) === undefined) continue;
      if (this.#refilled(slot, nowMs) >= this.burst) this.#drop(slot);
      else this.#used[slot] = 0;
    }
  }

  /** Drops one key: the first under the hand that is full again or was not used since the hand last passed. */
  #evict(nowMs: number): void {
    for (;;) {
      const slot = this.#advanceHand();
      if (this.#index.keyOf(slot) === undefined) continue;
      if (this.#used[slot] === 0 || this.#refilled(slot, nowMs) >= this.burst) {
        this.#drop(slot);
        return;
      }
      this.#used[slot] = 0;
    }
  }

  #advanceHand(): number {
    const slot = this.#hand;
    this.#hand = slot + 1 < this.#nextSlot ? slot + 1 : 0;
    return slot;
  }

  #drop(slot: number): void {
    this.#index.remove(slot);
    this.#free[this.#freeCount++] = slot;
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#tokens.length * 2);
    const tokens = new Float64Array(capacity);
    tokens.set(this.#tokens);
    this.#tokens = tokens;
    const lastMs = new Float64Array(capacity);
    lastMs.set(this.#lastMs);
    this.#lastMs = lastMs;
    const used = new Uint8Array(capacity);
    used.set(this.#used);
    this.#used = used;
    const free = new Int32Array(capacity);
    free.set(this.#free);
    this.#free = free;
    this.#index.grow(capacity);
  }
}
