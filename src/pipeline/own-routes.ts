import type { Budget } from '../quota/budget.ts';
import type { CallGate } from '../gate/call-gate.ts';
import type { ProviderSetup } from '../gate/provider-options.ts';
import type { PoolSetup } from '../route/pool-setup.ts';
import type { Route } from '../route/route.ts';
import { expected } from '../validation/checks.ts';

/**
 * The routes a run was given as objects (`routes`' values that are not names), checked against the
 * run's providers and pools, and described in the run's terms: their gates as provider setups, and
 * each route of several gates (or fallbacks) as a pool of them — what the fingerprints and the
 * figures read.
 */
export interface OwnRoutes {
  /** Each route by its name. */
  readonly byName: ReadonlyMap<string, Route>;
  /** Every gate of theirs, fallbacks' included, each once, in the order met. */
  readonly gates: readonly CallGate[];
  /** Each gate as the setup it stands for (its provider, limits, output cap and price). */
  readonly setups: readonly ProviderSetup[];
  /** Each route that is not a single gate of its own name, as a pool of its gates and fallbacks. */
  readonly pools: readonly PoolSetup[];
}

/**
 * Checks the route objects among `routes`: each named apart from the run's providers and pools and
 * from other routes, each gate named apart from the run's providers and from other gates, and — a
 * run with a budget — each gate holding that budget (a gate made without it would spend outside it).
 * Throws a `TypeError` saying which.
 */
export function ownRoutes(
  routes: Readonly<Record<string, string | Route>> | undefined,
  taken: ReadonlySet<string>,
  budget: Budget | undefined,
): OwnRoutes {
  const byName = new Map<string, Route>();
  const gates: CallGate[] = [];
  const gateNames = new Map<string, CallGate>();
  const pools: PoolSetup[] = [];
  const visit = (route: Route, field: string): void => {
    const known = byName.get(route.name);
    if (known === route) return;
    if (known !== undefined || taken.has(route.name) || gateNames.has(route.name)) {
      throw expected(`${field}'s name`, 'one no provider, pool or other route of the run has', route.name);
    }
    byName.set(route.name, route);
    for (const gate of route.gates) {
      const same = gateNames.get(gate.name);
      if (same === gate) continue;
      if (
        same !== undefined ||
        taken.has(gate.name) ||
        (byName.has(gate.name) && !(route.gates.length === 1 && route.name === gate.name))
      ) {
        throw expected(`the gates of ${field}`, "names no provider, pool or other route's gate of the run has", gate.name);
      }
      if (budget !== undefined && gate.budget !== budget) {
        throw expected(`the gate "${gate.name}" of ${field}`, "made with the run's budget (`budget` in its options)", gate.budget);
      }
      gateNames.set(gate.name, gate);
      gates.push(gate);
    }
    const fallback = route.fallback ?? [];
    for (const next of fallback) visit(next, `the fallback "${next.name}" of ${field}`);
    const single = route.gates.length === 1 && route.gates[0]!.name === route.name && fallback.length === 0;
    if (!single) {
      pools.push({ name: route.name, members: route.gates.map((gate) => gate.name), fallback: fallback.map((next) => next.name) });
    }
  };
  for (const [task, route] of Object.entries(routes ?? {})) if (typeof route === 'object') visit(route, `the route of task "${task}"`);
  const setups = gates.map(
    (gate): ProviderSetup => ({ provider: gate.provider, limits: gate.limits, maxOutputTokens: gate.maxOutputTokens, price: gate.price }),
  );
  return { byName, gates, setups, pools };
}
