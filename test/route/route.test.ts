import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { CallDeadline } from '../../src/gate/call-deadline.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit, type ProviderLimits } from '../../src/quota/provider-limits.ts';
import { CallLoop } from '../../src/route/call-loop.ts';
import { ProviderRoute } from '../../src/route/provider-route.ts';
import type { Route } from '../../src/route/route.ts';
import { gateCaller } from '../gate-caller.ts';
import { AuthenticationError, ServerError } from '../../src/provider/provider.ts';
import { drive, ScriptedProvider } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

/** A deadline that records when it was started, as an article's is. */
class RecordedDeadline implements CallDeadline {
  atMs = Infinity;
  readonly signal = undefined;
  readonly startedAt: number[] = [];

  constructor(
    readonly fromMs: number,
    private readonly timeoutMs: number,
    private readonly withinMs = Infinity,
  ) {}

  get started(): boolean {
    return this.atMs !== Infinity;
  }

  firstGrantWithinMs(): number {
    return this.withinMs;
  }

  start(atMs: number): void {
    this.startedAt.push(atMs);
    if (this.atMs === Infinity) this.atMs = atMs + this.timeoutMs;
  }
}

function sharedView(limits: LocalLimits): ProviderLimits {
  return {
    specs: limits.specs,
    countsTokens: limits.countsTokens,
    shared: true,
    get rate() {
      return limits.rate;
    },
    acquire: (cost, options) => limits.acquire(cost, options),
    setRate: (rate) => limits.setRate(rate),
    lowerTo: (kind, remaining) => limits.lowerTo(kind, remaining),
    backlogMs: (calls, perCall) => limits.backlogMs(calls, perCall),
  };
}

describe('ProviderRoute', () => {
  it('is a route: named after its provider, choosing its gate, its figures the gate’s', async () => {
    const clock = new ManualClock();
    const limits = new LocalLimits({ limits: requestLimit(10, 1), clock });
    const gate = new CallGate({ provider: new ScriptedProvider({ name: 'sim', clock }), limits, clock });
    const route: Route = new ProviderRoute(gate);
    expect(route.name).toBe('sim');
    expect(route.gates).toEqual([gate]);
    expect(route.backlogMs(3)).toBe(limits.backlogMs(3));
    expect(route.circuitWaitMs()).toBe(0);
    const { attempts } = await drive(clock, new CallLoop({ clock }).call(route, builtinRequest('summarize', 'a1')));
    expect(attempts).toBe(1);
    // The call took the burst's token: the next two wait for theirs, 100 ms apart.
    expect(route.backlogMs(2)).toBe(limits.backlogMs(2));
    expect(route.backlogMs(2)).toBeGreaterThan(100);
  });
});

describe('a call with a deadline not yet started', () => {
  it('on local limits starts it from its fromMs before waiting: a grant past it is refused at once', async () => {
    const clock = new ManualClock(1000);
    const limits = new LocalLimits({ limits: requestLimit(1, 1), clock });
    const provider = new ScriptedProvider({ name: 'sim', clock });
    const gate = gateCaller({ provider, limits, clock });
    await drive(clock, gate.call(builtinRequest('summarize', 'a0')));
    const deadline = new RecordedDeadline(900, 500);

    const error = await drive(
      clock,
      gate.call(builtinRequest('summarize', 'a1'), { deadline }).catch((e: unknown) => e),
    );

    expect(deadline.startedAt).toEqual([900]);
    expect(deadline.atMs).toBe(1400);
    // The next token is due at 2000, past 1400: refused, nothing sent.
    expect((error as Error).name).toBe('RetryError');
    expect(provider.calls).toHaveLength(1);
  });

  it('on shared limits starts it at the grant, and takes a grant only when it is within firstGrantWithinMs', async () => {
    const clock = new ManualClock(0);
    const local = new LocalLimits({ limits: requestLimit(10, 1), clock });
    const provider = new ScriptedProvider({ name: 'sim', clock });
    const gate = gateCaller({ provider, limits: sharedView(local), clock });
    // Another process's 20 calls ahead: 2 s of the quota.
    const others = Promise.all(Array.from({ length: 20 }, () => local.acquire({ requests: 1, inputTokens: 0, outputTokens: 0 })));
    const deadline = new RecordedDeadline(0, 300, 150);

    await drive(clock, gate.call(builtinRequest('summarize', 'a1'), { deadline }));
    await drive(clock, others);

    expect(provider.calls).toHaveLength(1);
    const sentAtMs = provider.calls[0]!.atMs;
    // Not queued behind the others at once (its 300 ms would have run out): taken once near, after them.
    expect(sentAtMs).toBeGreaterThanOrEqual(1900);
    expect(deadline.startedAt[0]).toBe(sentAtMs);
    expect(deadline.atMs).toBe(sentAtMs + 300);
  });
});

describe('a route of one’s own that chooses carelessly', () => {
  /** Always its one gate, whatever the call has met. */
  const careless = (gate: CallGate): Route => ({
    name: 'careless',
    gates: [gate],
    choose: () => gate,
    typicalCost: () => gate.typicalCost(),
    backlogMs: (calls, perCall) => gate.backlogMs(calls, perCall),
    circuitWaitMs: () => gate.circuitWaitMs(),
    onCircuitChange: (listener) => gate.onCircuitChange(listener),
  });

  it('is held to it: a gate whose circuit refused the call is waited for, not asked again at once', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ error: new ServerError() }, {}] });
    const gate = new CallGate({ provider, limits: requestLimit(Infinity, 1), clock, breaker: { failureThreshold: 1, cooldownMs: 500 } });
    const outcomes: string[] = [];
    const loop = new CallLoop({ clock, retry: { backoff: () => 0 } });
    const answer = await drive(
      clock,
      loop.call(careless(gate), builtinRequest('summarize', 'a1'), {
        deadlineMs: 5000,
        onAttempt: (event) => outcomes.push(event.outcome),
      }),
    );
    expect(answer.attempts).toBe(2);
    // One refusal, then the wait for the cooldown: not a refusal per microtask.
    expect(outcomes).toEqual(['server-error', 'circuit-open', 'ok']);
    expect(provider.calls.map((call) => call.atMs)).toEqual([0, 500]);
  });

  it('is held to it: a gate dropped for the call is not asked again, and the call fails with why', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ error: new AuthenticationError('401 refused') }] });
    const gate = new CallGate({ provider, limits: requestLimit(Infinity, 1), clock });
    const route = { ...careless(gate), drop: () => true };
    const error = await drive(
      clock,
      new CallLoop({ clock }).call(route, builtinRequest('summarize', 'a1')).catch((e: unknown) => e),
    );
    expect(provider.calls).toHaveLength(1);
    expect(error).toMatchObject({ name: 'RetryError', lastError: { name: 'AuthenticationError' } });
  });
});
