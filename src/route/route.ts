import type { GateAnswer, GateCallOptions } from '../gate/call-gate.ts';
import type { CallCost } from '../quota/provider-limits.ts';
import type { LlmRequest } from '../provider/provider.ts';

/**
 * Where a task's calls go, as the article processor and admission see it: one provider's
 * `CallGate` is a route; a pool of gates, or a route with fallbacks, is a route made of routes.
 * The pipeline knows nothing more of what is behind it.
 */
export interface Route {
  /** What the summary and the result lines call it: a provider's name, or a pool's. */
  readonly name: string;
  /**
   * Makes one call: the limits taken before every attempt, the provider called, retries and
   * backoff. Resolves with the answer and the attempts it took; rejects as `CallGate.call` does.
   */
  call(request: LlmRequest, options?: GateCallOptions): Promise<RouteAnswer>;
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

/** A route's answer: the gate's (the response, the attempts, whether it came from the cache), and which provider answered. */
export interface RouteAnswer extends GateAnswer {
  /** The provider that answered, when the route chose among several (a pool's member, a fallback). @default the route itself */
  readonly servedBy?: string | undefined;
}
