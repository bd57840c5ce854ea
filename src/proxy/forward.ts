import type { IncomingHttpHeaders } from 'node:http';
import type { BreakerPermit } from '../breaker/circuit-breaker.ts';
import { sleep, type Clock } from '../clock.ts';
import { isMaxWaitExceededError } from '../limiter/token-bucket.ts';
import type { CallCost, LimitGrant } from '../quota/provider-limits.ts';
import type { ProxyRequestFacts } from '../vendors/proxy-wire.ts';
import type { FairQueue } from './fair-queue.ts';
import type { KeyState } from './gateway-keys.ts';
import { isRetryableStatus, readAll, retryAfterMsOf, sendUpstream, type UpstreamMember, type UpstreamResponse } from './upstream-member.ts';

/** A model's route: the provider or pool serving it, its members, and the fair queue in front of their limits. */
export interface GatewayRoute {
  readonly name: string;
  readonly members: readonly UpstreamMember[];
  readonly queue: FairQueue;
}

/** One client request as it is forwarded. */
export interface Forwarding {
  readonly key: KeyState;
  readonly route: GatewayRoute;
  /** The route's members that speak the client's API. */
  readonly members: readonly UpstreamMember[];
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
}

/** How a forwarding ended. */
export type Forwarded =
  /** A member answered 2xx: the body is the caller's to read or stream, the grant to settle on its usage. */
  | { readonly kind: 'answer'; readonly member: UpstreamMember; readonly grant: LimitGrant; readonly response: UpstreamResponse }
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
 * Forwards a request: its turn in the route's fair queue, the member that grants soonest (its
 * circuit closed, not yet failed for this request), its limits acquired before the call, and on a
 * 429, a 5xx or no answer another member (or the same after the wait it asked). Nothing is sent to
 * the client here: a failure before an answer leaves the client none the wiser.
 */
export async function forward(
  request: Forwarding,
  clock: Clock,
  tell: (member: UpstreamMember, outcome: CallOutcome) => void,
): Promise<Forwarded> {
  const { key, route, members, facts, signal } = request;
  const cost: CallCost = { requests: 1, inputTokens: request.inputTokens, outputTokens: request.maxOutputTokens };
  const tried = new Set<UpstreamMember>();
  let last: Extract<Forwarded, { kind: 'upstream' }> | undefined;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const waitMs = request.deadlineMs - clock.now();
    if (waitMs <= 0) break;
    let chosen: Chosen;
    try {
      chosen = await route.queue.take(key.name, key.weight, 1, () => choose(members, tried, cost, signal, waitMs), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof NoMemberError) break;
      if (isMaxWaitExceededError(error)) return { kind: 'busy', retryAfterMs: error.waitMs };
      throw error;
    }
    const { member, grant, permit } = chosen;
    let response: UpstreamResponse;
    try {
      response = await sendUpstream(
        member.wire.request(request.body, member.target, facts, request.maxOutputTokens, request.clientHeaders),
        signal,
        member.callTimeoutMs,
      );
    } catch {
      // No answer: nothing was used of the quota (a connection refused), or nothing tells (the member's circuit hears of it).
      grant.settle(NO_TOKENS);
      if (signal.aborted) {
        permit?.release();
        throw signal.reason;
      }
      permit?.failure();
      tell(member, 'failed');
      tried.add(member);
      continue;
    }
    if (response.status >= 200 && response.status < 300) {
      permit?.success();
      tell(member, 'ok');
      return { kind: 'answer', member, grant, response };
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

let nextTurn = 0;

/** The member that would grant soonest, its circuit's permit, and its limits acquired for `cost`. */
async function choose(
  members: readonly UpstreamMember[],
  tried: ReadonlySet<UpstreamMember>,
  cost: CallCost,
  signal: AbortSignal,
  maxWaitMs: number,
): Promise<Chosen> {
  const open = members.filter((member) => member.breaker?.state.kind !== 'open');
  const fresh = open.filter((member) => !tried.has(member));
  const pool = fresh.length > 0 ? fresh : open;
  // Soonest first; members equally soon take turns, so that a quiet pool spreads its calls.
  const turn = nextTurn++;
  const candidates = pool.map((member, index) => ({
    member,
    backlogMs: member.limits.backlogMs(1, cost),
    order: (index + turn) % pool.length,
  }));
  candidates.sort((a, b) => a.backlogMs - b.backlogMs || a.order - b.order);
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
