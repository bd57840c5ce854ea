import { systemClock, type Clock } from '../clock.ts';
import { checkClock, checkDurationMs, checkFunction, checkNumber, checkObject, expected } from '../validation/checks.ts';
import { DeliveryRate } from './delivery-rate.ts';
import { LatencySignal } from './latency-signal.ts';
import type { ProviderLimits } from './provider-limits.ts';

/** How the adaptive rate behaves unless told otherwise; see {@link AdaptiveRateOptions} for why. */
export const ADAPTIVE_DEFAULTS = Object.freeze({
  decreaseFactor: 0.8,
  quietPeriodCalls: 10,
  recoveryCalls: 150,
  clusterWindowCalls: 5,
  latencyTolerance: 2,
});

/** The tuning of an {@link AdaptiveRate}: everything but what it adapts. */
export interface AdaptiveTuning {
  /**
   * The ceiling, in calls per second; finite, > 0. The rate starts there, or at the limits' rate
   * when that is lower (see {@link AdaptiveRate}).
   * @default the request limit the limits were configured with (their `requests` spec), else the rate they have when the controller is made
   */
  readonly maxRate?: number;
  /**
   * The floor, in calls per second: no cut goes below it. In (0, maxRate].
   * @default maxRate / 100, but at least 0.1 (one call every 10 s) unless `maxRate` itself is lower
   */
  readonly minRate?: number;
  /**
   * A cut multiplies the rate by this factor when it is not known what got through (too few calls
   * succeeded lately to say); otherwise the cut goes just under that (see the class comment).
   * In (0, 1). The default is gentler than AWS adaptive retry's 0.7, which leaves too much of the quota unused.
   * @default ADAPTIVE_DEFAULTS.decreaseFactor (0.8)
   */
  readonly decreaseFactor?: number;
  /**
   * After the last 429 (and its retry-after), the rate holds for the time this many calls take at
   * the rate then, before it climbs. >= 0.
   * @default ADAPTIVE_DEFAULTS.quietPeriodCalls (10: a second at 10 calls/s, 10 ms at 1,000/s)
   */
  readonly quietPeriodCalls?: number;
  /**
   * Once climbing, the curve gets back from a full cut (`decreaseFactor`) to the peak it aims at
   * (CUBIC's K) in the time this many calls take at that rate — from a shallow cut sooner; after
   * that it rises ever faster, up to `maxRate`. More means fewer 429s (about one per cycle) but a
   * slower climb when the quota grows. > 0.
   * @default ADAPTIVE_DEFAULTS.recoveryCalls (150: 15 s at 10/s, 150 ms at 1,000/s)
   */
  readonly recoveryCalls?: number;
  /**
   * 429s within the time of this many calls after a cut belong to the cluster that caused it and
   * cut nothing, unless they say when their call was sent (see {@link RateLimitedCall.sentAtMs}). >= 0.
   * @default ADAPTIVE_DEFAULTS.clusterWindowCalls (5)
   */
  readonly clusterWindowCalls?: number;
  /**
   * For a provider that states no limits and never answers 429 ({@link AdaptiveRate.onLatency}):
   * how many times the least smoothed latency seen the smoothed latency may reach before the calls
   * are taken to queue at the server, and the rate is cut as for a 429. > 1.
   * @default ADAPTIVE_DEFAULTS.latencyTolerance (2)
   */
  readonly latencyTolerance?: number;
}

/** What `new AdaptiveRate()` takes: the limits whose request rate it moves, how it moves it, and the clock. */
export interface AdaptiveRateOptions extends AdaptiveTuning {
  /**
   * The limits whose request rate is adapted. Limits of this process alone are the controller's to
   * set; limits shared with other processes (their rate cut by another) are followed — see the class comment.
   */
  readonly limits: ProviderLimits;
  /** Time source; pass the limits'. @default systemClock */
  readonly clock?: Clock;
}

/** What is known about a 429. Every field is optional. */
export interface RateLimitedCall {
  /** The provider's retry-after, in ms: the rate does not climb again before it has passed. */
  readonly retryAfterMs?: number | undefined;
  /**
   * Clock reading when the rejected call was sent. When given, a 429 for a call sent at or before
   * the last cut is recognised exactly as part of that cut's cluster, instead of by `clusterWindowCalls`.
   */
  readonly sentAtMs?: number | undefined;
}

/** Told after every move of the adaptive rate: the new rate and why it moved. */
export interface RateChangeEvent {
  /** The new rate, in calls per second. */
  readonly rate: number;
  /** `'throttled'`: cut after a 429; `'probe'`: raised after a quiet period. */
  readonly reason: 'throttled' | 'probe';
}

/** Called after every move of the adaptive rate, synchronously. */
export type RateChangeListener = (event: RateChangeEvent) => void;

/** One call every 10 s: slow enough to be harmless, frequent enough to notice the quota is back. */
const MIN_DEFAULT_MIN_RATE = 0.1;
/**
 * Raises smaller than this share of the current rate wait until the curve has gone further, so a
 * recovery is a couple of dozen steps (and events), not one per successful call.
 */
const MIN_PROBE_SHARE = 0.01;
/** Successes whose send instants say what gets through; fewer than the minimum say nothing. */
const DELIVERY_SAMPLES = 32;
const MIN_DELIVERY_SAMPLES = 8;
/** Successes sent longer ago than this many calls' time at the current rate are not news. */
const DELIVERY_HORIZON_CALLS = 64;
/** A shallow cut goes this share under what got through: near enough for the dip to cost little, far enough not to be refused at once again. */
const DELIVERY_MARGIN = 0.03;
/**
 * Adapts a provider's request rate ({@link ProviderLimits.rate}) to a quota that is unknown or
 * lower than configured: cut on a 429, climb back along a CUBIC curve after a quiet period, never
 * above the configured `maxRate` nor below `minRate` — and when the provider states its limit in
 * its headers ({@link onStatedLimit}), take that instead of searching.
 *
 * The model, after TCP CUBIC (and the AWS SDKs' adaptive retry mode, which applies it to request
 * rates), with one thing CUBIC cannot see: what got through. A 429 starts a cut, and empties the
 * request bucket (the provider has nothing left: tokens still held would draw more 429s). If about
 * all that was sent lately got through (the last successes, counted as they come back since the
 * last cut, span about the rate), the climb has just reached the quota — or, on a real clock, a
 * send that left late drew the 429, a burst-1 quota refusing the call after a late one — and the
 * rate is about right: it comes down only 3 % under what got through, and the climb aims at that.
 * If much less got through, the quota is being overrun, and what gets through then says little (a
 * paced client just over a burst-1 quota gets about half of it through): the rate is cut to
 * `rate · β` (β = `decreaseFactor`), aiming at the rate that drew the 429, as CUBIC does. Once the
 * quiet period has passed since the last 429 (and its retry-after), the rate follows
 *
 *     rate(t) = peak + C · (t − K)³,   t = ms since the climb began,
 *
 * concave up to `peak` — fast at first, then lingering just under it — and convex beyond, probing
 * for more. C is set so that a full cut (`peak · β`) gets back in `recoveryCalls` calls' time; a
 * shallow one gets back sooner (K is the cube root of its depth over C), and every climb probes
 * past the peak at the same pace. The quiet period, the recovery and the cluster window are counted
 * in calls (the time so many calls take at the rate concerned), not in seconds: the search takes
 * the same number of calls, and draws the same share of 429s, at 10 calls/s and at 1,000. The climb
 * is driven by successes, so an idle client neither probes nor needs a timer.
 *
 * Under a limit the provider stated ({@link onStatedLimit}) there is no factor: the quota is known,
 * and a 429 means it ran dry (an overload before it was known left it empty, sends bunched on the
 * way) or that someone else draws on it; the rate comes down 3 % under what got through since the
 * last cut — or under the rate, when too little came back to say — and climbs back to the limit.
 * A blind cut there, from a cold start, left 19–23 % of the quota unused for most of a
 * 300-call run.
 *
 * Why: against a steady quota every cycle ends in about one 429, so the 429 share is set by the
 * cycle length and the throughput by how far under the quota the cycle dips. A fixed factor dips
 * by it every time: β 0.8 averages 93 % of the quota (AWS's β 0.7 with C 0.4, 87 % with 5.7 %
 * 429s). Coming down 3 % under what got through dips by 3 %: in bench/adaptive.bench.ts 97–98 %
 * of the quota with under 1 % 429s on the ManualClock, at 10/s, 40/s, 200/s and 1,000/s alike.
 *
 * Several calls are in flight at once, so one overload comes back as a cluster of 429s; only the
 * first cuts. The others are known by their send time (`sentAtMs`, exact) or else by arriving
 * within `clusterWindowCalls` calls' time of the cut. Every 429 restarts the quiet period.
 *
 * Call {@link onRateLimited} for each 429 and {@link onSuccess} for each call that was not
 * throttled. Safe to share by every worker using the limits (one event loop, no locks needed).
 *
 * **Shared limits.** When the limits are shared by several processes (a quota kept in Redis), each
 * has its own controller and all set one rate. Each event first reads the limits' rate: lower than
 * this controller's means another process cut — taken as a cut made now from this rate, so the 429s
 * of that same overload are absorbed here too and the climb starts after a quiet period; higher
 * means another process climbed — taken, the curve kept. Only a cut below the rate read, or a raise
 * above it, is written back, so one process's climb is never pulled down by another's slower one.
 * A controller made while the shared rate is cut starts there, as if it had just made that cut,
 * instead of resetting the quota's rate to `maxRate`.
 */
export class AdaptiveRate {
  readonly #limits: ProviderLimits;
  readonly #clock: Clock;
  readonly #maxRate: number;
  readonly #minRate: number;
  readonly #decreaseFactor: number;
  readonly #quietPeriodCalls: number;
  readonly #recoveryCalls: number;
  readonly #clusterWindowCalls: number;
  /** The ceiling now: `maxRate`, or lower when the provider states a lower limit. */
  #ceiling: number;
  /** The provider has stated its limit: the quota is known, not searched for. */
  #stated = false;
  #rate: number;
  /** What the climb aims at: the rate that drew the last cut's 429, or what got through then when that was less (CUBIC's W_max). */
  #peakRate: number;
  /** The rate the last cut went to: the curve climbs from it to the peak. */
  #floorRate: number;
  readonly #delivery = new DeliveryRate(DELIVERY_SAMPLES);
  #cutAtMs = -Infinity;
  /** The rate at the last cut, which the cluster window is measured in. */
  #cutRate = Infinity;
  /** No climbing before this instant: the end of the quiet period after the last 429. */
  #holdUntilMs = -Infinity;
  #decreases = 0;
  #increases = 0;
  #listeners: RateChangeListener[] = [];
  readonly #latency: LatencySignal;

  constructor(options: AdaptiveRateOptions) {
    checkObject('options', options);
    const { limits, clock = systemClock } = options;
    if (limits === null || typeof limits !== 'object' || typeof limits.setRate !== 'function') {
      throw expected('limits', 'ProviderLimits', limits);
    }
    const maxRate = options.maxRate ?? limits.specs?.find((spec) => spec.kind === 'requests')?.rate ?? limits.rate;
    checkNumber('maxRate', maxRate, { min: 0, minExclusive: true, unit: 'calls per second' });
    const {
      minRate = Math.min(maxRate, Math.max(maxRate / 100, MIN_DEFAULT_MIN_RATE)),
      decreaseFactor = ADAPTIVE_DEFAULTS.decreaseFactor,
      quietPeriodCalls = ADAPTIVE_DEFAULTS.quietPeriodCalls,
      recoveryCalls = ADAPTIVE_DEFAULTS.recoveryCalls,
      clusterWindowCalls = ADAPTIVE_DEFAULTS.clusterWindowCalls,
      latencyTolerance = ADAPTIVE_DEFAULTS.latencyTolerance,
    } = options;
    checkNumber('minRate', minRate, { min: 0, minExclusive: true, max: maxRate, unit: 'calls per second' });
    checkNumber('decreaseFactor', decreaseFactor, { min: 0, minExclusive: true, max: 1, maxExclusive: true });
    checkNumber('quietPeriodCalls', quietPeriodCalls, { min: 0 });
    checkNumber('recoveryCalls', recoveryCalls, { min: 0, minExclusive: true });
    checkNumber('clusterWindowCalls', clusterWindowCalls, { min: 0 });
    checkNumber('latencyTolerance', latencyTolerance, { min: 1, minExclusive: true });
    checkClock('clock', clock);
    this.#latency = new LatencySignal(latencyTolerance);

    this.#limits = limits;
    this.#clock = clock;
    this.#maxRate = maxRate;
    this.#minRate = minRate;
    this.#decreaseFactor = decreaseFactor;
    this.#quietPeriodCalls = quietPeriodCalls;
    this.#recoveryCalls = recoveryCalls;
    this.#clusterWindowCalls = clusterWindowCalls;
    this.#ceiling = maxRate;
    this.#rate = maxRate;
    this.#peakRate = maxRate;
    this.#floorRate = maxRate * this.#decreaseFactor;
    if (limits.rate > maxRate) limits.setRate(maxRate);
    else if (limits.rate < maxRate) {
      // Cut already (by another process sharing the limits): start there, as if just cut from the
      // rate that cut came from, rather than reset the shared rate to the ceiling.
      this.#rate = Math.min(maxRate, limits.rate / this.#decreaseFactor);
      this.#follow(clock.now());
    }
  }

  /** The rate now, in calls per second (the limits'). */
  get rate(): number {
    return this.#rate;
  }

  /** The ceiling, in calls per second. */
  get maxRate(): number {
    return this.#maxRate;
  }

  /** The floor, in calls per second. */
  get minRate(): number {
    return this.#minRate;
  }

  /** Cuts made (429s that lowered the rate; not those absorbed as part of a cluster or at the floor). */
  get decreases(): number {
    return this.#decreases;
  }

  /** Raises made while climbing. */
  get increases(): number {
    return this.#increases;
  }

  /**
   * A call came back 429. Cuts the rate by `decreaseFactor` unless the 429 belongs to the cluster
   * of the last cut; either way the quiet period starts over.
   */
  onRateLimited(info: RateLimitedCall = {}): void {
    checkObject('info', info);
    const { retryAfterMs, sentAtMs } = info;
    if (retryAfterMs !== undefined) checkDurationMs('info.retryAfterMs', retryAfterMs);
    if (sentAtMs !== undefined) checkNumber('info.sentAtMs', sentAtMs);
    const nowMs = this.#clock.now();
    this.#follow(nowMs);
    // The provider has nothing left now: tokens this client still holds would only draw more 429s.
    this.#limits.lowerTo('requests', 0);
    this.#holdUntilMs = Math.max(this.#holdUntilMs, nowMs + this.#callsMs(this.#quietPeriodCalls, this.#rate), nowMs + (retryAfterMs ?? 0));
    const sameCluster =
      sentAtMs === undefined ? nowMs - this.#cutAtMs < this.#callsMs(this.#clusterWindowCalls, this.#cutRate) : sentAtMs <= this.#cutAtMs;
    if (sameCluster) return;

    const cutRate = Math.max(this.#minRate, this.#cutTarget(nowMs));
    this.#floorRate = cutRate;
    this.#markCut(nowMs);
    if (cutRate === this.#rate) return;
    this.#decreases += 1;
    this.#set(cutRate, 'throttled');
  }

  /**
   * A call got through after `latencyMs`, from a provider that states no limits and never answers
   * 429 (a self-hosted server that queues what is over its capacity): the only sign of overload
   * is the latency. When the smoothed latency passes `latencyTolerance` times the least it has been,
   * the calls queue at the server, and the rate is cut as a 429 would cut it (a call sent before
   * the last cut belongs to it); while the queue drains after a cut, no more. Call it before
   * {@link onSuccess} for the same call; the latency of a provider that does state its limits is no news.
   */
  onLatency(call: { readonly latencyMs: number; readonly sentAtMs?: number | undefined }): void {
    checkObject('call', call);
    checkDurationMs('call.latencyMs', call.latencyMs);
    if (this.#latency.record(call.latencyMs)) this.onRateLimited({ sentAtMs: call.sentAtMs });
  }

  /**
   * Where a 429 that starts a cut brings the rate, and the peak the climb then aims at. What got
   * through lately says how deep to cut: about all that was sent, the climb has just reached the
   * quota (or, on a real clock, a send that left late drew the 429, a burst-1 quota refusing the
   * call after a late one) — the rate is about right: come down only `DELIVERY_MARGIN` under what
   * got through, and aim at the rate reached, or at the peak aimed at before when that is higher
   * (one late send below the quota does not lower the aim). Much less than was sent, the quota is
   * being overrun — and then what gets through tells little (a paced client just over a burst-1
   * quota gets about half of it through): cut by the factor, and aim at the rate that drew the 429,
   * as CUBIC does. Not knowing, the same. Under a stated limit, never the factor (see the class
   * comment). Successes from before the last cut tell of another rate: only those since count.
   */
  #cutTarget(nowMs: number): number {
    const rate = this.#rate;
    const sinceMs = Math.max(this.#cutAtMs, nowMs - this.#callsMs(DELIVERY_HORIZON_CALLS, rate));
    const delivered = this.#delivery.perSecond(sinceMs, MIN_DELIVERY_SAMPLES);
    if (this.#stated) {
      this.#peakRate = delivered === undefined ? rate : Math.min(rate, delivered);
      return this.#peakRate * (1 - DELIVERY_MARGIN);
    }
    const full = rate * this.#decreaseFactor;
    const shallow = delivered === undefined ? full : Math.min(rate, delivered) * (1 - DELIVERY_MARGIN);
    if (shallow <= full) {
      this.#peakRate = rate;
      return full;
    }
    this.#peakRate = Math.min(rate, delivered!);
    return shallow;
  }

  /** A call succeeded (was not throttled). After the quiet period, moves the rate up the curve. */
  onSuccess(): void {
    const nowMs = this.#clock.now();
    this.#delivery.record(nowMs);
    if (this.#limits.rate !== this.#rate) this.#follow(nowMs);
    if (this.#rate >= this.#ceiling) return;
    if (nowMs < this.#holdUntilMs) return;
    const target = Math.min(this.#ceiling, this.#curve(nowMs - this.#holdUntilMs));
    if (target < this.#ceiling && target - this.#rate < this.#rate * MIN_PROBE_SHARE) return;
    this.#increases += 1;
    this.#set(target, 'probe');
  }

  /**
   * The provider said what its request limit is, in calls per second (its rate-limit headers'
   * limit over their window): no need to search for it. The rate goes to it at once (never above
   * `maxRate`) and stays there unless 429s say someone else is using the same quota; a limit
   * stated again later (the provider changed it) moves it again.
   */
  onStatedLimit(ratePerSecond: number): void {
    checkNumber('ratePerSecond', ratePerSecond, { min: 0, minExclusive: true, unit: 'calls per second' });
    const ceiling = Math.max(this.#minRate, Math.min(this.#maxRate, ratePerSecond));
    this.#stated = true;
    if (ceiling === this.#ceiling) return;
    const wasAtCeiling = this.#rate >= this.#ceiling;
    this.#ceiling = ceiling;
    this.#peakRate = Math.min(this.#peakRate, ceiling);
    this.#floorRate = Math.min(this.#floorRate, ceiling);
    if (this.#rate > ceiling) {
      // Coming down to a stated limit is a cut made now: the 429s of calls sent before it, at the
      // rate that was too fast, belong to it and cut nothing more.
      this.#markCut(this.#clock.now());
      this.#set(ceiling, 'throttled');
    } else if (wasAtCeiling) this.#set(ceiling, 'probe');
  }

  /**
   * Takes the limits' rate when another process sharing them changed it: a lower one as a cut made
   * now from this controller's rate (its 429s are that cut's cluster, the climb waits a quiet
   * period); a higher one as it is, the curve kept. Neither is written back or counted here.
   */
  #follow(nowMs: number): void {
    const shared = this.#limits.rate;
    if (shared === this.#rate) return;
    if (shared < this.#rate) {
      this.#markCut(nowMs);
      this.#peakRate = this.#rate;
      this.#floorRate = shared;
      this.#holdUntilMs = Math.max(this.#holdUntilMs, nowMs + this.#callsMs(this.#quietPeriodCalls, shared));
    }
    this.#rate = shared;
  }

  /** A cut from the rate now is made at `nowMs`: the 429s of its cluster are told by it. */
  #markCut(nowMs: number): void {
    this.#cutAtMs = nowMs;
    this.#cutRate = this.#rate;
  }

  /** How long `calls` calls take at `rate`, in ms. */
  #callsMs(calls: number, rate: number): number {
    return (calls * 1000) / rate;
  }

  /**
   * Calls `listener` after every rate change, synchronously, inside the `onRateLimited()` or
   * `onSuccess()` call that made it (so a listener that throws throws there; the change stands).
   * Returns a function that removes it.
   */
  onChange(listener: RateChangeListener): () => void {
    checkFunction('listener', listener);
    // Wrapped, so the same function added twice is two subscriptions, each removed by its own dispose.
    const entry: RateChangeListener = (event) => listener(event);
    this.#listeners = [...this.#listeners, entry];
    return () => {
      this.#listeners = this.#listeners.filter((candidate) => candidate !== entry);
    };
  }

  /**
   * The CUBIC curve `climbMs` into the climb, TCP CUBIC's `W(t) = C · (t − K)³ + W_max`: the cut's
   * rate at 0, the peak at K, convex beyond. C is set so that a cut by the full factor (`peak · β`)
   * gets back in `recoveryCalls` calls' time at the peak rate; a shallower cut gets back sooner
   * (K is the cube root of its depth over C), and every climb probes past the peak at the same pace.
   */
  #curve(climbMs: number): number {
    const recoveryMs = this.#callsMs(this.#recoveryCalls, this.#peakRate);
    const c = (this.#peakRate * (1 - this.#decreaseFactor)) / recoveryMs ** 3;
    const backMs = Math.cbrt(Math.max(0, this.#peakRate - this.#floorRate) / c);
    return Math.max(this.#floorRate, this.#peakRate + c * (climbMs - backMs) ** 3);
  }

  #set(rate: number, reason: RateChangeEvent['reason']): void {
    this.#rate = rate;
    this.#limits.setRate(rate);
    const event: RateChangeEvent = { rate, reason };
    // The array is replaced, never mutated, so a listener added or removed during this round
    // takes effect from the next one.
    for (const listener of this.#listeners) listener(event);
  }
}
