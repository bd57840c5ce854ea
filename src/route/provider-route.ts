import type { CallGate } from '../gate/call-gate.ts';
import type { CallCost } from '../quota/provider-limits.ts';
import type { Route, RouteCall, RouteChoice } from './route.ts';

/**
 * One provider as a route: every attempt goes to its gate, and its figures are the gate's. Named
 * after the provider. An attempt its circuit refused waits for the circuit to move (the loop's
 * wait), then goes to the gate again; a refusal no retry mends fails the call.
 */
export class ProviderRoute implements Route {
  /** The provider's name. */
  readonly name: string;
  /** The provider's gate. */
  readonly gate: CallGate;
  /** Its gate, alone. */
  readonly gates: readonly CallGate[];

  constructor(gate: CallGate) {
    this.name = gate.name;
    this.gate = gate;
    this.gates = Object.freeze([gate]);
  }

  /** Its gate, unless the gate's circuit has just refused the call: then the loop waits for it. */
  choose(call: RouteCall): RouteChoice {
    return call.refusedBy(this.gate) ? 'wait' : this.gate;
  }

  typicalCost(): CallCost {
    return this.gate.typicalCost();
  }

  backlogMs(calls: number, perCall?: CallCost): number {
    return this.gate.backlogMs(calls, perCall);
  }

  circuitWaitMs(): number {
    return this.gate.circuitWaitMs();
  }

  onCircuitChange(listener: () => void): () => void {
    return this.gate.onCircuitChange(listener);
  }
}
