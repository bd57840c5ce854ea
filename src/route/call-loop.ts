import type { Logger } from 'pino';
import { isBrokenCircuitError } from '../breaker/circuit-breaker.ts';
import { sleep, systemClock, type Clock } from '../clock.ts';
import type { AnswerCache } from '../cache/answer-cache.ts';
import { OneCallPerKey } from '../cache/one-call-per-key.ts';
import type { GateAttempt } from '../gate/attempt.ts';
import type { CallDeadline } from '../gate/call-deadline.ts';
import { GATE_DEFAULTS, type CallGate } from '../gate/call-gate.ts';
import { openScope, startScope, type CallScope } from '../gate/call-scope.ts';
import { repairAfter } from './repair.ts';
import { answerFits, unfitAnswer } from '../provider/answer.ts';
import { BadRequestError, RefusalError, stopsRun, type LlmRequest, type LlmResponse } from '../provider/provider.ts';
import { isLimitTooSmallError } from '../quota/provider-limits.ts';
import { RetryError, RetryPolicy, type RetryPolicyOptions } from '../retry/retry.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger } from '../validation/checks.ts';
import type { Route, RouteAnswer, RouteCall, RouteCallOptions, RouteCaller, RouteChoice } from './route.ts';

/** The policies a loop composes around its attempts: retries, repairs, the answer cache. */
export interface CallLoopOptions {
  /** Attempts per call (across gates), backoff and the retry-after cap. @default RETRY_DEFAULTS, full-jitter backoff */
  readonly retry?: RetryPolicyOptions | undefined;
  /**
   * How many times a call's answer that does not parse or fit its schema is repaired — asked again,
   * through whichever gate its route then chooses, with that answer and the validator's problems —
   * before the retry policy takes it as any other failure (0: never; each repair is an attempt paid
   * for, not counted against `maxAttempts`).
   * @default GATE_DEFAULTS.maxRepairs (1)
   */
  readonly maxRepairs?: number | undefined;
  /**
   * Answers kept across calls, runs and processes. A call is looked up first (before any breaker,
   * budget or limits, so a hit takes nothing from them) under the key of each gate its route may
   * choose (`CallGate.answerKey`: what shapes that gate's answer — its vendor, model, the request as
   * it would send it); a hit under any of them ends the call; identical calls in flight wait for
   * the first one's answer; an answer a gate gave is kept under that gate's key only (gates that
   * shape answers alike share a key; one whose model differs never answers with another's).
   * A fallback's answer is kept by the fallback's own call. Gates whose provider has no
   * `answerIdentity` are never cached. @default none (every call made)
   */
  readonly cache?: AnswerCache | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Told of a store that failed (at warn level). @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

/**
 * What an attempt's end means for its call: answered; aborted (it rejects with the signal's reason);
 * repaired (asked again at once with the answer's problems, not counted as an attempt); again (a
 * failure worth another attempt, after its backoff, where the route then chooses); elsewhere (not
 * the call's doing — the gate is down or dropped: another choice, the attempt not counted);
 * fall back (the request as it stands is not this route's to make); give up (no attempt worth making
 * is left: the fallbacks, when the failure is one they may mend, or the failure).
 */
type Next = 'done' | 'aborted' | 'repair' | 'again' | 'elsewhere' | 'fall-back' | 'give-up';

/**
 * The one loop every call goes through, whatever its route: answer cache → (per attempt) the
 * route's choice of gate → the gate's breaker, budget hold, limits and call → judge the answer
 * against the task's schema (every provider's that does not check its own) → repair an unfit answer,
 * or retry a failure with backoff (`Retry-After` wins) through the gate the route then chooses —
 * not necessarily the same: a gate's failure delays only its own next attempt at the call, and a
 * route that has another gate goes there at once. An open circuit's refusal is not counted: the call
 * goes elsewhere, or waits for the circuit within its deadline. A gate refusing what no retry mends
 * is dropped from a route that can do without it. When the route cannot serve the call, its
 * fallbacks are tried in turn, each a call of its own through this loop.
 *
 * The policies — the retry policy, the repairs, the answer cache — are the loop's, shared by every
 * route it calls; a run makes one. Safe to share between concurrent calls.
 */
export class CallLoop {
  readonly #retry: RetryPolicy;
  readonly #maxRepairs: number;
  readonly #cached: OneCallPerKey | undefined;
  readonly #clock: Clock;

  constructor(options: CallLoopOptions = {}) {
    this.#retry = new RetryPolicy(options.retry);
    this.#maxRepairs = options.maxRepairs ?? GATE_DEFAULTS.maxRepairs;
    checkInteger('maxRepairs', this.#maxRepairs, 0);
    this.#clock = options.clock ?? systemClock;
    const logger = (options.logger ?? silentLogger).child({ component: 'call-loop' });
    this.#cached = options.cache === undefined ? undefined : new OneCallPerKey(options.cache, logger);
  }

  /**
   * Makes one call through `route`: resolves with the response, the attempts it took and who gave
   * it; rejects with a `RetryError` (carrying the last attempt's failure) when no attempt worth
   * making is left — or with the last fallback's failure — and with the signal's reason when aborted.
   * An answer that does not parse or fit its schema is repaired first, up to `maxRepairs` times: asked
   * again at once with the answer and its problems (the request's conversation grows by them).
   */
  call(route: Route, request: LlmRequest, options: RouteCallOptions = {}): Promise<RouteAnswer> {
    return this.#cached === undefined ? this.#call(route, request, options) : this.#callCached(route, request, options, this.#cached);
  }

  /** `route` with this loop, as one thing to call. */
  caller(route: Route): RouteCaller {
    return { name: route.name, call: (request, options) => this.call(route, request, options) };
  }

  async #callCached(route: Route, request: LlmRequest, options: RouteCallOptions, cached: OneCallPerKey): Promise<RouteAnswer> {
    const { gates } = route;
    const keyOf: (string | undefined)[] = [];
    for (const gate of gates) keyOf.push(gate.answerKey(request, options.maxOutputTokens));
    // Gates that shape answers alike (keys of one vendor's model) share a key: looked up once.
    const keys = keyOf.length === 1 && keyOf[0] !== undefined ? (keyOf as string[]) : distinctKeys(keyOf);
    if (keys.length === 0) return this.#call(route, request, options);
    const signal = options.deadline === undefined ? options.signal : options.deadline.signal;
    const { made, hit, key } = await cached.call(
      keys,
      signal,
      () => this.#call(route, request, options),
      // A fallback's answer is kept by the fallback's own call; one that came from a cache is kept already.
      (answer) => {
        if (answer.cached === true) return undefined;
        const servedBy = answer.servedBy ?? route.name;
        const index = gates.findIndex((gate) => gate.name === servedBy);
        return index < 0 ? undefined : keyOf[index];
      },
    );
    if (made !== undefined) return made;
    const gate = gates[keyOf.indexOf(key)]!;
    return answerOf(route, gate, { output: hit.output }, 0, gate.savedNanoUsd(hit));
  }

  /** The call through the route's gates and its fallbacks: the loop without its cache. */
  async #call(route: Route, request: LlmRequest, options: RouteCallOptions): Promise<RouteAnswer> {
    const clock = this.#clock;
    const { onAttempt, tally } = options;
    const call = new LoopCall(route, request, options, clock);
    let previousDelayMs = 0;
    let number = 1;
    let lastError: unknown;
    let asked = request;
    let repairs = 0;
    let repair = 0;
    let choice = choose(route, call);
    for (;;) {
      if (choice === 'none') return this.#fallBack(route, request, options, number - 1, lastError);
      if (choice === 'wait') {
        if (hasFallback(route)) return this.#fallBack(route, request, options, number - 1, lastError);
        // Every gate's circuit open, and nowhere else to go: wait for the first to admit probes.
        await untilCircuitMoves(route, call, clock, number - 1, lastError);
        call.circuitsMoved();
        choice = choose(route, call);
        continue;
      }
      const gate = choice;
      const retryAtMs = call.retryAtMs(gate);
      if (retryAtMs !== undefined && retryAtMs > clock.now()) await sleep(clock, retryAtMs - clock.now(), call.signal);
      const attempt = await gate.attempt(asked, number, repair, options, call);
      if (attempt.response !== undefined && gate.provider.checksAnswers !== true) judge(attempt, asked, attempt.response);
      // The first grant may have started the deadline: read both afresh after every attempt.
      const { signal, deadlineMs } = call;
      // Taken before the caller hears of the attempt: an abort its listener makes (a run stopping
      // on this very failure) must not hide the failure as a cancellation.
      const aborted = signal?.aborted === true;
      const repaired = aborted ? undefined : repairAfter(attempt, asked, repairs, this.#maxRepairs, deadlineMs);
      let next: Next;
      let failure: unknown;
      if (attempt.response !== undefined) next = 'done';
      else if (aborted) next = 'aborted';
      else if (repaired !== undefined) next = 'repair';
      else {
        const { error } = attempt;
        lastError = error;
        if (isBrokenCircuitError(error)) {
          // An open circuit sent nothing: the call goes elsewhere, or waits for it as it waits for a
          // token, within its deadline, and the attempt is not spent — a short outage costs time,
          // not the articles that met it.
          call.refuse(gate);
          next = 'elsewhere';
          choice = choose(route, call);
          if (choice === 'wait' && !hasFallback(route)) attempt.retryInMs = circuitWaitWithin(route, attempt.atMs, deadlineMs);
        } else if (stopsRun(error) && route.drop !== undefined && (route.drop(gate, error) || hasFallback(route))) {
          // The run stops for it only when the route has nowhere left to send the call.
          attempt.dropped = true;
          call.drop(gate);
          next = 'elsewhere';
          choice = choose(route, call);
        } else if (hasFallback(route) && isTooLongOrRefused(error)) next = 'fall-back';
        else {
          const decision = this.#retry.next(error, number, previousDelayMs, attempt.atMs);
          if (!decision.retry) {
            next = 'give-up';
            failure = decision.error;
          } else {
            call.failedOn(gate, attempt.atMs + decision.delayMs);
            choice = choose(route, call);
            const nextRetryAtMs = typeof choice === 'string' ? undefined : call.retryAtMs(choice);
            const nextWaitMs = nextRetryAtMs === undefined ? 0 : Math.max(0, nextRetryAtMs - attempt.atMs);
            if (attempt.atMs + nextWaitMs > deadlineMs) {
              next = 'give-up';
              failure = new RetryError(number, error, 'deadline');
            } else {
              next = 'again';
              attempt.retryInMs = nextWaitMs;
              previousDelayMs = decision.delayMs;
            }
          }
        }
      }
      if (attempt.called && tally !== undefined) {
        tally.calls++;
        tally.latencyMs += attempt.latencyMs;
        tally.costNanoUsd += attempt.costNanoUsd;
        if (tally.unknownNanoUsd !== undefined) tally.unknownNanoUsd += attempt.unknownNanoUsd;
        if (attempt.repair > 0) tally.repairs++;
      }
      onAttempt?.(attempt);
      switch (next) {
        case 'done':
          return answerOf(route, gate, attempt.response!, number, undefined);
        case 'aborted':
          throw signal!.reason;
        case 'repair':
          // Counted apart from the attempts: a repair is not a retry, and is made at once.
          asked = repaired!;
          repair = ++repairs;
          choice = choose(route, call);
          continue;
        case 'again':
          // A retry after an answer no repair mended asks afresh; after any other failure, the same again.
          if (attempt.outcome === 'malformed') asked = request;
          repair = 0;
          number++;
          continue;
        case 'elsewhere':
          continue;
        case 'fall-back':
          return this.#fallBack(route, request, options, number, attempt.error);
        case 'give-up':
          if (hasFallback(route) && fallsBack(attempt.error)) return this.#fallBack(route, request, options, number, attempt.error);
          throw failure;
      }
    }
  }

  /** Tries each fallback in turn with the call; rejects with the last one's failure, or the route's when it has none. */
  async #fallBack(route: Route, request: LlmRequest, options: RouteCallOptions, attempts: number, cause: unknown): Promise<RouteAnswer> {
    let lastError: unknown = new RetryError(attempts, cause ?? new Error(`"${route.name}" has no member left`), 'not-retryable');
    for (const fallback of route.fallback ?? []) {
      try {
        const answer = await this.call(fallback, request, options);
        return { ...answer, attempts: attempts + answer.attempts, servedBy: answer.servedBy ?? fallback.name };
      } catch (error) {
        if (options.signal?.aborted === true || options.deadline?.signal?.aborted === true) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }
}

/**
 * One call as the loop runs it: its scope (the deadline its attempts share) and, for its route's
 * choice, what it has met — made on the first failure only, so a call that succeeds at once
 * allocates nothing more.
 */
class LoopCall implements CallScope, RouteCall {
  signal: AbortSignal | undefined = undefined;
  deadlineMs = Infinity;
  pending: CallDeadline | undefined = undefined;
  ranked = false;
  readonly request: LlmRequest;
  readonly #clock: Clock;
  readonly #options: RouteCallOptions;
  /** What the call has met at its gates; made at its first failure. */
  #met: Met | undefined;

  constructor(route: Route, request: LlmRequest, options: RouteCallOptions, clock: Clock) {
    this.request = request;
    this.#clock = clock;
    this.#options = options;
    openScope(this, options, route.gates);
  }

  startAt(atMs: number): void {
    startScope(this, atMs);
  }

  retryAtMs(gate: CallGate): number | undefined {
    return this.#met?.retryAt.get(gate);
  }

  refusedBy(gate: CallGate): boolean {
    return this.#met?.refused.has(gate) === true;
  }

  withinMs(): number {
    // In time: leaving this call and those after it what they are expected to take.
    if (this.pending !== undefined) return this.pending.firstGrantWithinMs();
    return this.deadlineMs - this.#clock.now() - (this.#options.keepBeforeDeadlineMs ?? 0);
  }

  /** The call failed on `gate`, which may take it again from `atMs`. */
  failedOn(gate: CallGate, atMs: number): void {
    this.#met ??= new Met();
    this.#met.retryAt.set(gate, atMs);
  }

  /** `gate`'s circuit refused the call: not asked again until a circuit moves. */
  refuse(gate: CallGate): void {
    this.#met ??= new Met();
    this.#met.refused.add(gate);
  }

  circuitsMoved(): void {
    this.#met?.refused.clear();
  }

  /** `gate` was dropped from the route for a failure of this call. */
  drop(gate: CallGate): void {
    this.#met ??= new Met();
    this.#met.dropped.add(gate);
  }

  /** Whether `gate` was dropped for a failure of this call. */
  dropped(gate: CallGate): boolean {
    return this.#met?.dropped.has(gate) === true;
  }
}

/** What a call has met at its gates: when each it failed on may take it again, whose circuit refused it, which were dropped. */
class Met {
  readonly retryAt = new Map<CallGate, number>();
  readonly refused = new Set<CallGate>();
  readonly dropped = new Set<CallGate>();
}

/**
 * The route's choice, held to what it says it does: a gate whose circuit refused the call since
 * the circuits last moved is a wait (an attempt there would be refused again at once, a loop with
 * no pause), one dropped for this call's failure is no gate at all.
 */
function choose(route: Route, call: LoopCall): RouteChoice {
  const choice = route.choose(call);
  if (typeof choice === 'string') return choice;
  if (call.refusedBy(choice)) return 'wait';
  return call.dropped(choice) ? 'none' : choice;
}

/** The keys once each, in order, those of gates that make none left out. */
function distinctKeys(keys: readonly (string | undefined)[]): string[] {
  const distinct: string[] = [];
  for (const key of keys) if (key !== undefined && !distinct.includes(key)) distinct.push(key);
  return distinct;
}

const hasFallback = (route: Route): boolean => route.fallback !== undefined && route.fallback.length > 0;

/** The route's answer: a gate's response, naming the gate when it is not the route itself. */
function answerOf(route: Route, gate: CallGate, response: LlmResponse, attempts: number, savedNanoUsd: number | undefined): RouteAnswer {
  const cached = savedNanoUsd !== undefined;
  if (gate.name === route.name) return cached ? { response, attempts, cached, savedNanoUsd } : { response, attempts };
  return cached ? { response, attempts, cached, savedNanoUsd, servedBy: gate.name } : { response, attempts, servedBy: gate.name };
}

/**
 * Every answer fits its task's schema, whatever its provider promised: one that does not ends the
 * attempt `malformed`, to be repaired or retried as a vendor's unfit answer is.
 */
function judge(attempt: GateAttempt, asked: LlmRequest, response: LlmResponse): void {
  if (answerFits(asked, response.output)) return;
  attempt.unfit(unfitAnswer(asked, response.output, undefined, { usage: response.usage, headers: response.headers }));
}

/**
 * How long a call its route's circuits refused waits before it asks again — until a circuit admits
 * probes (its own cooldown, which no cap shortens: it is the breaker's, not a provider's hint), or,
 * half-open with every probe out, until one settles, at the latest the deadline — or undefined when
 * that would end past the deadline.
 */
function circuitWaitWithin(route: Route, atMs: number, deadlineMs: number): number | undefined {
  const waitMs = route.circuitWaitMs();
  if (atMs >= deadlineMs || (waitMs !== Infinity && atMs + waitMs > deadlineMs)) return undefined;
  return Math.min(waitMs, deadlineMs - atMs);
}

/** Sleeps until a circuit of the route may admit the call, or any of them moves; gives up past the deadline. */
async function untilCircuitMoves(route: Route, call: LoopCall, clock: Clock, attempts: number, lastError: unknown): Promise<void> {
  const waitMs = route.circuitWaitMs();
  const nowMs = clock.now();
  if (waitMs !== Infinity && nowMs + waitMs > call.deadlineMs) throw new RetryError(attempts, lastError, 'deadline');
  const { signal } = call;
  await new Promise<void>((resolve, reject) => {
    const finish = (error?: unknown) => {
      cancelTimer();
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = () => finish(signal!.reason);
    const untilMs = Math.min(waitMs, call.deadlineMs - nowMs);
    const cancelTimer =
      untilMs === Infinity
        ? () => {}
        : clock.setTimer(untilMs, () => finish(waitMs > untilMs ? new RetryError(attempts, lastError, 'deadline') : undefined));
    const unsubscribe = route.onCircuitChange(() => finish());
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A request this model cannot take as it stands — too long for its context (413, or the vendors'
 * context-length codes), more than a gate's limits hold at once — or an answer its content filter
 * refused: another vendor may take it.
 */
function isTooLongOrRefused(error: unknown): boolean {
  if (error instanceof RefusalError || isLimitTooSmallError(error)) return true;
  return error instanceof BadRequestError && (error.status === 413 || /context|too long|maximum.*tokens/i.test(error.message));
}

/**
 * Failures a fallback may mend once the route's attempts are spent: the retried ones (429, 5xx,
 * timeouts, lost connections). Not a wait for the limits run out (no gate could grant in time),
 * the budget, a request the provider refused as it stands.
 */
const fallsBack = (error: unknown): boolean =>
  error !== null && typeof error === 'object' && (error as { retryable?: unknown }).retryable === true;
