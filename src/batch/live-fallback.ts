import type { Clock } from '../clock.ts';
import type { LlmRequest } from '../provider/provider.ts';
import type { RouteAnswer, RouteCaller } from '../route/route.ts';

/** How a row sent through the live path ended: the route's answer, or what it rejected with. */
export type LiveOutcome<T> = { readonly item: T; readonly callMs: number } & (
  | { readonly answer: RouteAnswer }
  | { readonly error: unknown }
);

/**
 * Calls `route` for each item's request, at most `concurrency` at once (the route's own limits pace
 * them further), and returns each item's outcome in the order given. A row that a batch could not
 * answer is worth the live price when time matters more: this is the live run's call, its limits,
 * retries and breaker, for a few rows.
 */
export async function callLive<T>(
  route: RouteCaller,
  items: readonly T[],
  requestOf: (item: T) => LlmRequest,
  options: {
    readonly concurrency: number;
    readonly maxOutputTokens: number;
    readonly clock: Clock;
    readonly signal?: AbortSignal | undefined;
  },
): Promise<LiveOutcome<T>[]> {
  const outcomes: LiveOutcome<T>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      const item = items[at]!;
      const startMs = options.clock.now();
      try {
        const answer = await route.call(requestOf(item), { maxOutputTokens: options.maxOutputTokens, signal: options.signal });
        outcomes[at] = { item, callMs: options.clock.now() - startMs, answer };
      } catch (error) {
        outcomes[at] = { item, callMs: options.clock.now() - startMs, error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, items.length) }, worker));
  return outcomes;
}
