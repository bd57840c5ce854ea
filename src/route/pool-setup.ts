/**
 * How a pool puts each call on a member:
 *
 * - `soonest` — on the member whose limits would grant it soonest (asked without taking), ties to
 *   the one with the fewest calls in flight; members whose circuit is open are skipped. The pool's
 *   rate is then the sum of its members', and no member is sent more than its limits take.
 * - `weighted` — on a member drawn at random in proportion to its weight (LiteLLM's default
 *   shuffle), whatever its queue: kept for comparison.
 * - `ordered` — on the first member that can grant the call within its deadline, in the order
 *   listed: the next ones take only what the first cannot (spill-over).
 */
export type PoolStrategy = 'soonest' | 'weighted' | 'ordered';

/** The strategies a pool may follow, the default first. */
export const POOL_STRATEGIES: readonly PoolStrategy[] = Object.freeze(['soonest', 'weighted', 'ordered'] as PoolStrategy[]);

/** A pool of providers serving one task as one route: several keys, deployments or vendors of one model. */
export interface PoolSetup {
  /** What tasks and routes call it by: no provider may have the same name. */
  readonly name: string;
  /** The providers it spreads calls over, by name, each once; at least one. */
  readonly members: readonly string[];
  /** @default "soonest" */
  readonly strategy?: PoolStrategy | undefined;
  /**
   * With `weighted`: each member's weight, in the order of `members`, each > 0.
   * @default each member's request rate (1 each where a member has no request limit)
   */
  readonly weights?: readonly number[] | undefined;
  /**
   * Providers or pools tried in order, each with its own retries, when the pool cannot serve a call:
   * every member dropped or down, its attempts spent, or a request too long for its model or
   * refused by its content filter. No pool may fall back to itself, however indirectly.
   * @default none
   */
  readonly fallback?: readonly string[] | undefined;
}

/** A pool setup that cannot work: the field at fault (a path into the pools list), what it must be, what it is. */
export interface PoolSetupProblem {
  /** `pools[0].members[2]`, `pools[1].fallback[0]`, … */
  readonly field: string;
  /** What it must be, in words. */
  readonly expected: string;
  /** What it is. */
  readonly value: unknown;
}

/**
 * The first problem of `pools` over providers named `providers`, or undefined: an empty pool, a
 * member that is not a provider or is listed twice, a pool named like a provider or another pool,
 * weights that are not one per member (or not with `weighted`), a fallback that names neither a
 * provider nor a pool, or a cycle of fallbacks. The one check: the providers file's reader and
 * `runPipeline` each word it in their own terms.
 */
export function poolSetupProblem(pools: readonly PoolSetup[], providers: readonly string[]): PoolSetupProblem | undefined {
  const providerNames = new Set(providers);
  const poolNames = new Set<string>();
  for (const [index, pool] of pools.entries()) {
    const at = `pools[${index}]`;
    if (typeof pool.name !== 'string' || pool.name.trim() === '')
      return { field: `${at}.name`, expected: 'a non-empty name', value: pool.name };
    if (providerNames.has(pool.name)) return { field: `${at}.name`, expected: 'a name no provider has', value: pool.name };
    if (poolNames.has(pool.name)) return { field: `${at}.name`, expected: 'a name no other pool has', value: pool.name };
    poolNames.add(pool.name);
    if (!Array.isArray(pool.members) || pool.members.length === 0) {
      return { field: `${at}.members`, expected: 'at least one member (a provider name)', value: pool.members };
    }
    const seen = new Set<string>();
    for (const [m, member] of pool.members.entries()) {
      if (!providerNames.has(member)) {
        return { field: `${at}.members[${m}]`, expected: `one of the provider names (${providers.join(', ')})`, value: member };
      }
      if (seen.has(member)) return { field: `${at}.members[${m}]`, expected: 'a member not listed before', value: member };
      seen.add(member);
    }
    const strategy = pool.strategy ?? 'soonest';
    if (!POOL_STRATEGIES.includes(strategy)) {
      return { field: `${at}.strategy`, expected: `one of ${POOL_STRATEGIES.map((s) => `"${s}"`).join(', ')}`, value: strategy };
    }
    if (pool.weights !== undefined) {
      if (strategy !== 'weighted')
        return { field: `${at}.weights`, expected: 'nothing unless the strategy is "weighted"', value: pool.weights };
      if (!Array.isArray(pool.weights) || pool.weights.length !== pool.members.length) {
        return { field: `${at}.weights`, expected: `one weight per member (${pool.members.length})`, value: pool.weights };
      }
      for (const [w, weight] of pool.weights.entries()) {
        if (typeof weight !== 'number' || !(weight > 0) || !Number.isFinite(weight)) {
          return { field: `${at}.weights[${w}]`, expected: 'a number > 0', value: weight };
        }
      }
    }
  }
  const byName = new Map(pools.map((pool) => [pool.name, pool]));
  for (const [index, pool] of pools.entries()) {
    for (const [f, name] of (pool.fallback ?? []).entries()) {
      const field = `pools[${index}].fallback[${f}]`;
      if (!providerNames.has(name) && !byName.has(name)) {
        return { field, expected: `a provider or a pool (${[...providers, ...byName.keys()].join(', ')})`, value: name };
      }
      const cycle = fallbackCycle(pool.name, name, byName);
      if (cycle !== undefined) return { field, expected: `no cycle of fallbacks (${cycle.join(' → ')})`, value: name };
    }
  }
  return undefined;
}

/** The way from `from` through `to` back to `from` along fallbacks, if there is one. */
function fallbackCycle(from: string, to: string, pools: ReadonlyMap<string, PoolSetup>): string[] | undefined {
  const path = [from];
  const visit = (name: string): boolean => {
    path.push(name);
    if (name === from) return true;
    for (const next of pools.get(name)?.fallback ?? []) if (path.indexOf(next) <= 0 && visit(next)) return true;
    path.pop();
    return false;
  };
  return visit(to) ? path : undefined;
}
