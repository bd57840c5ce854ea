import type { IncomingHttpHeaders } from 'node:http';
import type { BreakerPermit } from '../breaker/circuit-breaker.ts';
import { sleep, type Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { CallCost, LimitGrant } from '../quota/provider-limits.ts';
import { drawByWeight } from '../route/pool.ts';
import type { PoolStrategy } from '../route/pool-setup.ts';
import { isBeforeRequest } from '../vendors/http-api.ts';
import type { ProxyRequestFacts } from '../vendors/proxy-wire.ts';
import type { FairQueue } from './fair-queue.ts';
import type { KeyState } from './gateway-keys.ts';
import { isRetryableStatus, readAll, retryAfterMsOf, sendUpstream, type UpstreamMember, type UpstreamResponse } from './upstream-member.ts';

/** A model's route: the provider or pool serving it, its members, and the fair queue in front of their limits. */
export interface GatewayRoute {
  readonly name: string;
  readonly members: readonly UpstreamMember[];
  readonly queue: FairQueue;
  /** How a request is put on a member, as a run's pool does. @default "soonest" */
  readonly strategy: PoolStrategy;
  /** With `weighted`, each member's weight (the pool's `weights`, else its request rate, 1 without one). */
  readonly weights: readonly number[];
  /** Routes tried in turn when this one cannot serve the request (the pool's `fallback`). */
  readonly fallback: readonly GatewayRoute[];
}

/** The routes a request may go to, in turn: the route, then its fallbacks (and theirs), each once. */
export function routesOf(route: GatewayRoute, seen = new Set<GatewayRoute>()): GatewayRoute[] {
  if (seen.has(route)) return [];
  seen.add(route);
  return [route, ...route.fallback.flatMap((next) => routesOf(next, seen))];
}

/** One client request as it is forwarded. */
export interface Forwarding {
  readonly key: KeyState;
  /** The route, then its fallbacks, each with its members that speak the client's API (a route with none is passed over). */
  readonly routes: readonly { readonly route: GatewayRoute; readonly members: readonly UpstreamMember[] }[];
  readonly body: Record<string, unknown>;
  /** The client's headers, for the wire to pass on those of its API that shape the answer. */
  readonly clientHeaders: IncomingHttpHeaders;
  readonly facts: ProxyRequestFacts;
  /** The request's output cap: its own, or the route's. */
  readonly maxOutputTokens: number;
  /** At most the prompt's tokens: what the limits and the budget hold before the call. */
  readonly inputTokens: number;
  readonly signal: AbortSignal;
  /** Clock instant by which the upstream must have granted the call. */
  readonly deadlineMs: number;
  /**
   * Counted as it goes: attempts whose fate is unknown — sent, then no answer (a reset, a timeout,
   * an answer cut off): perhaps billed. A connection refused, a name unresolved, a TLS handshake
   * failed sent nothing and is not counted.
   */
  readonly fates: { unknown: number };
}

/** Whether a failed upstream call may have reached the member: anything but an error that says nothing left. */
function maybeSent(error: unknown): boolean {
  const { code } = (error ?? {}) as { code?: unknown };
  return !(typeof code === 'string' && isBeforeRequest(code));
}

/** How a forwarding ended. */
export type Forwarded =
  /**
   * A member answered 2xx: a whole answer read already (`whole`: a body cut off is a failed attempt,
   * another member's to answer), a stream the caller's to pass on; the grant to settle on its usage.
   */
  | {
      readonly kind: 'answer';
      readonly member: UpstreamMember;
      readonly grant: LimitGrant;
      readonly response: UpstreamResponse;
      readonly whole: Buffer | undefined;
    }
  /** A member refused the request itself (a 4xx other than 429), or every attempt failed: its answer goes to the client as it is. */
  | {
      readonly kind: 'upstream';
      readonly member: UpstreamMember;
      readonly status: number;
      readonly contentType: string;
      readonly body: Buffer;
    }
  /** The upstream's quota could not grant the call before the deadline. */
  | { readonly kind: 'busy'; readonly retryAfterMs: number }
  /** No member could take it: every circuit open, or none answered. */
  | { readonly kind: 'unavailable' };

/** What the forwarding tells as it goes: each upstream call's outcome. */
export type CallOutcome = 'ok' | 'rate_limited' | 'failed' | 'refused';

/** Attempts per request: the first and a retry at each of up to three other members (or the same after its retry-after). */
export const MAX_ATTEMPTS = 4;

const NO_TOKENS = Object.freeze({ inputTokens: 0, outputTokens: 0 });

class NoMemberError extends Error {}

interface Chosen {
  readonly member: UpstreamMember;
  readonly grant: LimitGrant;
  readonly permit: BreakerPermit | undefined;
}

/**
 * Forwards a request: its turn in the route's fair queue, the member its strategy picks (its
 * circuit closed, not yet failed for this request), its limits acquired before the call, and on a
 * 429, a 5xx or no answer another member (or the same after the wait it asked). A route that cannot
 * serve it (attempts spent, no member open, its quota past the deadline) leaves it to its fallbacks
 * in turn, as a run's pool does. Nothing is sent to
 * the client here: a failure before an answer leaves the client none the wiser.
 */
export async function forward(
  request: Forwarding,
  clock: Clock,
  tell: (member: UpstreamMember, outcome: CallOutcome) => void,
): Promise<Forwarded> {
  let outcome: Forwarded = { kind: 'unavailable' };
  for (const { route, members } of request.routes) {
    if (members.length === 0) continue;
    const tried = await forwardTo(route, members, request, clock, tell);
    // An answer, or a refusal of the request itself, is final; a route that could not serve it leaves it to the next.
    if (tried.kind === 'answer' || (tried.kind === 'upstream' && !isRetryableStatus(tried.status))) return tried;
    if (outcome.kind === 'unavailable' || tried.kind === 'upstream') outcome = tried;
  }
  return outcome;
}

/** One route's attempts at the request (its members, by its strategy). */
async function forwardTo(
  route: GatewayRoute,
  members: readonly UpstreamMember[],
  request: Forwarding,
  clock: Clock,
  tell: (member: UpstreamMember, outcome: CallOutcome) => void,
): Promise<Forwarded> {
  const { key, facts, signal } = request;
  const cost: CallCost = { requests: 1, inputTokens: request.inputTokens, outputTokens: request.maxOutputTokens };
  const tried = new Set<UpstreamMember>();
  let last: Extract<Forwarded, { kind: 'upstream' }> | undefined;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const waitMs = request.deadlineMs - clock.now();
    if (waitMs <= 0) break;
    let chosen: Chosen;
    try {
      chosen = await route.queue.take(key.name, key.weight, 1, () => choose(route, members, tried, cost, signal, waitMs), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof NoMemberError) break;
      if (isMaxWaitExceededError(error)) return { kind: 'busy', retryAfterMs: error.waitMs };
      throw error;
    }
    const { member, grant, permit } = chosen;
    // No answer from the member: the client gone ends the request; otherwise its circuit hears of it, and another member is tried.
    const noAnswer = (): void => {
      if (signal.aborted) {
        permit?.release();
        throw signal.reason;
      }
      permit?.failure();
      tell(member, 'failed');
      tried.add(member);
    };
    let response: UpstreamResponse;
    try {
      response = await sendUpstream(
        member.wire.request(request.body, member.target, facts, request.maxOutputTokens, request.clientHeaders),
        signal,
        member.callTimeoutMs,
      );
    } catch (error) {
      // No answer: nothing was used of the quota (a connection refused), or nothing tells (the member's circuit hears of it).
      grant.settle(NO_TOKENS);
      if (!signal.aborted && maybeSent(error)) request.fates.unknown++;
      noAnswer();
      continue;
    }
    if (response.status >= 200 && response.status < 300) {
      let whole: Buffer | undefined;
      if (!isStreamed(facts.stream, response)) {
        whole = await readAll(response.body).catch(() => undefined);
        if (whole === undefined) {
          // The member went away mid-answer: what it used is unknown (the grant keeps its estimate); another member answers.
          request.fates.unknown++;
          noAnswer();
          continue;
        }
      }
      permit?.success();
      tell(member, 'ok');
      return { kind: 'answer', member, grant, response, whole };
    }
    const body = (await readAll(response.body).catch(() => undefined)) ?? Buffer.alloc(0);
    grant.settle(NO_TOKENS);
    last = {
      kind: 'upstream',
      member,
      status: response.status,
      contentType: String(response.headers['content-type'] ?? 'application/json'),
      body,
    };
    if (!isRetryableStatus(response.status)) {
      permit?.release();
      tell(member, 'refused');
      return last;
    }
    tried.add(member);
    if (response.status === 429) {
      // The upstream's quota said no: its limits' business, not its health.
      permit?.release();
      tell(member, 'rate_limited');
      const available = members.some((other) => !tried.has(other) && other.breaker?.state.kind !== 'open');
      const retryAfterMs = retryAfterMsOf(response.headers) ?? 0;
      if (!available && retryAfterMs > 0) {
        if (retryAfterMs >= request.deadlineMs - clock.now()) return { kind: 'busy', retryAfterMs };
        await sleep(clock, retryAfterMs, signal);
        tried.clear();
      }
    } else {
      permit?.failure();
      tell(member, 'failed');
    }
  }
  return last ?? { kind: 'unavailable' };
}

/** Whether an answer is passed on as a stream: asked for one, and the upstream sends events. */
export const isStreamed = (asked: boolean, response: UpstreamResponse): boolean =>
  asked && /^text\/event-stream/i.test(String(response.headers['content-type'] ?? ''));

let nextTurn = 0;

/**
 * The member the route's strategy puts the attempt on (its circuit's permit taken, its limits
 * acquired for `cost`), then the others soonest first when its circuit refuses: `soonest` the
 * member that would grant soonest (members equally soon in turn, so that a quiet pool spreads its
 * calls), `ordered` the first listed that grants within the wait, `weighted` one drawn by weight.
 */
async function choose(
  route: GatewayRoute,
  members: readonly UpstreamMember[],
  tried: ReadonlySet<UpstreamMember>,
  cost: CallCost,
  signal: AbortSignal,
  maxWaitMs: number,
): Promise<Chosen> {
  if (members.length === 1 && members[0]!.breaker === undefined) {
    // One member, always open: nothing to choose.
    const member = members[0]!;
    return { member, grant: await member.limits.acquire(cost, { signal, maxWaitMs }), permit: undefined };
  }
  const open = members.filter((member) => member.breaker?.state.kind !== 'open');
  const fresh = open.filter((member) => !tried.has(member));
  const pool = fresh.length > 0 ? fresh : open;
  const turn = nextTurn++;
  const candidates = pool.map((member, index) => ({
    member,
    backlogMs: member.limits.backlogMs(1, cost),
    order: (index + turn) % pool.length,
  }));
  candidates.sort((a, b) => a.backlogMs - b.backlogMs || a.order - b.order);
  const first =
    route.strategy === 'ordered'
      ? pool.find((member) => member.limits.backlogMs(1, cost) <= maxWaitMs)
      : route.strategy === 'weighted' && pool.length > 1
        ? drawByWeight(pool, (member) => route.weights[route.members.indexOf(member)] ?? 1, Math.random())
        : undefined;
  if (first !== undefined) candidates.sort((a, b) => Number(b.member === first) - Number(a.member === first));
  for (const { member } of candidates) {
    let permit: BreakerPermit | undefined;
    try {
      permit = member.breaker?.acquirePermit();
    } catch {
      continue;
    }
    try {
      const grant = await member.limits.acquire(cost, { signal, maxWaitMs });
      return { member, grant, permit };
    } catch (error) {
      permit?.release();
      throw error;
    }
  }
  throw new NoMemberError('no member can take the call');
}
