import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import type { CallGate } from '../gate/call-gate.ts';
import type { CallCost } from '../quota/provider-limits.ts';
import { silentLogger } from '../silent-logger.ts';
import { combinedBacklogMs } from './pool-capacity.ts';
import type { PoolStrategy } from './pool-setup.ts';
import type { Route, RouteCall, RouteChoice } from './route.ts';

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
  /** Routes tried in order when the pool cannot serve a call (see {@link Route.fallback}). @default none */
  readonly fallback?: readonly Route[] | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Told each member that goes down, comes back or is dropped, at warn level. @default silentLogger */
  readonly logger?: Logger | undefined;
  /** Told each member that goes down, comes back or is dropped. @default none */
  readonly onMemberChange?: ((change: PoolMemberChange) => void) | undefined;
  /** Draws for `weighted`, in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

interface Member {
  readonly gate: CallGate;
  readonly weight: number;
  dropped: boolean;
}

/** A wait this short is none: the difference is float arithmetic, not time. */
const EPSILON_MS = 1e-6;

/**
 * Several providers of one model — keys, deployments, vendors — as one route: each attempt goes to a
 * member by the pool's strategy (by default the one whose limits grant it soonest, asked without
 * taking), and a retried call goes to whichever member is then best, not necessarily the same.
 *
 * The pool only chooses; the call loop (`CallLoop`) makes the attempts, one backoff policy counting
 * them across members. A member's own failure delays only its own next attempt at the call (the
 * backoff, or its retry-after); the retry goes to the best of the members the call has not failed
 * on, at once, and back to one it failed on only when there is no other. Members whose circuit is
 * open are not chosen; with every one open, the call waits for the first to admit probes. A member
 * that refuses what no retry mends (401, 403, no credit) is dropped; its attempt is not counted
 * against the call. A request too long for the model or refused by a content filter, the attempts
 * spent, every member dropped or down: the call goes to the fallbacks in turn, each with its own
 * retries.
 */
export class RoutePool implements Route {
  /** The pool's name. */
  readonly name: string;
  /** How it puts each call on a member. */
  readonly strategy: PoolStrategy;
  /** Its members' gates, in the order listed. */
  readonly gates: readonly CallGate[];
  /** Routes tried in turn when the pool cannot serve a call. */
  readonly fallback: readonly Route[];
  readonly #members: readonly Member[];
  readonly #byGate: ReadonlyMap<CallGate, Member>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onMemberChange: RoutePoolOptions['onMemberChange'];
  readonly #random: () => number;
  readonly #circuitListeners = new Set<() => void>();

  constructor(options: RoutePoolOptions) {
    const { name, members, strategy = 'soonest', weights, fallback = [] } = options;
    if (members.length === 0) throw new TypeError(`Expected the members of pool "${name}" to be at least one gate, got none`);
    this.name = name;
    this.strategy = strategy;
    this.gates = Object.freeze([...members]);
    this.#members = members.map((gate, index) => ({
      gate,
      weight: weights?.[index] ?? (gate.limits.rate === Infinity ? 1 : gate.limits.rate),
      dropped: false,
    }));
    this.#byGate = new Map(this.#members.map((member) => [member.gate, member]));
    this.fallback = fallback;
    this.#clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'route-pool', pool: name });
    this.#onMemberChange = options.onMemberChange;
    this.#random = options.random ?? Math.random;
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
   * Drops `gate` for good: it refused what no retry mends (the key, an empty account). Says whether
   * a member is left to take calls.
   */
  drop(gate: CallGate, error: Error): boolean {
    const member = this.#byGate.get(gate);
    if (member !== undefined && !member.dropped) {
      member.dropped = true;
      this.#tell(member, 'dropped', error);
      for (const listener of this.#circuitListeners) listener();
    }
    return this.#live().length > 0;
  }

  #live(): Member[] {
    return this.#members.filter((member) => !member.dropped);
  }

  /**
   * The member the strategy puts the call's next attempt on now: `'wait'` when every live member's
   * circuit is open (a half-open one may take it — its probe is how it comes back — unless it
   * refused this call), `'none'` when none is left.
   */
  choose(call: RouteCall): RouteChoice {
    const live = this.#live();
    if (live.length === 0) return 'none';
    const nowMs = this.#clock.now();
    const open = live.filter((member) => {
      const waitMs = member.gate.circuitWaitMs();
      return waitMs === 0 || (waitMs === Infinity && !call.refusedBy(member.gate));
    });
    if (open.length === 0) return 'wait';
    // A member this call has failed on goes last: another that can take it at all is likelier to
    // answer than one that just refused the connection or said its quota was spent.
    const untried = open.filter((member) => call.retryAtMs(member.gate) === undefined);
    if (untried.length > 0 && untried.length < open.length) open.splice(0, open.length, ...untried);
    const waitOf = (member: Member) => Math.max(grantWaitMs(member.gate), (call.retryAtMs(member.gate) ?? 0) - nowMs);
    switch (this.strategy) {
      case 'weighted':
        return this.#draw(open).gate;
      case 'ordered': {
        // In time: leaving this call and those after it what they are expected to take. A member
        // that grants just before the deadline would have the call time out in flight.
        const withinMs = call.withinMs();
        return (open.find((member) => waitOf(member) <= withinMs) ?? soonest(open, waitOf)).gate;
      }
      case 'soonest':
        return soonest(open, waitOf).gate;
    }
  }

  #draw(members: readonly Member[]): Member {
    return drawByWeight(members, (member) => member.weight, this.#random());
  }

  /** Ms until the first live member's circuit admits probes; Infinity while each is half-open with its probes out. */
  #circuitWaitOfLive(): number {
    return Math.min(...this.#live().map((member) => member.gate.circuitWaitMs()));
  }

  /** What a call through the pool typically takes from its members' limits: the most any live member's calls take. */
  typicalCost(): CallCost {
    const live = this.#live();
    if (live.length === 0) return this.fallback[0]?.typicalCost() ?? { requests: 1, inputTokens: 0, outputTokens: 0 };
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
    if (live.length === 0) return this.fallback[0]?.backlogMs(calls, perCall) ?? Infinity;
    return combinedBacklogMs(
      live.map(
        ({ gate }) =>
          (k: number) =>
            gate.backlogMs(k + gate.arriving, perCall),
      ),
      calls,
    );
  }

  /** The soonest live member's circuit wait (0 when one is closed); with no member left, the first fallback's. */
  circuitWaitMs(): number {
    const live = this.#live();
    if (live.length === 0) return this.fallback[0]?.circuitWaitMs() ?? 0;
    const waitMs = this.#circuitWaitOfLive();
    // Every member down: a fallback may take the call meanwhile.
    if (waitMs > 0 && this.fallback.length > 0) return Math.min(waitMs, ...this.fallback.map((route) => route.circuitWaitMs()));
    return waitMs;
  }

  /** Calls `listener` on every change of a member's or a fallback's circuit, and when a member is dropped. */
  onCircuitChange(listener: () => void): () => void {
    this.#circuitListeners.add(listener);
    const stops = [
      ...this.#members.map((member) => member.gate.onCircuitChange(listener)),
      ...this.fallback.map((route) => route.onCircuitChange(listener)),
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

/**
 * One of `items` drawn in proportion to its weight, `draw` a number in [0, 1): the `weighted`
 * strategy's choice, the same for a run's pools and the proxy's.
 */
export function drawByWeight<T>(items: readonly T[], weightOf: (item: T) => number, draw: number): T {
  const total = items.reduce((sum, item) => sum + weightOf(item), 0);
  let left = draw * total;
  for (const item of items) {
    left -= weightOf(item);
    if (left < 0) return item;
  }
  return items.at(-1)!;
}

/** Ms until `gate`'s limits would grant one more call, behind the attempts already on their way to it. */
function grantWaitMs(gate: CallGate): number {
  return gate.backlogMs(1 + gate.arriving, gate.typicalCost());
}

/** The member that would grant soonest; ties to the one with the fewest attempts in flight, then to the first listed. */
function soonest(members: readonly Member[], waitOf: (member: Member) => number): Member {
  let best = members[0]!;
  let bestMs = waitOf(best);
  for (const member of members.slice(1)) {
    const ms = waitOf(member);
    if (ms < bestMs - EPSILON_MS || (Math.abs(ms - bestMs) <= EPSILON_MS && member.gate.inFlight < best.gate.inFlight)) {
      best = member;
      bestMs = ms;
    }
  }
  return best;
}
