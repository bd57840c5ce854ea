import { systemClock, type Clock } from '../clock.ts';
import { checkClock, checkInteger, checkNumber, checkObject, checkString } from '../validation/checks.ts';
import { type AcquireOptions, TokenBucket } from './token-bucket.ts';

/** What a keyed limiter holds unless told otherwise. */
export const KEYED_LIMITER_DEFAULTS = Object.freeze({
  /** Live keys at most; past it the least recently used is evicted (it starts full again). */
  maxKeys: 1_000_000,
});

export interface KeyedLimiterOptions {
  /** Tokens added per second to each key's bucket. `Infinity` allows everything; `0` only the initial burst. */
  readonly rate: number;
  /** Each key's capacity: the most one key can take at one instant. A new key starts full. */
  readonly burst: number;
  /** Time source; defaults to the system clock. Tests pass a `ManualClock`. */
  readonly clock?: Clock | undefined;
  /** Live keys at most, an integer >= 1. Default {@link KEYED_LIMITER_DEFAULTS}. */
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
  /** Whether the keys live in this process (false: shared with other processes). */
  readonly localKeys: boolean;
  /** Tokens per second per key. */
  readonly rate: number;
  /** Each key's capacity. */
  readonly burst: number;
  /** Takes `n` tokens from `key`'s bucket if they are there; says what is left either way. */
  take(key: string, n?: number): RateLimitDecision | Promise<RateLimitDecision>;
}

/** Whole-token counts read a hair under the truth after float refills: this close is there. */
const EPSILON_TOKENS = 1e-9;
/** Entries looked at per new key for buckets that have refilled (and can go). */
const SWEEP_STEPS = 2;

/**
 * A token bucket per key — per client address, per API key — with the semantics of
 * {@link TokenBucket} (float tokens, lazy refill, a new key starts full, time going backwards adds
 * nothing), for servers with millions of clients.
 *
 * Memory. A key's state is two numbers in shared typed arrays plus its `Map` entry — no object per
 * key. A bucket that has refilled to full is indistinguishable from a new one, so it is dropped
 * without changing any future answer: every new key looks at a couple of old entries and drops
 * those that are full again, so idle keys go without a timer. `maxKeys` caps the live keys; past
 * it the least recently used key is evicted (approximately: a key used since the clock hand last
 * passed it gets a second chance) — which only means that client starts full again.
 *
 * Prefer {@link take} (what HTTP middleware needs: a verdict and header figures, never waiting).
 * {@link acquire} waits its turn, FIFO per key, through a `TokenBucket` the key borrows while it
 * has waiters. Safe to share by every request handler (one event loop, no locks needed).
 */
export class KeyedLimiter implements RateLimitStore {
  readonly localKeys = true;
  readonly rate: number;
  readonly burst: number;
  readonly #clock: Clock;
  readonly #maxKeys: number;
  /** Key → slot in the arrays below. */
  readonly #slots = new Map<string, number>();
  #tokens: Float64Array;
  #lastMs: Float64Array;
  /** Second-chance bits for eviction: set on use, cleared as the clock hand passes. */
  #used: Uint8Array;
  #free: number[] = [];
  #nextSlot = 0;
  #sweep: MapIterator<[string, number]> | undefined;
  /** Keys with waiters, each on a bucket of its own until its queue is empty. */
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
    const capacity = Math.min(maxKeys, 1024);
    this.#tokens = new Float64Array(capacity);
    this.#lastMs = new Float64Array(capacity);
    this.#used = new Uint8Array(capacity);
  }

  /** Keys held: those whose buckets are not full, at most `maxKeys`. */
  get size(): number {
    return this.#slots.size;
  }

  /**
   * Takes `n` tokens from `key`'s bucket if they are there (and no one is waiting on it). The
   * per-request hot path: `key` is trusted to be a string.
   */
  take(key: string, n = 1): RateLimitDecision {
    if (!(n >= 0 && n < Infinity)) checkNumber('n', n, { min: 0 });
    const nowMs = this.#clock.now();
    if (this.rate === Infinity) return { allowed: true, limit: this.burst, remaining: Math.floor(this.burst), resetMs: 0, retryAfterMs: 0 };
    const waiting = this.#waiting.get(key);
    if (waiting !== undefined) return this.#decide(waiting.tryAcquire(n), waiting.tokens(), n);
    let slot = this.#slots.get(key);
    let tokens: number;
    if (slot === undefined) {
      if (n > this.burst) return this.#decide(false, this.burst, n);
      tokens = this.burst;
      slot = this.#insert(key);
    } else {
      tokens = this.#refilled(slot, nowMs);
      this.#used[slot] = 1;
    }
    const allowed = tokens >= n;
    if (allowed) tokens -= n;
    this.#tokens[slot] = tokens;
    if (nowMs > this.#lastMs[slot]!) this.#lastMs[slot] = nowMs;
    return this.#decide(allowed, tokens, n);
  }

  /** Takes `n` tokens from `key` if they are there; whether it did. */
  tryAcquire(key: string, n = 1): boolean {
    return this.take(key, n).allowed;
  }

  /**
   * Resolves once `n` tokens of `key` are granted, after every waiter on that key before it — with
   * {@link TokenBucket.acquire}'s semantics: `maxWaitMs` fails at once, an abort refunds exactly.
   */
  async acquire(key: string, n = 1, options: AcquireOptions = {}): Promise<void> {
    checkString('key', key);
    if (this.rate === Infinity) return;
    let bucket = this.#waiting.get(key);
    if (bucket === undefined) {
      if (this.take(key, n).allowed) return;
      const nowMs = this.#clock.now();
      const slot = this.#slots.get(key);
      const tokens = slot === undefined ? this.burst : this.#refilled(slot, nowMs);
      bucket = new TokenBucket({ rate: this.rate, burst: this.burst, clock: this.#clock, tokens: Math.max(0, tokens) });
      this.#waiting.set(key, bucket);
    }
    try {
      await bucket.acquire(n, options);
    } finally {
      this.#settleWaiting(key, bucket);
    }
  }

  /** Once a key's queue is empty, its count goes back to the shared arrays and the bucket is dropped. */
  #settleWaiting(key: string, bucket: TokenBucket): void {
    if (bucket.waiting > 0 || this.#waiting.get(key) !== bucket) return;
    this.#waiting.delete(key);
    const tokens = Math.max(0, bucket.tokens());
    let slot = this.#slots.get(key);
    if (tokens >= this.burst - EPSILON_TOKENS) {
      if (slot !== undefined) this.#drop(key, slot);
      return;
    }
    slot ??= this.#insert(key);
    this.#tokens[slot] = tokens;
    this.#lastMs[slot] = this.#clock.now();
  }

  #decide(allowed: boolean, tokens: number, n: number): RateLimitDecision {
    const { rate, burst } = this;
    return {
      allowed,
      limit: burst,
      remaining: Math.max(0, Math.floor(tokens + EPSILON_TOKENS)),
      resetMs: tokens >= burst ? 0 : rate === 0 ? Infinity : ((burst - tokens) * 1000) / rate,
      retryAfterMs: allowed ? 0 : n > burst ? Infinity : tokens >= n ? 0 : rate === 0 ? Infinity : ((n - tokens) * 1000) / rate,
    };
  }

  /** The slot's count at `nowMs`: lazy refill, capped; a clock read earlier than the last update adds nothing. */
  #refilled(slot: number, nowMs: number): number {
    const elapsedMs = nowMs - this.#lastMs[slot]!;
    const tokens = this.#tokens[slot]! + (elapsedMs > 0 ? (elapsedMs * this.rate) / 1000 : 0);
    return tokens > this.burst ? this.burst : tokens;
  }

  /** A slot for a new key: first making room (full buckets go, then the least recently used). */
  #insert(key: string): number {
    this.#sweepFull(SWEEP_STEPS);
    if (this.#slots.size >= this.#maxKeys) this.#evict();
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#nextSlot++;
      if (slot >= this.#tokens.length) this.#grow();
    }
    this.#slots.set(key, slot);
    this.#lastMs[slot] = this.#clock.now();
    this.#used[slot] = 0;
    return slot;
  }

  /** Looks at up to `steps` keys from where the last look ended, dropping those whose bucket is full again. */
  #sweepFull(steps: number): void {
    const nowMs = this.#clock.now();
    for (let i = 0; i < steps; i++) {
      this.#sweep ??= this.#slots.entries();
      const next = this.#sweep.next();
      if (next.done === true) {
        this.#sweep = undefined;
        return;
      }
      const [key, slot] = next.value;
      if (this.#refilled(slot, nowMs) >= this.burst - EPSILON_TOKENS && !this.#waiting.has(key)) this.#drop(key, slot);
    }
  }

  /** Evicts one key: the oldest not used since the hand last passed it (second chance), full ones first. */
  #evict(): void {
    const nowMs = this.#clock.now();
    for (;;) {
      const [key, slot] = this.#slots.entries().next().value!;
      if (this.#used[slot] === 1 && this.#refilled(slot, nowMs) < this.burst - EPSILON_TOKENS) {
        // Used since the hand last came by: to the back of the line, its bit cleared.
        this.#used[slot] = 0;
        this.#slots.delete(key);
        this.#slots.set(key, slot);
        continue;
      }
      this.#drop(key, slot);
      return;
    }
  }

  #drop(key: string, slot: number): void {
    this.#slots.delete(key);
    this.#free.push(slot);
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#tokens.length * 2);
    const grow = <T extends Float64Array | Uint8Array>(from: T, make: (length: number) => T): T => {
      const to = make(capacity);
      to.set(from);
      return to;
    };
    this.#tokens = grow(this.#tokens, (length) => new Float64Array(length));
    this.#lastMs = grow(this.#lastMs, (length) => new Float64Array(length));
    this.#used = grow(this.#used, (length) => new Uint8Array(length));
  }
}
