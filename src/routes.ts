// `news-processor/routes`: a route of one's own, and calls made outside a run — the `Route` seam
// (a choice of gate for each attempt, and the figures admission asks), the call gate in front of
// each provider (breaker, budget, limits, one attempt) and what an attempt tells, one provider's
// route and a pool as objects, and the call loop that makes every call through a route (answer
// cache, retries, repairs, fallbacks). A run given providers, pools and routes by name needs none of
// this: `runPipeline` (the root) builds them. Importing it has no side effects.

// Routes choose a gate for each attempt; the one call loop makes every call through them.
export type { Route, RouteCall, RouteChoice, RouteCallOptions, RouteAnswer, RouteCaller } from './route/route.ts';
export { CallLoop } from './route/call-loop.ts';
export type { CallLoopOptions } from './route/call-loop.ts';
export { ProviderRoute } from './route/provider-route.ts';
// A pool as an object (a run builds one from each `PoolSetup`), and what it tells of its members.
export { RoutePool } from './route/pool.ts';
export type { RoutePoolOptions, PoolMemberChange } from './route/pool.ts';
// The gate in front of each provider — breaker, budget, limits, one attempt (its defaults,
// `GATE_DEFAULTS`, are the root's, beside `ProviderSetup`).
export { CallGate } from './gate/call-gate.ts';
export type { CallGateOptions, GateAttemptOptions, GateFigures } from './gate/call-gate.ts';
export type { AttemptEvent, AttemptOutcome, GateAttempt } from './gate/attempt.ts';
export type { CallDeadline } from './gate/call-deadline.ts';
export type { CallScope, CallScopeOptions } from './gate/call-scope.ts';
