// One provider's gate and the call loop over it, as one thing to call: for tests that call a
// provider through its gate directly (the pipeline makes the same of each provider it is given).
import { CallGate, type CallGateOptions } from '../src/gate/call-gate.ts';
import type { LlmRequest } from '../src/provider/provider.ts';
import { CallLoop, type CallLoopOptions } from '../src/route/call-loop.ts';
import { ProviderRoute } from '../src/route/provider-route.ts';
import type { RouteAnswer, RouteCallOptions } from '../src/route/route.ts';

/** A gate, its one-provider route, and a loop with the loop's policies from `options`: a `RouteCaller`. */
export interface GateCaller {
  /** The provider's name. */
  readonly name: string;
  readonly gate: CallGate;
  readonly route: ProviderRoute;
  readonly loop: CallLoop;
  /** A call through the gate, as the pipeline makes it. */
  call(request: LlmRequest, options?: RouteCallOptions): Promise<RouteAnswer>;
}

/** The gate `options` make, called through a loop with their `retry`, `maxRepairs` and `cache`. */
export function gateCaller(options: CallGateOptions & Pick<CallLoopOptions, 'retry' | 'maxRepairs' | 'cache'>): GateCaller {
  const { retry, maxRepairs, cache, ...setup } = options;
  const gate = new CallGate(setup);
  const route = new ProviderRoute(gate);
  const loop = new CallLoop({ retry, maxRepairs, cache, clock: setup.clock, logger: setup.logger });
  return { name: gate.name, gate, route, loop, call: (request, callOptions) => loop.call(route, request, callOptions) };
}
