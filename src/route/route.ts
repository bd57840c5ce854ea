import type { AttemptEvent } from '../gate/attempt.ts';
import type { CallDeadline } from '../gate/call-deadline.ts';
import type { CallGate, GateAttemptOptions } from '../gate/call-gate.ts';
import type { CallCost } from '../quota/provider-limits.ts';
import type { LlmRequest, LlmResponse } from '../provider/provider.ts';

/**
 * Where a task's calls go, as the article processor and admission see it: a choice of gate for
 * each attempt, and the figures admission asks before it lets an article in. A route only chooses;
 * the call loop (`CallLoop`) makes the call — the answer cache, the attempt through the chosen gate,
 * the judging of the answer, repairs, retries with backoff, the waits for an open circuit, the
 * fallbacks — the same for every route.
 *
 * One provider is a route whose choice is always its gate (`ProviderRoute`); a pool (`RoutePool`)
 * chooses a member by its strategy. A route of one's own — a cost-based choice, gates of one's own
 * making — implements this, and `runPipeline` takes it in `routes` as it takes a provider's name.
 */
export interface Route {
  /** What the summary and the result lines call it: a provider's name, or a pool's. */
  readonly name: string;
  /**
   * Every gate it may choose, in its own order: the loop looks a call up in the answer cache under
   * each one's key (`CallGate.answerKey`), and a run reports each one's figures.
   */
  readonly gates: readonly CallGate[];
  /**
   * Routes the loop tries in turn, each with its own retries, when this one cannot serve a call:
   * it has no gate left, every gate is down, the attempts are spent on a failure worth another
   * provider, or the request is too long for the model or refused by its content filter.
   * @default none
   */
  readonly fallback?: readonly Route[] | undefined;
  /**
   * The gate the call's next attempt goes to, asked before every attempt and after every failure
   * (to say how long the next one waits). `'wait'`: none can take it now — every gate it would
   * choose has its circuit open, or refused this call since a circuit last moved (`call.refusedBy`):
   * the loop waits for `onCircuitChange`, at most `circuitWaitMs()`, within the call's deadline.
   * `'none'`: it has no gate left for the call (the loop goes to the fallbacks, or fails). Must not
   * take anything from the limits: ask them (`backlogMs`), never acquire.
   */
  choose(call: RouteCall): RouteChoice;
  /**
   * Told that `gate` refused what no retry mends (the key, an empty account: the provider's error
   * `stopsRun`): a route of several stops choosing it and says whether it has another gate left, and
   * the call goes there (the attempt is not counted). @default none (the call fails with it)
   */
  drop?(gate: CallGate, error: Error): boolean;
  /** What a call through the route typically takes from its limits: what admission counts a call at. */
  typicalCost(): CallCost;
  /**
   * Ms until `calls` more calls, each costing `perCall` (one request when not given), would all be
   * granted behind every call already waiting (0: now).
   */
  backlogMs(calls: number, perCall?: CallCost): number;
  /** Ms until the route could take a new article's call: 0 when it can now; `Infinity` until a probe settles. */
  circuitWaitMs(): number;
  /** Calls `listener` whenever the route may have become able to take calls again; returns a function that stops it. */
  onCircuitChange(listener: () => void): () => void;
}

/** A route's choice for an attempt: the gate, or why there is none (see {@link Route.choose}). */
export type RouteChoice = CallGate | 'wait' | 'none';

/** A call as its route sees it when choosing: what the call has met so far, and how long it may wait. */
export interface RouteCall {
  /** The request as the task made it. */
  readonly request: LlmRequest;
  /**
   * The clock instant from which `gate` may take the call again (after its backoff, or the
   * retry-after it answered with) when the call has failed on it; undefined when it has not.
   */
  retryAtMs(gate: CallGate): number | undefined;
  /** Whether `gate`'s circuit refused this call since any of the route's circuits last moved. */
  refusedBy(gate: CallGate): boolean;
  /**
   * How long the call may wait for its grant, in ms: to its deadline less what the calls after it
   * are expected to need, or — its deadline not started — the longest first wait worth taking.
   */
  withinMs(): number;
}

/** What a call through a route takes besides the request: a deadline or a signal, what to tell, what to count. */
export interface RouteCallOptions extends GateAttemptOptions {
  /** Aborts the limiter wait, the call in flight and the backoff sleep. @default none */
  readonly signal?: AbortSignal | undefined;
  /**
   * Clock instant by which the call must be done: limiter waits and backoffs that would end later fail at once.
   * @default Infinity (no deadline)
   */
  readonly deadlineMs?: number | undefined;
  /**
   * A deadline that may not have started yet (an article's): it replaces `signal` and `deadlineMs`.
   * The gate starts it from its `fromMs` — or, on limits other processes share
   * (`ProviderLimits.shared`), at the call's grant, taken only when at most
   * `firstGrantWithinMs()` off: further off, the call takes nothing, sleeps until one would be that
   * near and asks again, so an article not yet begun never queues ahead of the later calls of
   * articles under way.
   * @default none (the deadline is `deadlineMs`, and `signal` aborts the call)
   */
  readonly deadline?: CallDeadline | undefined;
  /** Told after every attempt. @default none */
  readonly onAttempt?: ((event: AttemptEvent) => void) | undefined;
  /**
   * Counts for the caller: `calls` goes up by one for each attempt that reached the provider (and
   * so spent its cost), `latencyMs` by the time the provider took to answer it, `costNanoUsd` by
   * what it cost at the provider's price (whole nano-dollars), `unknownNanoUsd` (when given) by the
   * worst case of an attempt whose fate is unknown (perhaps billed: see `AttemptEvent.unknownCostUsd`),
   * `repairs` by one for each repair made (an attempt that asked again with an unfit answer's problems).
   * @default none (nothing counted)
   */
  readonly tally?: { calls: number; latencyMs: number; costNanoUsd: number; unknownNanoUsd?: number; repairs: number } | undefined;
}

/** A call's answer through a route: the provider's response, the attempts it took, and who gave it. */
export interface RouteAnswer {
  /** The provider's response; from the cache, its output alone (no usage: nothing was used). */
  readonly response: LlmResponse;
  /** Attempts made for it, retries included: 0 for an answer from the cache. */
  readonly attempts: number;
  /** True when the answer came from the answer cache (kept, or another call's under way): no call was made. */
  readonly cached?: boolean | undefined;
  /** With `cached`: what the call that made the answer cost, at the price of the gate it was kept for, in whole nano-dollars (0 without a price or a usage). */
  readonly savedNanoUsd?: number | undefined;
  /** The provider that answered, when it is not the route itself (a pool's member, a fallback). @default the route itself */
  readonly servedBy?: string | undefined;
}

/** A route with the loop that makes its calls, as one: what code outside a run calls (a batch's live fallback). */
export interface RouteCaller {
  /** The route's name. */
  readonly name: string;
  /** Makes one call through the route (see `CallLoop.call`). */
  call(request: LlmRequest, options?: RouteCallOptions): Promise<RouteAnswer>;
}
