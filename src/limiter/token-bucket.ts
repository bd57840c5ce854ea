import { systemClock, type Clock } from '../clock.ts';
import { checkClock, checkNumber, checkObject, type NumberRange } from '../validation/checks.ts';
import { brandedGuard } from '../error-brand.ts';

/** What `new TokenBucket()` takes: the rate and burst, and the clock they run on. */
export interface TokenBucketOptions {
  /** Tokens added per second. `Infinity` allows everything; `0` allows only the initial burst. */
  readonly rate: number;
  /** Capacity in tokens: the most that can be taken at one instant. */
  readonly burst: number;
  /** Tokens at the start, in [0, burst]. @default burst (the bucket starts full) */
  readonly tokens?: number;
  /** Time source. Tests pass a `ManualClock`. @default systemClock */
  readonly clock?: Clock;
}

/** What `TokenBucket.reserve()` takes besides the count: a rank among the queued reservations. */
export interface ReserveOptions {
  /** Refuse (not ok, nothing taken) when the reservation could act only after this many ms. @default Infinity (no limit) */
  readonly maxDelayMs?: number;
}

/** What `TokenBucket.acquire()` takes besides the count: a signal, the longest wait, a rank. */
export interface AcquireOptions {
  /** Aborting it rejects the wait with `signal.reason` and gives the waiter's place back. */
  readonly signal?: AbortSignal;
  /**
   * Reject at once with {@link MaxWaitExceededError}, taking nothing, when the tokens cannot be
   * granted within this many ms. (An AbortSignal cannot tell its deadline ahead, this can.)
   * @default Infinity (no limit)
   */
  readonly maxWaitMs?: number;
  /**
   * Where the waiter lines up: the queue is served in order of rank (lower first), then of arrival.
   * Unranked, a waiter lines up behind every ranked one, first come first served — so without ranks
   * the queue is plain FIFO. A ranked waiter never goes ahead of a `reserve()` made before it (whose
   * time is fixed), and those it goes ahead of wait longer; their own `maxWaitMs` was checked when
   * they lined up. The pipeline ranks an article's calls by the order the articles started, so
   * work under way finishes before work started after it.
   * @default Infinity (unranked)
   */
  readonly rank?: number;
}

/** The outcome of {@link TokenBucket.reserve}, like x/time/rate's `Reservation`. */
export interface Reservation {
  /** False when the tokens can never come in time (n > burst, rate 0, or beyond `maxDelayMs`); nothing was taken. */
  readonly ok: boolean;
  /** How long to wait from the moment of reserving before acting; `Infinity` when not ok. */
  readonly delayMs: number;
  /** The clock instant at which the holder may act; `Infinity` when not ok. */
  readonly timeToActMs: number;
  /**
   * Gives the tokens back if the time to act has not passed: all of them, minus those that other
   * reservations made after this one already count on. Idempotent; a no-op when not ok.
   */
  cancel(): void;
}

/** `acquire()` could not be served within `maxWaitMs` (or ever, at rate 0); nothing was taken. */
export class MaxWaitExceededError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'MaxWaitExceededError';

  constructor(
    /** The wait the bucket would have needed, in ms (`Infinity` at rate 0). */
    readonly waitMs: number,
    /** The longest wait the caller allowed, in ms. */
    readonly maxWaitMs: number,
  ) {
    super(
      Number.isFinite(waitMs)
        ? `rate limiter wait of ${waitMs.toFixed(1)} ms would exceed the limit of ${maxWaitMs.toFixed(1)} ms`
        : 'rate limiter cannot grant: rate is 0 and the burst is spent',
    );
  }
}

/**
 * Whether `error` is a {@link MaxWaitExceededError}, from this copy of the package or another one
 * loaded beside it: limits built on a bucket of their own copy still fail a call's wait readably.
 */
export const isMaxWaitExceededError = brandedGuard(MaxWaitExceededError, 'MaxWaitExceededError');

/**
 * A queue entry: an `acquire()` waiter, or a marker for a `reserve()` made while waiters were
 * queued (its tokens are charged and its time is fixed; the marker only keeps queue order so the
 * waiters ahead of it are not delayed by it).
 */
interface Entry {
  readonly n: number;
  readonly waiter: boolean;
  /** See {@link AcquireOptions.rank}; `Infinity` for markers and unranked waiters. */
  readonly rank: number;
  /**
   * Its share of `#queuedTokens`: `n`, plus, on a marker, tokens refunded by entries removed ahead
   * of it. Crediting them to the marker rather than to the count lets the waiters between the
   * removed entry and the marker move up, while the marker's time, which cannot move, keeps
   * everyone behind it — newcomers included — where they were.
   */
  weight: number;
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  prev: Entry | undefined;
  next: Entry | undefined;
  queued: boolean;
}

// Float arithmetic over due instants leaves residues around 1e-12 tokens; a grant this close to
// due is not early in any measurable sense (1e-9 tokens is a nanosecond at a million tokens/s).
const EPSILON_TOKENS = 1e-9;
const RESOLVED: Promise<void> = Promise.resolve();
const noop = () => {};

/**
 * A token bucket with the semantics of golang.org/x/time/rate's `Limiter`, plus a fair waiting queue.
 *
 * The bucket holds up to `burst` tokens and refills at `rate` tokens per second, lazily: the count
 * is a function of the clock, computed when asked. It starts full. Three ways to take tokens:
 *
 * - {@link acquire} — wait until the tokens are granted. Prefer this one. Waiters are served
 *   strictly first-in-first-out, never before their time; one timer per bucket serves the head of
 *   the queue. An aborted waiter gives its place back: the ones behind it move up and its tokens
 *   are refunded exactly.
 * - {@link tryAcquire} — take the tokens now or not at all (x/time/rate's `AllowN`).
 * - {@link reserve} — take the tokens now, possibly going into debt, and be told when to act
 *   (`ReserveN`); `cancel()` refunds like `Reservation.Cancel`.
 *
 * Every taker is charged at once, so the count goes negative while waiters or reservations are
 * outstanding and a newcomer always lines up behind them. Because a grant is due at the instant the
 * refill covers it — not when a timer happens to fire — a late timer delays a grant but never loses
 * a token. Time is read only through the clock, so a `ManualClock` makes all of it exact.
 *
 * Safe to share by any number of concurrent callers (one event loop, no locks needed).
 */
export class TokenBucket {
  readonly #clock: Clock;
  #rate: number;
  #burst: number;
  // The fields the takes write start as numbers, not `undefined`: V8 then keeps them as
  // doubles updated in place, where a field that began `undefined` gets a fresh heap number on each
  // write (about a tenth of what an at-once `acquire()` costs).
  /** Token count at `#lastMs`; negative while charged waiters and reservations are outstanding. */
  #tokens = 0;
  #lastMs = 0;
  /**
   * The latest instant of any take with a fixed time, as x/time/rate's `lastEvent`: a reservation's
   * time to act, or the instant a take was granted at once. What `cancel()` must respect.
   */
  #lastEventMs = 0;
  #head: Entry | undefined;
  #tail: Entry | undefined;
  #queuedCount = 0;
  /** Sum of `n` over the queue (waiters and reservation markers). */
  #queuedTokens = 0;
  #cancelTimer: () => void = noop;
  #timerDueMs = Number.NaN;

  constructor(options: TokenBucketOptions) {
    checkObject('options', options);
    const { rate, burst } = options;
    checkNumber('rate', rate, RATE);
    checkNumber('burst', burst, COUNT);
    const tokens = options.tokens ?? burst;
    checkNumber('tokens', tokens, { min: 0, max: burst });
    const clock = options.clock ?? systemClock;
    checkClock('clock', clock);
    this.#clock = clock;
    this.#rate = rate;
    this.#burst = burst;
    this.#tokens = tokens;
    this.#lastMs = this.#clock.now();
    this.#lastEventMs = this.#lastMs;
  }

  /** Tokens per second. */
  get rate(): number {
    return this.#rate;
  }

  /** The most tokens the bucket holds (and so grants at once). */
  get burst(): number {
    return this.#burst;
  }

  /** Number of `acquire()` calls waiting. */
  get waiting(): number {
    return this.#queuedCount;
  }

  /** Tokens available now; negative while waiters or reservations are outstanding. */
  tokens(): number {
    return this.#tokensAt(this.#clock.now());
  }

  /**
   * Milliseconds until the refill has paid every outstanding charge and produced `n` tokens more:
   * 0 when they are there now, `Infinity` at rate 0 without them. For `n` up to the burst that is
   * when a newcomer's take of `n` would be granted; `msUntil(burst)` is the time until the bucket
   * is full again; a larger `n` is when the last of `n` single takes would be.
   */
  msUntil(n: number): number {
    checkNumber('n', n, COUNT);
    if (this.#rate === Infinity) return 0;
    return this.#msFor(n - this.#tokensAt(this.#clock.now()));
  }

  /**
   * Takes `n` tokens if they are available now and nobody is queued ahead; returns whether it did.
   */
  tryAcquire(n = 1): boolean {
    if (!isCount(n)) checkNumber('n', n, COUNT);
    return this.#take(n, this.#now(), 0, 0) === 0;
  }

  /**
   * Takes `n` tokens now, letting the count go negative, and says when the caller may act. Not ok
   * (and nothing taken) when n > burst, at rate 0 without the tokens, or when the delay would exceed
   * `maxDelayMs`.
   */
  reserve(n = 1, options: ReserveOptions = {}): Reservation {
    checkNumber('n', n, COUNT);
    const maxDelayMs = options.maxDelayMs ?? Infinity;
    checkNumber('maxDelayMs', maxDelayMs, WAIT_MS);
    const nowMs = this.#now();
    const delayMs = this.#take(n, nowMs, maxDelayMs, 0);
    if (!(delayMs >= 0)) return NOT_OK;
    const timeToActMs = nowMs + delayMs;
    // Never backwards: a refund or a rate rise can let a later take act before an earlier one,
    // and cancel() must still count every reservation that acts after the one cancelled.
    this.#lastEventMs = Math.max(this.#lastEventMs, timeToActMs);
    const marker = this.#head === undefined ? undefined : this.#enqueue(n, false, Infinity, undefined);
    return new Grant(nowMs, timeToActMs, n, this.#rate, marker, this.#cancelReservation);
  }

  /**
   * Resolves once `n` tokens are granted, after everyone queued before. Rejects at once with a
   * `RangeError` when n > burst, with {@link MaxWaitExceededError} when the grant cannot come within
   * `maxWaitMs`, and with `signal.reason` when the signal aborts (before or while waiting).
   */
  acquire(n = 1, options: AcquireOptions = {}): Promise<void> {
    if (!isCount(n)) checkNumber('n', n, COUNT);
    const { signal } = options;
    const maxWaitMs = options.maxWaitMs ?? Infinity;
    if (typeof maxWaitMs !== 'number' || !(maxWaitMs >= 0)) checkNumber('maxWaitMs', maxWaitMs, WAIT_MS);
    const rank = options.rank ?? Infinity;
    if (typeof rank !== 'number' || Number.isNaN(rank)) checkNumber('rank', rank, RANK);
    if (signal?.aborted) return Promise.reject(signal.reason);
    const nowMs = this.#now();
    // The waiter goes in front of every waiter ranked after it, up to the last fixed reservation.
    let before: Entry | undefined;
    let behindTokens = 0;
    for (let entry = this.#tail; entry?.waiter && entry.rank > rank; entry = entry.prev) {
      before = entry;
      behindTokens += entry.weight;
    }
    const waitMs = this.#take(n, nowMs, maxWaitMs, behindTokens);
    // Granted at once, with no queue for it to go through.
    if (waitMs === 0 && this.#head === undefined) return RESOLVED;
    if (!(waitMs >= 0)) {
      return Promise.reject(
        Number.isNaN(waitMs)
          ? new RangeError(`Cannot acquire ${n} tokens: more than the burst of ${this.#burst}`)
          : new MaxWaitExceededError(-waitMs, maxWaitMs),
      );
    }
    const entry = this.#enqueue(n, true, rank, before);
    const promise = new Promise<void>((resolve, reject) => {
      entry.resolve = resolve;
      entry.reject = reject;
    });
    if (signal !== undefined) {
      entry.signal = signal;
      entry.onAbort = () => this.#abort(entry);
      signal.addEventListener('abort', entry.onAbort, { once: true });
    }
    // A ranked waiter that goes in front of the whole queue may be covered already.
    if (entry === this.#head) this.#grantDue(nowMs);
    return promise;
  }

  /**
   * Settles a past take against what it really cost: a positive `tokens` gives that many back
   * (capped at burst, moving queued waiters up), a negative one takes them now even into debt
   * (delaying the queue). For costs only known after the call, like an LLM's token usage.
   */
  adjust(tokens: number): void {
    checkNumber('tokens', tokens);
    if (tokens === 0 || this.#rate === Infinity) return;
    const nowMs = this.#clock.now();
    if (tokens > 0) this.#credit(nowMs, tokens, nextMarker(this.#head));
    else this.#charge(nowMs, this.#tokensAt(nowMs) + tokens);
    this.#grantDue(nowMs);
  }

  /** Changes the refill rate from now on; tokens accrued so far are kept and queued waiters re-timed. */
  setRate(rate: number): void {
    checkNumber('rate', rate, RATE);
    const nowMs = this.#clock.now();
    this.#charge(nowMs, this.#tokensAt(nowMs));
    this.#rate = rate;
    this.#grantDue(nowMs);
  }

  /**
   * Changes the capacity from now on. Queued waiters asking for more than the new burst can never
   * be served: they are rejected with a `RangeError` and refunded.
   */
  setBurst(burst: number): void {
    checkNumber('burst', burst, COUNT);
    const nowMs = this.#clock.now();
    this.#charge(nowMs, this.#tokensAt(nowMs));
    this.#burst = burst;
    for (let entry = this.#head, next: Entry | undefined; entry !== undefined; entry = next) {
      next = entry.next;
      if (entry.waiter && entry.n > burst) {
        this.#remove(entry, nowMs);
        entry.reject(new RangeError(`Cannot acquire ${entry.n} tokens: more than the burst of ${burst}`));
      }
    }
    this.#grantDue(nowMs);
  }

  /** The clock's reading, once every waiter due by then is granted: a take must see the queue as it stands. */
  #now(): number {
    const nowMs = this.#clock.now();
    if (this.#head !== undefined) this.#grantDue(nowMs);
    return nowMs;
  }

  /**
   * The one take behind {@link tryAcquire}, {@link reserve} and {@link acquire}, as x/time/rate's
   * `reserveN` is behind AllowN, ReserveN and WaitN. Its wait is how long the refill needs to pay
   * every charge ahead of it and its own `n`, less `aheadOfTokens` (what the waiters a ranked one
   * goes in front of were charged). Within `maxWaitMs`, `n` is charged at `nowMs` (a reading of
   * {@link #now}) and the wait returned. Tokens that are there mean nobody is queued (see
   * {@link #grantDue}): the wait is 0 and the take is granted at once. Lining up what must wait is
   * the caller's part. Refused, nothing is charged and the result is negative: minus the wait it
   * would have needed (`-Infinity` at rate 0), or NaN for n > burst, which no wait can meet.
   */
  #take(n: number, nowMs: number, maxWaitMs: number, aheadOfTokens: number): number {
    if (this.#rate === Infinity) return 0;
    if (n > this.#burst) return Number.NaN;
    const tokens = this.#tokensAt(nowMs) - n;
    if (tokens >= 0) {
      this.#charge(nowMs, tokens);
      // An event now, as every granted take is in x/time/rate: a cancel() under a clock set back
      // before it must not refund tokens this take already used.
      if (nowMs > this.#lastEventMs) this.#lastEventMs = nowMs;
      return 0;
    }
    const waitMs = this.#msFor(-tokens - aheadOfTokens);
    if (waitMs === Infinity || waitMs > maxWaitMs) return -waitMs;
    this.#charge(nowMs, tokens);
    return waitMs;
  }

  /** x/time/rate's `advance`: refill since the last update, capped; time going backwards adds nothing. */
  #tokensAt(nowMs: number): number {
    if (this.#rate === Infinity) return this.#burst;
    const elapsedMs = nowMs > this.#lastMs ? nowMs - this.#lastMs : 0;
    const tokens = this.#tokens + (elapsedMs * this.#rate) / 1000;
    return tokens > this.#burst ? this.#burst : tokens;
  }

  /**
   * Stores the count as of `nowMs`. The update time only moves forward: a take while the clock
   * reads earlier than the last update (a manual clock set back) must not make the refill between
   * the two count twice once the clock returns.
   */
  #charge(nowMs: number, tokens: number): void {
    this.#tokens = tokens;
    if (nowMs > this.#lastMs) this.#lastMs = nowMs;
  }

  /** How long the refill takes to produce `tokens` (≤ 0 means none needed). */
  #msFor(tokens: number): number {
    if (tokens <= 0) return 0;
    return this.#rate === 0 ? Infinity : (tokens * 1000) / this.#rate;
  }

  /** Links a new entry in before `before`, or at the tail. */
  #enqueue(n: number, waiter: boolean, rank: number, before: Entry | undefined): Entry {
    const prev = before === undefined ? this.#tail : before.prev;
    const entry: Entry = {
      n,
      waiter,
      rank,
      resolve: noop,
      reject: noop,
      signal: undefined,
      onAbort: undefined,
      weight: n,
      prev,
      next: before,
      queued: true,
    };
    if (prev === undefined) this.#head = entry;
    else prev.next = entry;
    if (before === undefined) this.#tail = entry;
    else before.prev = entry;
    this.#queuedTokens += n;
    if (waiter) this.#queuedCount++;
    return entry;
  }

  /** Unlinks an entry that will not be granted and refunds its tokens to those behind it. */
  #remove(entry: Entry, nowMs: number): void {
    const marker = nextMarker(entry.next);
    this.#unlink(entry);
    this.#credit(nowMs, entry.weight, marker);
  }

  /** Gives `tokens` to the queue up to `marker` (the next fixed reservation), or to all when none. */
  #credit(nowMs: number, tokens: number, marker: Entry | undefined): void {
    if (marker === undefined) {
      this.#charge(nowMs, Math.min(this.#tokensAt(nowMs) + tokens, this.#burst));
    } else {
      marker.weight += tokens;
      this.#queuedTokens += tokens;
    }
  }

  #unlink(entry: Entry): void {
    entry.queued = false;
    if (entry.prev === undefined) this.#head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.#tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
    this.#queuedTokens -= entry.weight;
    if (entry.waiter) this.#queuedCount--;
    if (entry.onAbort !== undefined) entry.signal!.removeEventListener('abort', entry.onAbort);
  }

  #abort(entry: Entry): void {
    if (!entry.queued) return;
    const nowMs = this.#clock.now();
    this.#remove(entry, nowMs);
    entry.reject(entry.signal!.reason);
    this.#grantDue(nowMs);
  }

  /** A reservation's `cancel()`; see {@link Reservation.cancel}. */
  readonly #cancelReservation = (grant: Grant): void => {
    const nowMs = this.#clock.now();
    if (grant.timeToActMs < nowMs) return;
    const marker = grant.marker;
    if (marker?.queued) {
      // Still behind queued waiters: those up to the next fixed reservation move up, like an abort.
      this.#remove(marker, nowMs);
      this.#grantDue(nowMs);
      return;
    }
    const restore = Math.min(grant.n, grant.n - ((this.#lastEventMs - grant.timeToActMs) * grant.rate) / 1000);
    if (restore <= 0) return;
    this.#credit(nowMs, restore, nextMarker(this.#head));
    if (grant.timeToActMs === this.#lastEventMs) {
      const previousEventMs = grant.timeToActMs - (grant.n * 1000) / grant.rate;
      if (previousEventMs >= nowMs) this.#lastEventMs = previousEventMs;
    }
    this.#grantDue(nowMs);
  };

  /** Grants every head of the queue whose tokens the refill covers by `nowMs`, then re-arms the timer. */
  #grantDue(nowMs: number): void {
    if (this.#head === undefined) {
      this.#disarm();
      return;
    }
    const tokens = this.#tokensAt(nowMs);
    for (let entry = this.#head; entry !== undefined; entry = this.#head) {
      if (!entry.waiter) {
        this.#unlink(entry);
        continue;
      }
      // Tokens are charged at enqueue, so the head is covered once the count, less what the
      // entries behind it were charged, is back to zero. Their running sum can drift a float
      // residue below its true value, which is never negative: read as no less than zero, a
      // waiter left queued always means a negative count, so a take that finds the tokens
      // there (see #take) never jumps the queue.
      const behindTokens = this.#queuedTokens - entry.weight;
      const shortfall = -(tokens + (behindTokens > 0 ? behindTokens : 0));
      if (this.#rate !== Infinity && shortfall > EPSILON_TOKENS) {
        this.#arm(nowMs, this.#msFor(shortfall));
        return;
      }
      this.#unlink(entry);
      entry.resolve();
    }
    this.#disarm();
  }

  #arm(nowMs: number, delayMs: number): void {
    const dueMs = nowMs + delayMs;
    // The same head recomputed later differs only by float rounding: re-arming for that would
    // cost a timer and invite an early fire.
    if (Math.abs(dueMs - this.#timerDueMs) < 1e-6) return;
    this.#cancelTimer();
    if (delayMs === Infinity) {
      this.#cancelTimer = noop;
      this.#timerDueMs = Number.NaN;
      return;
    }
    this.#timerDueMs = dueMs;
    this.#cancelTimer = this.#clock.setTimer(delayMs, this.#onTimer);
  }

  #disarm(): void {
    this.#cancelTimer();
    this.#cancelTimer = noop;
    this.#timerDueMs = Number.NaN;
  }

  readonly #onTimer = (): void => {
    this.#cancelTimer = noop;
    this.#timerDueMs = Number.NaN;
    this.#grantDue(this.#clock.now());
  };
}

/** A successful (or infinite-rate) reservation. */
class Grant implements Reservation {
  readonly ok = true;
  readonly delayMs: number;
  readonly timeToActMs: number;
  readonly n: number;
  /** The rate at reservation time, which the refund arithmetic is defined against. */
  readonly rate: number;
  readonly marker: Entry | undefined;
  #onCancel: ((grant: Grant) => void) | undefined;

  constructor(
    reservedAtMs: number,
    timeToActMs: number,
    n: number,
    rate: number,
    marker: Entry | undefined,
    onCancel: (grant: Grant) => void,
  ) {
    this.delayMs = timeToActMs - reservedAtMs;
    this.timeToActMs = timeToActMs;
    this.n = n;
    this.rate = rate;
    this.marker = marker;
    this.#onCancel = n === 0 || rate === Infinity ? undefined : onCancel;
  }

  cancel(): void {
    const onCancel = this.#onCancel;
    this.#onCancel = undefined;
    onCancel?.(this);
  }
}

function nextMarker(from: Entry | undefined): Entry | undefined {
  let entry = from;
  while (entry?.waiter) entry = entry.next;
  return entry;
}

const NOT_OK: Reservation = Object.freeze({ ok: false, delayMs: Infinity, timeToActMs: Infinity, cancel: noop });

// The ranges the arguments are checked against (see checkNumber); the takes' hot paths test the
// common case inline first and format an error only when it fails.
const COUNT: NumberRange = Object.freeze({ min: 0 });
const RATE: NumberRange = Object.freeze({ min: 0, finite: false, unit: 'tokens per second' });
const WAIT_MS: NumberRange = Object.freeze({ min: 0, finite: false });
const RANK: NumberRange = Object.freeze({ finite: false });

const isCount = (n: unknown): boolean => typeof n === 'number' && n >= 0 && n < Infinity;
