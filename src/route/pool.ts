import type { Logger } from 'pino';
import { isBrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import type { Attempt } from '../gate/attempt.ts';
import type { AnswerCache } from '../cache/answer-cache.ts';
import { OneCallPerKey } from '../cache/one-call-per-key.ts';
import { attemptThrough, GATE_DEFAULTS, openScope, type CallGate, type CallScope, type GateCallOptions } from '../gate/call-gate.ts';
import { repairAfter } from '../gate/repair.ts';
import { isLimitTooSmallError, type CallCost } from '../quota/provider-limits.ts';
import { BadRequestError, RefusalError, stopsRun, type LlmRequest } from '../provider/provider.ts';
import { RetryError, RetryPolicy, type RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger } from '../validation/checks.ts';
import { combinedBacklogMs } from './pool-capacity.ts';
import type { PoolStrategy } from './pool-setup.ts';
import type { Route, RouteAnswer } from './route.ts';

/** A member of a pool going down, coming back, or dropped: what a person running the pool is told. */
export interface PoolMemberChange {
  /** The pool's name. */
  readonly pool: string;
  /** The member's provider name (never its key). */
  readonly member: string;
  /**
   * `down`: its circuit opened, and its calls go to the others; `back`: its circuit closed again;
   * `dropped`: it refused what no retry mends (the key, an empty account) and takes no more calls.
   */
  readonly change: 'down' | 'back' | 'dropped';
  /** With `dropped`: what it answered. */
  readonly error?: Error | undefined;
  /** Members still taking calls (not dropped), after this change. */
  readonly left: number;
}

/** A pool's members and how it treats them. */
export interface RoutePoolOptions {
  /** What tasks, the summary and the result lines call it. */
  readonly name: string;
  /** Its members' gates, in the order listed (what `ordered` follows). */
  readonly members: readonly CallGate[];
  /** @default "soonest" */
  readonly strategy?: PoolStrategy | undefined;
  /** With `weighted`, one per member. @default each member's request rate (1 without one) */
  readonly weights?: readonly number[] | undefined;
  /** Routes tried in order when the pool cannot serve a call. @default none */
  readonly fallback?: readonly Route[] | undefined;
  /** Attempts across members, backoff and the retry-after cap. @default RETRY_DEFAULTS, full-jitter backoff */
  readonly retry?: RetryPolicyOptions | undefined;
  /**
   * How many times a call's answer that does not parse or fit its schema is repaired — asked again,
   * through whichever member is then best, with that answer and the validator's problems — before
   * the retry policy takes it as any other failure (0: never; each repair is an attempt paid for,
   * not counted against `maxAttempts`), as a gate's `maxRepairs`.
   * @default GATE_DEFAULTS.maxRepairs (1)
   */
  readonly maxRepairs?: number | undefined;
  /**
   * Answers kept across calls, runs and processes, in front of the members (their own gates' caches
   * are not asked: the pool calls their attempts). A call is looked up under each member's key
   * (`CallGate.answerKey`: what shapes that member's answer — its vendor, model, the request as it
   * would send it), a hit under any of them ends the call, and a made answer is kept under the key
   * of the member that made it only: members that shape answers alike share a key, and one whose
   * model differs never answers with another's. Fallbacks are routes of their own, cached by
   * their own gates or pools. @default none (every call made)
   */
  readonly cache?: AnswerCache | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Told each member that goes down, comes back or is dropped, at warn level. @default silentLogger */
  readonly logger?: Logger | undefined;
  /** Told each member that goes down, comes back or is dropped. @default none */
  readonly onMemberChange?: ((change: PoolMemberChange) => void) | undefined;
  /** Draws for `weighted`, in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

/** A pool's answer says which member (or fallback) gave it. */
type PoolAnswer = RouteAnswer & { readonly servedBy: string };

interface Member {
  readonly gate: CallGate;
  readonly weight: number;
  dropped: boolean;
  /** Calls now making an attempt through it. */
  inFlight: number;
  /** Of those, calls chosen for it that are not yet in its limits' queue (which does not count them yet). */
  choosing: number;
}

/** A wait this short is none: the difference is float arithmetic, not time. */
const EPSILON_MS = 1e-6;

/**
 * Several providers of one model — keys, deployments, vendors — as one route: each call goes to a
 * member by the pool's strategy (by default the one whose limits grant it soonest, asked without
 * taking), and a retried call goes to whichever member is then best, not necessarily the same.
 *
 * The pool owns the retries: it calls its members' single-attempt path, so that a call may move
 * between members from one attempt to the next, and one backoff policy counts the attempts across
 * them. A member's own failure delays only its own next attempt at the call (the backoff, or its
 * retry-after); the retry goes to the best of the members the call has not failed on, at once,
 * and back to one it failed on only when there is no other. A member that
 * refuses what no retry mends (401, 403, no credit) is dropped; its attempt is not counted against
 * the call. A request too long for the model or refused by a content filter, the attempts spent,
 * every member dropped or down: the call goes to the fallbacks in turn, each with its own retries.
 */
export class RoutePool implements Route {
  /** The pool's name. */
  readonly name: string;
  /** How it puts each call on a member. */
  readonly strategy: PoolStrategy;
  readonly #members: readonly Member[];
  readonly #fallback: readonly Route[];
  readonly #retry: RetryPolicy;
  readonly #maxRepairs: number;
  /** The answer cache in front of the members, when there is one and a member says what shapes its answers. */
  readonly #cached: OneCallPerKey | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onMemberChange: RoutePoolOptions['onMemberChange'];
  readonly #random: () => number;
  readonly #shared: boolean;
  readonly #circuitListeners = new Set<() => void>();

  constructor(options: RoutePoolOptions) {
    const { name, members, strategy = 'soonest', weights, fallback = [] } = options;
    if (members.length === 0) throw new TypeError(`Expected the members of pool "${name}" to be at least one gate, got none`);
    this.name = name;
    this.strategy = strategy;
    this.#members = members.map((gate, index) => ({
      gate,
      weight: weights?.[index] ?? (gate.limits.rate === Infinity ? 1 : gate.limits.rate),
      dropped: false,
      inFlight: 0,
      choosing: 0,
    }));
    this.#fallback = fallback;
    this.#retry = new RetryPolicy(options.retry);
    this.#maxRepairs = options.maxRepairs ?? GATE_DEFAULTS.maxRepairs;
    checkInteger('maxRepairs', this.#maxRepairs, 0);
    this.#clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'route-pool', pool: name });
    this.#onMemberChange = options.onMemberChange;
    this.#random = options.random ?? Math.random;
    this.#shared = members.some((gate) => gate.limits.shared === true);
    const keyed = members.some((gate) => gate.provider.answerIdentity !== undefined);
    this.#cached = options.cache === undefined || !keyed ? undefined : new OneCallPerKey(options.cache, this.#logger);
    for (const member of this.#members) {
      member.gate.breaker?.onStateChange(({ from, to }) => {
        if (member.dropped) return;
        if (to === 'open' && from === 'closed') this.#tell(member, 'down');
        else if (to === 'closed') this.#tell(member, 'back');
      });
    }
  }

  /** The members' names, in the order listed. */
  get members(): readonly string[] {
    return this.#members.map((member) => member.gate.name);
  }

  /** The members still taking calls: not dropped. */
  get live(): readonly string[] {
    return this.#members.filter((member) => !member.dropped).map((member) => member.gate.name);
  }

  /**
   * Makes one call through the pool's members (retries moving between them) or, when they cannot
   * serve it, its fallbacks; the answer's `servedBy` names the provider that gave it. Rejects as
   * `CallGate.call` does, with the last failure when the fallbacks fail too.
   */
  async call(request: LlmRequest, options: GateCallOptions = {}): Promise<RouteAnswer> {
    if (this.#cached === undefined) return this.#call(request, options);
    // Each member's key, once: members that shape answers alike (keys of one vendor's model) share one.
    const byKey = new Map<string, Member>();
    for (const member of this.#members) {
      const key = member.gate.answerKey(request, options.maxOutputTokens);
      if (key !== undefined && !byKey.has(key)) byKey.set(key, member);
    }
    const keyOf = new Map([...byKey].map(([key, member]) => [member.gate.name, key]));
    const signal = options.deadline === undefined ? options.signal : options.deadline.signal;
    const { made, hit, key } = await this.#cached.call(
      [...byKey.keys()],
      signal,
      () => this.#call(request, options),
      // A fallback's answer is kept by the fallback's own cache; one that came from a cache is kept already.
      (answer) => (answer.cached === true ? undefined : keyOf.get(answer.servedBy)),
    );
    if (made !== undefined) return made;
    const { gate } = byKey.get(key)!;
    return { response: { output: hit.output }, attempts: 0, cached: true, savedNanoUsd: gate.savedNanoUsd(hit), servedBy: gate.name };
  }

  /** The call through the members (retries and repairs moving between them) and the fallbacks: the pool without its cache. */
  async #call(request: LlmRequest, options: GateCallOptions): Promise<PoolAnswer> {
    const { onAttempt, tally } = options;
    const scope = openScope(options, this.#shared);
    /** When each member that failed this call may take it again (clock instants). */
    const notBefore = new Map<Member, number>();
    // Members whose circuit refused this call since it last moved: not asked again until it does.
    const refused = new Set<Member>();
    let previousDelayMs = 0;
    let number = 1;
    let lastError: unknown;
    let asked = request;
    let repairs = 0;
    let repair = 0;
    for (;;) {
      const member = this.#choose(notBefore, refused, scope, options);
      if (member === undefined) {
        if (this.#live().length === 0 || this.#fallback.length > 0) return this.#fallBack(request, options, number - 1, lastError);
        // Every member's circuit open, and nowhere else to go: wait for the first to admit probes.
        await this.#untilCircuitMoves(this.#circuitWaitOfLive(), scope, number - 1, lastError);
        refused.clear();
        continue;
      }
      const waitMs = Math.max(0, (notBefore.get(member) ?? 0) - this.#clock.now());
      if (waitMs > 0) await sleep(this.#clock, waitMs, scope.signal);
      const attempt = await this.#attempt(member, asked, number, repair, options, scope);
      const { signal, deadlineMs } = scope;
      const aborted = signal?.aborted === true;
      const repaired = aborted ? undefined : repairAfter(attempt, asked, repairs, this.#maxRepairs, deadlineMs);
      const outcome = repaired === undefined ? this.#judge(member, attempt, aborted) : { kind: 'repair' as const };
      if (outcome.kind === 'again') {
        const decision = this.#retry.next(attempt.error, number, previousDelayMs, attempt.atMs);
        if (decision.retry) {
          notBefore.set(member, attempt.atMs + decision.delayMs);
          const next = this.#choose(notBefore, refused, scope, options);
          const nextWaitMs = next === undefined ? 0 : Math.max(0, (notBefore.get(next) ?? 0) - attempt.atMs);
          if (attempt.atMs + nextWaitMs > deadlineMs) outcome.kind = 'give-up';
          else {
            attempt.retryInMs = nextWaitMs;
            previousDelayMs = decision.delayMs;
          }
        } else outcome.kind = 'give-up';
        lastError = attempt.error;
      }
      if (attempt.called && tally !== undefined) {
        tally.calls++;
        tally.latencyMs += attempt.latencyMs;
        tally.costNanoUsd += attempt.costNanoUsd;
        if (attempt.repair > 0) tally.repairs++;
      }
      onAttempt?.(attempt);
      switch (outcome.kind) {
        case 'ok':
          return { response: attempt.response!, attempts: number, servedBy: member.gate.name };
        case 'aborted':
          throw signal!.reason;
        // Counted apart from the attempts, made at once, through whichever member is then best.
        case 'repair':
          asked = repaired!;
          repair = ++repairs;
          continue;
        case 'again':
          // A retry after an answer no repair mended asks afresh; after any other failure, the same again.
          if (attempt.outcome === 'malformed') asked = request;
          repair = 0;
          number++;
          continue;
        // Not the call's doing: the member is gone or was down; the attempt is not counted.
        case 'elsewhere':
          if (attempt.outcome === 'circuit-open') refused.add(member);
          lastError = attempt.error;
          continue;
        case 'fall-back':
          return this.#fallBack(request, options, number, attempt.error);
        case 'give-up': {
          const reason = this.#retry.maxAttempts <= number ? 'exhausted' : isRetryable(attempt.error) ? 'deadline' : 'not-retryable';
          if (this.#fallback.length > 0 && fallsBack(attempt.error)) return this.#fallBack(request, options, number, attempt.error);
          throw new RetryError(number, attempt.error, reason);
        }
      }
    }
  }

  /**
   * What an attempt's end means for the call: done, try again (through whichever member is best),
   * try elsewhere without counting it, go to the fallbacks, or give up. Drops a member that refused
   * what no retry mends, marking the attempt so that the run does not stop for it while the pool
   * has somewhere else to go.
   */
  #judge(member: Member, attempt: Attempt, aborted: boolean): { kind: 'ok' | 'aborted' | 'again' | 'elsewhere' | 'fall-back' | 'give-up' } {
    if (attempt.response !== undefined) return { kind: 'ok' };
    if (aborted) return { kind: 'aborted' };
    const { error } = attempt;
    if (isBrokenCircuitError(error)) return { kind: 'elsewhere' };
    if (stopsRun(error)) {
      if (!member.dropped) {
        member.dropped = true;
        this.#tell(member, 'dropped', error);
        for (const listener of this.#circuitListeners) listener();
      }
      // The run stops for it only when the pool has nowhere left to send the call.
      const elsewhere = this.#live().length > 0 || this.#fallback.length > 0;
      if (elsewhere) attempt.dropped = true;
      return { kind: elsewhere ? 'elsewhere' : 'give-up' };
    }
    if (isTooLongOrRefused(error)) return { kind: this.#fallback.length > 0 ? 'fall-back' : 'give-up' };
    return isRetryable(error) ? { kind: 'again' } : { kind: 'give-up' };
  }

  async #attempt(
    member: Member,
    request: LlmRequest,
    number: number,
    repair: number,
    options: GateCallOptions,
    scope: CallScope,
  ): Promise<Attempt> {
    member.inFlight++;
    member.choosing++;
    let queued = false;
    const onQueued = () => {
      if (queued) return;
      queued = true;
      member.choosing--;
    };
    scope.onQueued = onQueued;
    try {
      return await attemptThrough(member.gate, request, number, repair, options, scope);
    } finally {
      // An attempt that ended before the limits (a breaker's refusal, the budget's) never queued.
      onQueued();
      scope.onQueued = undefined;
      member.inFlight--;
    }
  }

  /** Tries each fallback in turn with the call; rejects with the last one's failure, or the pool's when there is none. */
  async #fallBack(request: LlmRequest, options: GateCallOptions, attempts: number, cause: unknown): Promise<PoolAnswer> {
    let lastError: unknown = new RetryError(attempts, cause ?? new Error(`pool "${this.name}" has no member left`), 'not-retryable');
    for (const route of this.#fallback) {
      try {
        const answer = await route.call(request, options);
        return {
          ...answer,
          attempts: attempts + answer.attempts,
          servedBy: answer.servedBy ?? route.name,
        };
      } catch (error) {
        if (options.signal?.aborted === true || options.deadline?.signal?.aborted === true) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  #live(): Member[] {
    return this.#members.filter((member) => !member.dropped);
  }

  /**
   * The member the strategy puts the call on now; undefined when every live member's circuit is
   * open. A half-open one may take it (its probe is how it comes back) unless it refused this call.
   */
  #choose(
    notBefore: ReadonlyMap<Member, number>,
    refused: ReadonlySet<Member>,
    scope: CallScope,
    options: GateCallOptions,
  ): Member | undefined {
    const nowMs = this.#clock.now();
    const open = this.#live().filter((member) => {
      const waitMs = member.gate.circuitWaitMs();
      return waitMs === 0 || (waitMs === Infinity && !refused.has(member));
    });
    if (open.length === 0) return undefined;
    // A member this call has failed on goes last: another that can take it at all is likelier to
    // answer than one that just refused the connection or said its quota was spent.
    const untried = open.filter((member) => !notBefore.has(member));
    if (untried.length > 0 && untried.length < open.length) open.splice(0, open.length, ...untried);
    const waitOf = (member: Member) => Math.max(this.#grantWaitMs(member), (notBefore.get(member) ?? 0) - nowMs);
    switch (this.strategy) {
      case 'weighted':
        return this.#draw(open);
      case 'ordered': {
        // In time: leaving this call and those after it what they are expected to take. A member
        // that grants just before the deadline would have the call time out in flight.
        const withinMs =
          scope.pending === undefined ? scope.deadlineMs - nowMs - (options.keepBeforeDeadlineMs ?? 0) : scope.pending.firstGrantWithinMs();
        return open.find((member) => waitOf(member) <= withinMs) ?? soonest(open, waitOf);
      }
      case 'soonest':
        return soonest(open, waitOf);
    }
  }

  /** Ms until `member`'s limits would grant one more call, behind the calls already chosen for it. */
  #grantWaitMs(member: Member): number {
    return member.gate.backlogMs(1 + member.choosing, member.gate.typicalCost());
  }

  #draw(members: readonly Member[]): Member {
    const total = members.reduce((sum, member) => sum + member.weight, 0);
    let draw = this.#random() * total;
    for (const member of members) {
      draw -= member.weight;
      if (draw < 0) return member;
    }
    return members.at(-1)!;
  }

  /** Ms until the first live member's circuit admits probes; Infinity while each is half-open with its probes out. */
  #circuitWaitOfLive(): number {
    return Math.min(...this.#live().map((member) => member.gate.circuitWaitMs()));
  }

  /** Sleeps until a member's circuit may admit the call, or any circuit moves; gives up past the deadline. */
  async #untilCircuitMoves(waitMs: number, scope: CallScope, attempts: number, lastError: unknown): Promise<void> {
    const nowMs = this.#clock.now();
    if (waitMs !== Infinity && nowMs + waitMs > scope.deadlineMs) throw new RetryError(attempts, lastError, 'deadline');
    const { signal } = scope;
    await new Promise<void>((resolve, reject) => {
      const finish = (error?: unknown) => {
        cancelTimer();
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = () => finish(signal!.reason);
      const untilMs = Math.min(waitMs, scope.deadlineMs - nowMs);
      const cancelTimer =
        untilMs === Infinity
          ? () => {}
          : this.#clock.setTimer(untilMs, () => finish(waitMs > untilMs ? new RetryError(attempts, lastError, 'deadline') : undefined));
      const unsubscribe = this.onCircuitChange(() => finish());
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** What a call through the pool typically takes from its members' limits: the most any live member's calls take. */
  typicalCost(): CallCost {
    const live = this.#live();
    if (live.length === 0) return this.#fallback[0]?.typicalCost() ?? { requests: 1, inputTokens: 0, outputTokens: 0 };
    let inputTokens = 0;
    let outputTokens = 0;
    for (const { gate } of live) {
      const cost = gate.typicalCost();
      inputTokens = Math.max(inputTokens, cost.inputTokens);
      outputTokens = Math.max(outputTokens, cost.outputTokens);
    }
    return { requests: 1, inputTokens, outputTokens };
  }

  /**
   * Ms until `calls` more calls would all be granted by the live members together, each granting
   * its share behind its own queue: the pool's rate is the sum of theirs. With no member left, the
   * first fallback's.
   */
  backlogMs(calls: number, perCall?: CallCost): number {
    const live = this.#live();
    if (live.length === 0) return this.#fallback[0]?.backlogMs(calls, perCall) ?? Infinity;
    return combinedBacklogMs(
      live.map((member) => (k: number) => member.gate.backlogMs(k + member.choosing, perCall)),
      calls,
    );
  }

  /** The soonest live member's circuit wait (0 when one is closed); with no member left, the first fallback's. */
  circuitWaitMs(): number {
    const live = this.#live();
    if (live.length === 0) return this.#fallback[0]?.circuitWaitMs() ?? 0;
    const waitMs = this.#circuitWaitOfLive();
    // Every member down: a fallback may take the call meanwhile.
    if (waitMs > 0 && this.#fallback.length > 0) return Math.min(waitMs, ...this.#fallback.map((route) => route.circuitWaitMs()));
    return waitMs;
  }

  /** Calls `listener` on every change of a member's or a fallback's circuit, and when a member is dropped. */
  onCircuitChange(listener: () => void): () => void {
    this.#circuitListeners.add(listener);
    const stops = [
      ...this.#members.map((member) => member.gate.onCircuitChange(listener)),
      ...this.#fallback.map((route) => route.onCircuitChange(listener)),
    ];
    return () => {
      this.#circuitListeners.delete(listener);
      for (const stop of stops) stop();
    };
  }

  #tell(member: Member, change: PoolMemberChange['change'], error?: Error): void {
    const left = this.#live().length;
    const event: PoolMemberChange = { pool: this.name, member: member.gate.name, change, error, left };
    this.#logger.warn({ member: event.member, change, left, err: error }, `pool member ${change}`);
    this.#onMemberChange?.(event);
  }
}

/** The member that would grant soonest; ties to the one with the fewest calls in flight, then to the first listed. */
function soonest(members: readonly Member[], waitOf: (member: Member) => number): Member {
  let best = members[0]!;
  let bestMs = waitOf(best);
  for (const member of members.slice(1)) {
    const ms = waitOf(member);
    if (ms < bestMs - EPSILON_MS || (Math.abs(ms - bestMs) <= EPSILON_MS && member.inFlight < best.inFlight)) {
      best = member;
      bestMs = ms;
    }
  }
  return best;
}

const isRetryable = (error: unknown): boolean =>
  error !== null && typeof error === 'object' && (error as { retryable?: unknown }).retryable === true;

/**
 * A request this model cannot take as it stands — too long for its context (413, or the vendors'
 * context-length codes), more than a member's limits hold at once — or an answer its content filter
 * refused: another vendor may take it.
 */
function isTooLongOrRefused(error: unknown): boolean {
  if (error instanceof RefusalError || isLimitTooSmallError(error)) return true;
  return error instanceof BadRequestError && (error.status === 413 || /context|too long|maximum.*tokens/i.test(error.message));
}

/**
 * Failures a fallback may mend once the members' attempts are spent: the retried ones (429, 5xx,
 * timeouts, lost connections). Not a wait for the limits run out (no member could grant in time),
 * the budget, a request the provider refused as it stands.
 */
const fallsBack = isRetryable;
