import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { AuthenticationError, BadRequestError, RateLimitError, RefusalError, ServerError } from '../../src/provider/provider.ts';
import { RetryError } from '../../src/retry/retry.ts';
import { CallLoop, type CallLoopOptions } from '../../src/route/call-loop.ts';
import { RoutePool, type PoolMemberChange, type RoutePoolOptions } from '../../src/route/pool.ts';
import { ProviderRoute } from '../../src/route/provider-route.ts';
import type { RouteAnswer, RouteCallOptions } from '../../src/route/route.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { drive, ScriptedProvider, type Step } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';

interface MemberSpec {
  readonly name: string;
  readonly rate: number;
  readonly burst?: number;
  readonly script?: readonly Step[];
  readonly breaker?: { failureThreshold: number; cooldownMs: number };
}

type Call = (request: LlmRequest, options?: RouteCallOptions) => Promise<RouteAnswer>;

/** A pool of scripted providers on a manual clock, each behind its own gate, called through a loop with `options`' policies. */
function poolOf(
  clock: ManualClock,
  specs: readonly MemberSpec[],
  options: Partial<RoutePoolOptions> & Pick<CallLoopOptions, 'retry' | 'maxRepairs'> = {},
) {
  const { retry, maxRepairs, ...poolOptions } = options;
  const providers = specs.map((spec) => new ScriptedProvider({ name: spec.name, clock, script: spec.script }));
  const gates = specs.map(
    (spec, index) =>
      new CallGate({ provider: providers[index]!, limits: requestLimit(spec.rate, spec.burst ?? 1), clock, breaker: spec.breaker }),
  );
  const changes: PoolMemberChange[] = [];
  const pool = new RoutePool({ name: 'gpt', members: gates, clock, onMemberChange: (change) => changes.push(change), ...poolOptions });
  const loop = new CallLoop({ retry, maxRepairs, clock });
  const call: Call = (request, callOptions) => loop.call(pool, request, callOptions);
  return { pool, providers, gates, changes, loop, call };
}

const fallbackRoute = (clock: ManualClock, name = 'claude', script?: readonly Step[]) =>
  new ProviderRoute(new CallGate({ provider: new ScriptedProvider({ name, clock, script }), limits: requestLimit(100, 1), clock }));

/** Makes `count` calls through `call` at once and drives the clock until all have ended. */
async function callMany(clock: ManualClock, call: Call, count: number, options: RouteCallOptions = {}) {
  const calls = Array.from({ length: count }, (_, i) => call(builtinRequest('summarize', `a${i}`), options));
  return drive(clock, Promise.all(calls));
}

describe('RoutePool soonest (the default)', () => {
  it('spreads calls by quota: members at 10/s and 20/s take a third and two thirds, at the combined 30/s', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [
      { name: 'key-a', rate: 10 },
      { name: 'key-b', rate: 20 },
    ]);
    const answers = await callMany(clock, call, 300);
    const [a, b] = providers.map((provider) => provider.calls.length);
    expect(a! + b!).toBe(300);
    expect(a).toBeGreaterThanOrEqual(98);
    expect(a).toBeLessThanOrEqual(102);
    // The last grant at the combined rate: (300 − 2 bursts) / 30/s, to within a step of the drive.
    const lastMs = Math.max(...providers.flatMap((provider) => provider.calls.map((call) => call.atMs)));
    expect(lastMs).toBeGreaterThanOrEqual((298 / 30) * 1000 - 1);
    expect(lastMs).toBeLessThanOrEqual((298 / 30) * 1000 + 40);
    expect(answers.filter((answer) => answer.servedBy === 'key-a')).toHaveLength(a!);
    // No member is sent more than its limits take: each one's calls are spaced by its own rate.
    for (const [index, provider] of providers.entries()) {
      const spacingMs = 1000 / [10, 20][index]!;
      const times = provider.calls.map((call) => call.atMs).sort((x, y) => x - y);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(spacingMs - 1e-6);
    }
  });

  it('ties go to the member with the fewest calls in flight', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [
      { name: 'key-a', rate: Infinity, script: [{ latencyMs: 100 }] },
      { name: 'key-b', rate: Infinity, script: [{ latencyMs: 100 }] },
    ]);
    await callMany(clock, call, 6);
    expect(providers.map((provider) => provider.calls.length)).toEqual([3, 3]);
  });

  it('its backlog is the members’ capacity together: 32 calls at 10/s + 20/s, burst 1 each, take (32 − 2) / 30 s', () => {
    const clock = new ManualClock();
    const { pool } = poolOf(clock, [
      { name: 'key-a', rate: 10 },
      { name: 'key-b', rate: 20 },
    ]);
    expect(pool.backlogMs(2)).toBe(0);
    expect(pool.backlogMs(32)).toBeCloseTo(1000, 0);
    expect(pool.backlogMs(32)).toBeGreaterThanOrEqual(999.99);
  });

  it('a retried call goes to the member that can take it soonest, not after the failed one’s retry-after', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [
      { name: 'key-a', rate: 10, script: [{ error: new RateLimitError('429', { retryAfterMs: 5000 }) }, {}] },
      { name: 'key-b', rate: 10 },
    ]);
    const events: AttemptEvent[] = [];
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1'), { onAttempt: (event) => events.push(event) }));
    expect(answer).toMatchObject({ servedBy: 'key-b', attempts: 2 });
    expect(providers[1]!.calls[0]!.atMs).toBe(0);
    expect(events.map((event) => [event.provider, event.outcome, event.retryInMs])).toEqual([
      ['key-a', 'rate-limited', 0],
      ['key-b', 'ok', undefined],
    ]);
  });

  it('a retry goes to a member the call has not failed on, even one with a longer queue', async () => {
    const clock = new ManualClock();
    const { providers, gates, loop, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: 100, script: [{ error: new ServerError() }, {}] },
        { name: 'key-b', rate: 1 },
      ],
      { retry: { backoff: () => 1 } },
    );
    // key-b's token is taken: its next grant is a second off, key-a's backoff is 1 ms.
    await drive(clock, loop.call(new ProviderRoute(gates[1]!), builtinRequest('summarize', 'a0')));
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1')));
    expect(answer).toMatchObject({ servedBy: 'key-b', attempts: 2 });
    expect(providers[0]!.calls).toHaveLength(1);
    expect(providers[1]!.calls[1]!.atMs).toBeGreaterThanOrEqual(1000);
  });

  it('waits out the failed member’s backoff when it is the only one left', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [
      { name: 'key-a', rate: 10, script: [{ error: new RateLimitError('429', { retryAfterMs: 700 }) }, {}] },
    ]);
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1')));
    expect(answer).toMatchObject({ servedBy: 'key-a', attempts: 2 });
    expect(providers[0]!.calls.map((call) => call.atMs)).toEqual([0, 700]);
  });

  it('skips a member whose circuit is open, says it is down and back', async () => {
    const clock = new ManualClock();
    const { pool, providers, changes, call } = poolOf(clock, [
      { name: 'key-a', rate: 100, script: [{ error: new ServerError() }, {}], breaker: { failureThreshold: 1, cooldownMs: 1000 } },
      { name: 'key-b', rate: 100 },
    ]);
    await drive(clock, call(builtinRequest('summarize', 'a0')));
    expect(changes.map((change) => [change.member, change.change])).toEqual([['key-a', 'down']]);
    expect(pool.circuitWaitMs()).toBe(0);
    await callMany(clock, call, 20);
    // Down for its cooldown: everything went to key-b.
    expect(providers[0]!.calls).toHaveLength(1);
    await clock.advance(1000);
    await callMany(clock, call, 4);
    expect(providers[0]!.calls.length).toBeGreaterThan(1);
    expect(changes.map((change) => [change.member, change.change])).toEqual([
      ['key-a', 'down'],
      ['key-a', 'back'],
    ]);
  });
});

describe('RoutePool weighted', () => {
  it('draws members by weight, whatever their queues', async () => {
    const clock = new ManualClock();
    let seed = 7;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: Infinity },
        { name: 'key-b', rate: Infinity },
      ],
      { strategy: 'weighted', weights: [1, 3], random },
    );
    await callMany(clock, call, 400);
    const a = providers[0]!.calls.length;
    expect(a).toBeGreaterThan(70);
    expect(a).toBeLessThan(130);
  });

  it('weighs members by their request rates by default', async () => {
    const clock = new ManualClock();
    const draws = [0.2, 0.5, 0.9];
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: 10 },
        { name: 'key-b', rate: 30 },
      ],
      { strategy: 'weighted', random: () => draws.shift()! },
    );
    await callMany(clock, call, 3);
    // 0.2 of 40 falls in key-a's 10, 0.5 and 0.9 in key-b's 30.
    expect(providers.map((provider) => provider.calls.length)).toEqual([1, 2]);
  });
});

describe('RoutePool ordered', () => {
  it('fills the first member up to what it can grant within the deadline, then the next', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: 10 },
        { name: 'key-b', rate: 10 },
      ],
      { strategy: 'ordered' },
    );
    await callMany(clock, call, 20, { deadlineMs: 1000 });
    // key-a grants 1 now and one every 100 ms: 11 within 1000 ms; the rest spill to key-b.
    expect(providers.map((provider) => provider.calls.length)).toEqual([11, 9]);
  });

  it('in time leaves the call and those after it their expected time (keepBeforeDeadlineMs): no grant just before the deadline', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: 10 },
        { name: 'key-b', rate: 10 },
      ],
      { strategy: 'ordered' },
    );
    await callMany(clock, call, 14, { deadlineMs: 1000, keepBeforeDeadlineMs: 400 });
    // key-a grants 7 within the 600 ms the calls may wait (1 now, one every 100 ms), not 11 within the 1000 ms.
    expect(providers.map((provider) => provider.calls.length)).toEqual([7, 7]);
  });
});

describe('RoutePool failures', () => {
  it('drops a member that refuses the key, once, and its calls go to the others uncounted', async () => {
    const clock = new ManualClock();
    const { pool, providers, changes, call } = poolOf(clock, [
      { name: 'key-a', rate: Infinity, script: [{ latencyMs: 10, error: new AuthenticationError('401 the API key was refused') }] },
      { name: 'key-b', rate: Infinity, script: [{ latencyMs: 10 }] },
    ]);
    const events: AttemptEvent[] = [];
    const answers = await callMany(clock, call, 10, { onAttempt: (event: AttemptEvent) => events.push(event) });
    expect(answers.every((answer) => answer.servedBy === 'key-b' && answer.attempts === 1)).toBe(true);
    expect(changes).toEqual([
      expect.objectContaining({ pool: 'gpt', member: 'key-a', change: 'dropped', left: 1, error: expect.any(AuthenticationError) }),
    ]);
    expect(pool.live).toEqual(['key-b']);
    const refused = events.filter((event) => event.outcome === 'unauthorized');
    expect(refused.length).toBe(providers[0]!.calls.length);
    expect(refused.every((event) => event.dropped === true)).toBe(true);
    // Dropped, it takes no more calls.
    await callMany(clock, call, 3);
    expect(providers[0]!.calls.length).toBe(refused.length);
  });

  it('with no member left and no fallback, rejects with the refusal, not marked dropped: the run stops for it', async () => {
    const clock = new ManualClock();
    const { call } = poolOf(clock, [{ name: 'key-a', rate: Infinity, script: [{ error: new AuthenticationError('401 refused') }] }]);
    const events: AttemptEvent[] = [];
    const error = await drive(
      clock,
      call(builtinRequest('summarize', 'a1'), { onAttempt: (event) => events.push(event) }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(RetryError);
    expect((error as RetryError).lastError).toBeInstanceOf(AuthenticationError);
    expect(events.map((event) => event.dropped)).toEqual([false]);
  });

  it('goes to the fallback when every member has spent its attempts', async () => {
    const clock = new ManualClock();
    const fallback = fallbackRoute(clock);
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: Infinity, script: [{ error: new ServerError() }] },
        { name: 'key-b', rate: Infinity, script: [{ error: new ServerError() }] },
      ],
      { fallback: [fallback], retry: { maxAttempts: 3 } },
    );
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1')));
    expect(answer).toMatchObject({ servedBy: 'claude', attempts: 4 });
    expect(providers[0]!.calls.length + providers[1]!.calls.length).toBe(3);
  });

  it.each([
    ['too long for the context (413)', new BadRequestError('413 request too large', { status: 413 })],
    ['refused by a content filter', new RefusalError('content filter')],
  ])('goes to the fallback at once with a request %s', async (_, error) => {
    const clock = new ManualClock();
    const fallback = fallbackRoute(clock);
    const { providers, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: Infinity, script: [{ error }] },
        { name: 'key-b', rate: Infinity },
      ],
      { fallback: [fallback] },
    );
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1')));
    expect(answer).toMatchObject({ servedBy: 'claude', attempts: 2 });
    expect(providers[1]!.calls).toHaveLength(0);
  });

  it('goes to the fallback at once when every member is down', async () => {
    const clock = new ManualClock();
    const fallback = fallbackRoute(clock);
    const breaker = { failureThreshold: 1, cooldownMs: 60_000 };
    const { pool, call } = poolOf(
      clock,
      [
        { name: 'key-a', rate: Infinity, script: [{ error: new ServerError() }], breaker },
        { name: 'key-b', rate: Infinity, script: [{ error: new ServerError() }], breaker },
      ],
      { fallback: [fallback], retry: { maxAttempts: 2 } },
    );
    await drive(clock, call(builtinRequest('summarize', 'a0')));
    const events: AttemptEvent[] = [];
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1'), { onAttempt: (event) => events.push(event) }));
    expect(answer.servedBy).toBe('claude');
    expect(events.map((event) => event.provider)).toEqual(['claude']);
    expect(pool.circuitWaitMs()).toBe(0);
  });

  it('without a fallback, a pool whose members are all down waits for the first circuit to admit probes', async () => {
    const clock = new ManualClock();
    const breaker = { failureThreshold: 1, cooldownMs: 500 };
    const { providers, call } = poolOf(clock, [{ name: 'key-a', rate: Infinity, script: [{ error: new ServerError() }, {}], breaker }]);
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1'), { deadlineMs: 5000 }));
    expect(answer.servedBy).toBe('key-a');
    expect(providers[0]!.calls.map((call) => call.atMs)[1]).toBeGreaterThanOrEqual(500);
  });
});
