import { describe, it, expect } from 'vitest';
import pino from 'pino';
import { ManualClock } from '../../src/clock.ts';
import {
  CircuitBreaker,
  BrokenCircuitError,
  isBrokenCircuitError,
  type BreakerStateChange,
  type CircuitBreakerOptions,
} from '../../src/breaker/circuit-breaker.ts';
import { ServerError, isServerError } from '../../src/provider/provider.ts';

function setup(options: CircuitBreakerOptions = {}, startMs = 0) {
  const clock = new ManualClock(startMs);
  const breaker = new CircuitBreaker({ clock, ...options });
  const changes: BreakerStateChange[] = [];
  breaker.onStateChange((change) => changes.push(change));
  const transitions = () => changes.map((c) => `${c.from}>${c.to}@${c.atMs}`);
  return { clock, breaker, changes, transitions };
}

function fail(breaker: CircuitBreaker, times: number) {
  for (let i = 0; i < times; i++) breaker.acquirePermit().failure();
}

function succeed(breaker: CircuitBreaker, times: number) {
  for (let i = 0; i < times; i++) breaker.acquirePermit().success();
}

function refusal(fn: () => unknown): BrokenCircuitError {
  try {
    fn();
  } catch (error) {
    if (isBrokenCircuitError(error)) return error;
    throw error;
  }
  throw new Error('expected a BrokenCircuitError, nothing was thrown');
}

describe('new CircuitBreaker()', () => {
  it.each([
    [null, /options/],
    [5, /options/],
    [{ failureThreshold: 0 }, /failureThreshold/],
    [{ failureThreshold: 2.5 }, /failureThreshold/],
    [{ failureThreshold: Number.NaN }, /failureThreshold/],
    [{ failureThreshold: '5' }, /failureThreshold/],
    [{ cooldownMs: -1 }, /cooldownMs/],
    [{ cooldownMs: Infinity }, /cooldownMs/],
    [{ cooldownMs: Number.NaN }, /cooldownMs/],
    [{ halfOpenProbes: 0 }, /halfOpenProbes/],
    [{ halfOpenProbes: 1.5 }, /halfOpenProbes/],
    [{ probeSuccessesToClose: 0 }, /probeSuccessesToClose/],
    [{ failureRatio: 0.5 }, /failureRatio/],
    [{ failureRatio: { ratio: 0, windowMs: 1000, minimumCalls: 1 } }, /failureRatio\.ratio/],
    [{ failureRatio: { ratio: 1.1, windowMs: 1000, minimumCalls: 1 } }, /failureRatio\.ratio/],
    [{ failureRatio: { ratio: 0.5, windowMs: 0, minimumCalls: 1 } }, /failureRatio\.windowMs/],
    [{ failureRatio: { ratio: 0.5, windowMs: Infinity, minimumCalls: 1 } }, /failureRatio\.windowMs/],
    [{ failureRatio: { ratio: 0.5, windowMs: 1000, minimumCalls: 0 } }, /failureRatio\.minimumCalls/],
    [{ clock: {} }, /clock/],
    [{ name: 42 }, /name/],
  ])('throws a TypeError for %o', (options, message) => {
    const create = () => new CircuitBreaker(options as CircuitBreakerOptions);
    expect(create).toThrow(TypeError);
    expect(create).toThrow(/^Expected /);
    expect(create).toThrow(message);
  });

  it('states expected vs got', () => {
    expect(() => new CircuitBreaker({ failureThreshold: 0 })).toThrow('Expected failureThreshold to be an integer >= 1 or Infinity, got 0');
  });

  it('starts closed, never opened', () => {
    const { breaker } = setup();
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
    expect(breaker.opens).toBe(0);
  });

  it('accepts failureThreshold Infinity, leaving opening to the ratio rule', () => {
    const { breaker } = setup({ failureThreshold: Infinity });
    fail(breaker, 1000);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 1000 });
  });
});

describe('.state', () => {
  it('closed -> open after failureThreshold consecutive failures', () => {
    const { breaker, clock, transitions } = setup({ failureThreshold: 3, cooldownMs: 1000 });
    fail(breaker, 2);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 2 });
    clock.set(250);
    fail(breaker, 1);
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 250, reopensAtMs: 1250 });
    expect(transitions()).toEqual(['closed>open@250']);
  });

  it('a success while closed resets the consecutive count', () => {
    const { breaker } = setup({ failureThreshold: 3 });
    fail(breaker, 2);
    succeed(breaker, 1);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
    fail(breaker, 2);
    expect(breaker.state.kind).toBe('closed');
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('open -> half-open exactly when the cooldown ends, not 1 ms earlier', async () => {
    const { breaker, clock, transitions } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    clock.set(100);
    fail(breaker, 1);
    await clock.advance(999);
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 100, reopensAtMs: 1100 });
    await clock.advance(1);
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 });
    expect(transitions()).toEqual(['closed>open@100', 'open>half-open@1100']);
  });

  it('schedules no timer: open turns half-open when read, the event dated at the end of the cooldown', async () => {
    const { breaker, clock, changes } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    fail(breaker, 1);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5000);
    expect(changes).toHaveLength(1);
    expect(breaker.state.kind).toBe('half-open');
    expect(changes[1]).toEqual({
      from: 'open',
      to: 'half-open',
      atMs: 1000,
      state: { kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 },
    });
  });

  it('half-open -> closed once probeSuccessesToClose probes succeeded', () => {
    const { breaker, clock, transitions } = setup({
      failureThreshold: 1,
      cooldownMs: 1000,
      halfOpenProbes: 3,
      probeSuccessesToClose: 2,
    });
    fail(breaker, 1);
    clock.set(1000);
    const probes = [breaker.acquirePermit(), breaker.acquirePermit(), breaker.acquirePermit()];
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 3, probeSuccesses: 0 });
    clock.set(1010);
    probes[0]!.success();
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 2, probeSuccesses: 1 });
    clock.set(1020);
    probes[1]!.success();
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
    expect(transitions()).toEqual(['closed>open@0', 'open>half-open@1000', 'half-open>closed@1020']);
  });

  it('half-open needs halfOpenProbes successes by default', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000, halfOpenProbes: 2 });
    fail(breaker, 1);
    clock.set(1000);
    succeed(breaker, 1);
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 1 });
    succeed(breaker, 1);
    expect(breaker.state.kind).toBe('closed');
  });

  it('probeSuccessesToClose above halfOpenProbes is met by probes one after another', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 0, halfOpenProbes: 1, probeSuccessesToClose: 3 });
    fail(breaker, 1);
    clock.set(1);
    succeed(breaker, 2);
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 2 });
    succeed(breaker, 1);
    expect(breaker.state.kind).toBe('closed');
  });

  it('half-open -> open on a probe failure, even after successes, with a fresh cooldown', () => {
    const { breaker, clock, transitions } = setup({ failureThreshold: 1, cooldownMs: 1000, halfOpenProbes: 3 });
    fail(breaker, 1);
    clock.set(1500);
    const [a, b] = [breaker.acquirePermit(), breaker.acquirePermit()];
    a.success();
    clock.set(1700);
    b.failure();
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 1700, reopensAtMs: 2700 });
    expect(transitions()).toEqual(['closed>open@0', 'open>half-open@1000', 'half-open>open@1700']);
  });

  it('closing starts the consecutive count afresh', () => {
    const { breaker, clock } = setup({ failureThreshold: 2, cooldownMs: 1000 });
    fail(breaker, 2);
    clock.set(1000);
    succeed(breaker, 1);
    fail(breaker, 1);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 1 });
  });

  it('ignores the outcome of a call admitted while closed that ends after the circuit opened', () => {
    const { breaker, clock } = setup({ failureThreshold: 2, cooldownMs: 1000 });
    const straggler = breaker.acquirePermit();
    const other = breaker.acquirePermit();
    fail(breaker, 2);
    clock.set(500);
    expect(straggler.failure()).toBe(true);
    expect(other.success()).toBe(true);
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 0, reopensAtMs: 1000 });
    expect(breaker.opens).toBe(1);
  });

  it('a closed-state straggler does not count as a probe', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    const straggler = breaker.acquirePermit();
    fail(breaker, 1);
    clock.set(1000);
    const probe = breaker.acquirePermit();
    straggler.success();
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 1, probeSuccesses: 0 });
    probe.success();
    expect(breaker.state.kind).toBe('closed');
  });

  it('a probe that ends after another probe reopened the circuit is ignored', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000, halfOpenProbes: 2 });
    fail(breaker, 1);
    clock.set(1000);
    const [a, b] = [breaker.acquirePermit(), breaker.acquirePermit()];
    a.failure();
    clock.set(1200);
    b.success();
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 1000, reopensAtMs: 2000 });
    clock.set(2000);
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 });
  });
});

describe('failureRatio', () => {
  const ratio = { ratio: 0.5, windowMs: 1000, minimumCalls: 4 };

  it('opens when the failure share in the window reaches the ratio with the minimum volume', () => {
    const { breaker, clock, transitions } = setup({ failureRatio: ratio });
    for (const [atMs, failed] of [
      [0, true],
      [100, false],
      [200, true],
    ] as const) {
      clock.set(atMs);
      breaker.acquirePermit()[failed ? 'failure' : 'success']();
    }
    expect(breaker.state.kind).toBe('closed');
    clock.set(300);
    fail(breaker, 1);
    // The default cooldown, BREAKER_DEFAULTS.cooldownMs: 2 s.
    expect(breaker.state).toEqual({ kind: 'open', openedAtMs: 300, reopensAtMs: 2300 });
    expect(transitions()).toEqual(['closed>open@300']);
  });

  it('stays closed below minimumCalls, whatever the share', () => {
    const { breaker } = setup({ failureThreshold: Infinity, failureRatio: { ratio: 0.1, windowMs: 1000, minimumCalls: 4 } });
    fail(breaker, 3);
    expect(breaker.state.kind).toBe('closed');
  });

  it('stays closed below the ratio', () => {
    const { breaker } = setup({ failureRatio: ratio });
    // Every window of 4 or more calls in S S F S S F … holds at most a third failures.
    for (let i = 0; i < 20; i++) {
      succeed(breaker, 2);
      fail(breaker, 1);
    }
    expect(breaker.state.kind).toBe('closed');
  });

  it('opens on the success that brings the window to minimumCalls when the share already holds', () => {
    const { breaker } = setup({ failureRatio: ratio });
    fail(breaker, 3);
    succeed(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('lets outcomes slide out of the window after windowMs', () => {
    const { breaker, clock } = setup({ failureRatio: ratio });
    // Failures at 0 and 100 leave the window (now - 1000, now] at 1000 and 1100.
    for (const atMs of [0, 100]) {
      clock.set(atMs);
      fail(breaker, 1);
    }
    clock.set(1100);
    succeed(breaker, 1);
    clock.set(1200);
    fail(breaker, 1);
    clock.set(1300);
    succeed(breaker, 1);
    // Four calls recorded, two failed, but the window holds only the last three: 1 of 3.
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
    clock.set(1400);
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('an outcome exactly windowMs old has left the window', () => {
    const { breaker, clock } = setup({ failureRatio: { ratio: 1, windowMs: 1000, minimumCalls: 2 } });
    fail(breaker, 1);
    clock.set(1000);
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('closed');
    clock.set(1999);
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('starts with an empty window after closing', () => {
    const { breaker, clock } = setup({ failureThreshold: Infinity, failureRatio: ratio, cooldownMs: 100 });
    fail(breaker, 4);
    expect(breaker.state.kind).toBe('open');
    clock.set(100);
    succeed(breaker, 1);
    fail(breaker, 3);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 3 });
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('keeps exact counts over many calls', () => {
    const { breaker, clock } = setup({ failureThreshold: Infinity, failureRatio: { ratio: 0.3, windowMs: 1000, minimumCalls: 10 } });
    // S S S F, one call per ms for 10 s: the window's share never passes 25 %.
    for (let t = 0; t < 10_000; t++) {
      clock.set(t);
      breaker.acquirePermit()[t % 4 === 3 ? 'failure' : 'success']();
    }
    expect(breaker.state.kind).toBe('closed');
    let failures = 0;
    while (breaker.state.kind === 'closed') {
      clock.set(10_000 + failures);
      fail(breaker, 1);
      failures++;
    }
    // After k failures in a row the window holds calls 9000 + k … 9999 + k: the k failures and the
    // older ones at t ≡ 3 (mod 4), 234 of them for k = 66, the first k to reach 300 of 1000.
    expect(failures).toBe(66);
  });
});

describe('.acquirePermit()', () => {
  it('admits every call while closed', () => {
    const { breaker } = setup();
    const permits = Array.from({ length: 100 }, () => breaker.acquirePermit());
    expect(permits.every((p) => !p.probe)).toBe(true);
  });

  it('fails fast while open', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000, name: 'openai' });
    clock.set(200);
    fail(breaker, 1);
    clock.set(450);
    const error = refusal(() => breaker.acquirePermit());
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(error).toMatchObject({ circuit: 'openai', state: 'open', reopensAtMs: 1200, retryAfterMs: 750 });
    expect(error.message).toBe('circuit "openai" is open; probes admitted in 750ms');
    clock.set(1199);
    expect(refusal(() => breaker.acquirePermit()).retryAfterMs).toBe(1);
  });

  it('limits probes while half-open to halfOpenProbes at once', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000, halfOpenProbes: 2, probeSuccessesToClose: 3 });
    fail(breaker, 1);
    clock.set(1000);
    const a = breaker.acquirePermit();
    const b = breaker.acquirePermit();
    expect([a.probe, b.probe]).toEqual([true, true]);
    const error = refusal(() => breaker.acquirePermit());
    expect(error).toMatchObject({ circuit: undefined, state: 'half-open', reopensAtMs: undefined, retryAfterMs: undefined });
    expect(error.message).toBe('circuit is half-open and every probe slot is taken');
    a.success();
    expect(breaker.acquirePermit().probe).toBe(true);
    expect(() => breaker.acquirePermit()).toThrow(BrokenCircuitError);
  });

  it('turns an open circuit half-open itself, without a read of .state', () => {
    const { breaker, clock, transitions } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    fail(breaker, 1);
    clock.set(1000);
    expect(breaker.acquirePermit().probe).toBe(true);
    expect(transitions()).toEqual(['closed>open@0', 'open>half-open@1000']);
  });
});

describe('BreakerPermit', () => {
  it('.release() counts nothing while closed', () => {
    const { breaker } = setup({ failureThreshold: 2 });
    fail(breaker, 1);
    for (let i = 0; i < 10; i++) breaker.acquirePermit().release();
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 1 });
  });

  it('.release() counts nothing in the ratio window', () => {
    const { breaker } = setup({ failureThreshold: Infinity, failureRatio: { ratio: 0.5, windowMs: 1000, minimumCalls: 4 } });
    fail(breaker, 2);
    for (let i = 0; i < 10; i++) breaker.acquirePermit().release();
    expect(breaker.state.kind).toBe('closed');
    succeed(breaker, 1);
    fail(breaker, 1);
    expect(breaker.state.kind).toBe('open');
  });

  it('.release() frees a probe slot without counting a success', () => {
    const { breaker, clock, transitions } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    fail(breaker, 1);
    clock.set(1000);
    breaker.acquirePermit().release();
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 });
    breaker.acquirePermit().success();
    expect(transitions()).toEqual(['closed>open@0', 'open>half-open@1000', 'half-open>closed@1000']);
  });

  it('settles once: later calls return false and count nothing', () => {
    const { breaker } = setup({ failureThreshold: 2 });
    const permit = breaker.acquirePermit();
    expect(permit.failure()).toBe(true);
    expect(permit.failure()).toBe(false);
    expect(permit.success()).toBe(false);
    expect(permit.release()).toBe(false);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 1 });
  });

  it('a probe settled twice frees its slot once', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000, halfOpenProbes: 2, probeSuccessesToClose: 3 });
    fail(breaker, 1);
    clock.set(1000);
    const a = breaker.acquirePermit();
    breaker.acquirePermit();
    a.release();
    a.release();
    breaker.acquirePermit();
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 2, probeSuccesses: 0 });
  });

  it('is frozen', () => {
    const { breaker } = setup();
    expect(Object.isFrozen(breaker.acquirePermit())).toBe(true);
  });
});

describe('.onStateChange()', () => {
  it('reports every transition with the state entered', async () => {
    const { breaker, clock, changes } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    fail(breaker, 1);
    await clock.advance(1000);
    breaker.acquirePermit().failure();
    await clock.advance(1000);
    breaker.acquirePermit().success();
    expect(changes).toEqual([
      { from: 'closed', to: 'open', atMs: 0, state: { kind: 'open', openedAtMs: 0, reopensAtMs: 1000 } },
      { from: 'open', to: 'half-open', atMs: 1000, state: { kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 } },
      { from: 'half-open', to: 'open', atMs: 1000, state: { kind: 'open', openedAtMs: 1000, reopensAtMs: 2000 } },
      { from: 'open', to: 'half-open', atMs: 2000, state: { kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 } },
      { from: 'half-open', to: 'closed', atMs: 2000, state: { kind: 'closed', consecutiveFailures: 0 } },
    ]);
  });

  it('calls listeners after the breaker entered the new state', () => {
    const { breaker } = setup({ failureThreshold: 1 });
    const seen: string[] = [];
    breaker.onStateChange(() => {
      seen.push(breaker.state.kind);
      seen.push(refusal(() => breaker.acquirePermit()).state);
    });
    fail(breaker, 1);
    expect(seen).toEqual(['open', 'open']);
  });

  it('returns a dispose function that stops the listener, idempotent', () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    const seen: string[] = [];
    const dispose = breaker.onStateChange((c) => seen.push(c.to));
    fail(breaker, 1);
    dispose();
    dispose();
    clock.set(1000);
    expect(breaker.state.kind).toBe('half-open');
    expect(seen).toEqual(['open']);
  });

  it('keeps each registration apart, the same function twice included', () => {
    const { breaker } = setup({ failureThreshold: 1 });
    const seen: string[] = [];
    const listener = (c: BreakerStateChange) => seen.push(c.to);
    const disposeFirst = breaker.onStateChange(listener);
    breaker.onStateChange(listener);
    disposeFirst();
    fail(breaker, 1);
    expect(seen).toEqual(['open']);
  });

  it('a listener disposed by an earlier one during the same event is not called', () => {
    const { breaker } = setup({ failureThreshold: 1 });
    const seen: string[] = [];
    let disposeSecond = () => {};
    breaker.onStateChange(() => {
      seen.push('first');
      disposeSecond();
    });
    disposeSecond = breaker.onStateChange(() => seen.push('second'));
    breaker.onStateChange(() => seen.push('third'));
    fail(breaker, 1);
    expect(seen).toEqual(['first', 'third']);
  });

  it('a throwing listener breaks neither the breaker nor the other listeners, and is logged', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const { breaker, clock, changes } = setup({ failureThreshold: 1, cooldownMs: 1000, name: 'p', logger });
    breaker.onStateChange(() => {
      throw new Error('listener bug');
    });
    const after: string[] = [];
    breaker.onStateChange((c) => after.push(c.to));
    expect(() => fail(breaker, 1)).not.toThrow();
    clock.set(1000);
    expect(() => breaker.acquirePermit().success()).not.toThrow();
    expect(breaker.state.kind).toBe('closed');
    expect(changes.map((c) => c.to)).toEqual(['open', 'half-open', 'closed']);
    expect(after).toEqual(['open', 'half-open', 'closed']);
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      component: 'circuit-breaker',
      circuit: 'p',
      msg: 'circuit state listener threw',
      err: { message: 'listener bug' },
    });
  });

  it('throws a TypeError for a listener that is not a function', () => {
    const { breaker } = setup();
    expect(() => breaker.onStateChange('nope' as never)).toThrow('Expected listener to be a function, got "nope"');
  });
});

describe('.opens', () => {
  it('counts every opening, reopenings from half-open included', () => {
    const { breaker, clock } = setup({ failureThreshold: 2, cooldownMs: 1000 });
    fail(breaker, 2);
    expect(breaker.opens).toBe(1);
    clock.set(1000);
    fail(breaker, 1);
    expect(breaker.opens).toBe(2);
    clock.set(2000);
    succeed(breaker, 1);
    expect(breaker.opens).toBe(2);
    fail(breaker, 2);
    expect(breaker.opens).toBe(3);
  });
});

describe('.execute()', () => {
  it('resolves with the value and counts a success', async () => {
    const { breaker } = setup({ failureThreshold: 3 });
    fail(breaker, 2);
    await expect(breaker.execute(async () => 42)).resolves.toBe(42);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
  });

  it('rejects with the error and counts a failure', async () => {
    const { breaker } = setup({ failureThreshold: 1 });
    const error = new ServerError();
    await expect(breaker.execute(() => Promise.reject(error))).rejects.toBe(error);
    expect(breaker.state.kind).toBe('open');
  });

  it('treats a synchronous throw as a rejection', async () => {
    const { breaker } = setup({ failureThreshold: 1 });
    await expect(
      breaker.execute(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(breaker.state.kind).toBe('open');
  });

  it('releases instead of counting when isFailure says no', async () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    const aborted = new DOMException('aborted', 'AbortError');
    const isFailure = (e: unknown) => e !== aborted;
    await expect(breaker.execute(() => Promise.reject(aborted), { isFailure })).rejects.toBe(aborted);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
    fail(breaker, 1);
    clock.set(1000);
    // The released probe frees its slot: the next probe is admitted.
    await expect(breaker.execute(() => Promise.reject(aborted), { isFailure })).rejects.toBe(aborted);
    await expect(breaker.execute(async () => 'ok')).resolves.toBe('ok');
    expect(breaker.state.kind).toBe('closed');
  });

  it('rejects with BrokenCircuitError without calling fn while open', async () => {
    const { breaker } = setup({ failureThreshold: 1 });
    fail(breaker, 1);
    let called = false;
    const error = await breaker
      .execute(async () => {
        called = true;
      })
      .catch((e: unknown) => e);
    expect(isBrokenCircuitError(error)).toBe(true);
    expect(called).toBe(false);
  });

  it('frees the permit when isFailure itself throws, rejecting with its error', async () => {
    const { breaker, clock } = setup({ failureThreshold: 1, cooldownMs: 0 });
    fail(breaker, 1);
    clock.set(1);
    const bug = new Error('isFailure bug');
    const isFailure = () => {
      throw bug;
    };
    await expect(breaker.execute(() => Promise.reject(new ServerError()), { isFailure })).rejects.toBe(bug);
    expect(breaker.state).toEqual({ kind: 'half-open', probesInFlight: 0, probeSuccesses: 0 });
  });

  it('rejects with a TypeError for bad arguments', async () => {
    const { breaker } = setup();
    await expect(breaker.execute(42 as never)).rejects.toThrow('Expected fn to be a function, got 42');
    await expect(breaker.execute(async () => 1, { isFailure: true as never })).rejects.toThrow(
      'Expected isFailure to be a function, got true',
    );
  });
});

describe('BrokenCircuitError', () => {
  it('is an Error named BrokenCircuitError, recognised by isBrokenCircuitError', () => {
    const error = new BrokenCircuitError('a', 'open', 1500, 1000);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('BrokenCircuitError');
    expect(error).toMatchObject({ circuit: 'a', state: 'open', reopensAtMs: 1500, retryAfterMs: 500 });
    expect(isBrokenCircuitError(error)).toBe(true);
    expect(isBrokenCircuitError(new Error('circuit is open'))).toBe(false);
    expect(isBrokenCircuitError(new ServerError())).toBe(false);
    expect(isBrokenCircuitError(undefined)).toBe(false);
  });
});

describe('outage scenario', () => {
  it('opens, fails fast, probes, and closes after recovery', async () => {
    const outage = { fromMs: 2000, toMs: 8000 };
    const cooldownMs = 1000;
    const { breaker, clock, transitions } = setup({ name: 'sim', cooldownMs, failureThreshold: 5 });
    const ranAtMs: number[] = [];
    const call = async () => {
      const nowMs = clock.now();
      ranAtMs.push(nowMs);
      if (nowMs >= outage.fromMs && nowMs < outage.toMs) throw new ServerError();
      return 'ok';
    };

    let rejected = 0;
    let failed = 0;
    let succeeded = 0;
    for (let i = 0; i <= 120; i++) {
      if (i > 0) await clock.advance(100);
      await breaker.execute(call, { isFailure: isServerError }).then(
        () => succeeded++,
        (error: unknown) => (isBrokenCircuitError(error) ? rejected++ : failed++),
      );
    }

    const opened = transitions()[0]!;
    expect(opened).toBe('closed>open@2400');
    const closedAtMs = Number(transitions().at(-1)!.split('@')[1]);
    expect(transitions().at(-1)).toMatch(/^half-open>closed@/);
    expect(closedAtMs).toBeGreaterThan(outage.toMs);
    expect(closedAtMs).toBeLessThanOrEqual(outage.toMs + cooldownMs + 100);

    // Five failures open it at 2400; then one probe per cooldown: 3400 … 7400 fail, 8400 succeeds.
    const probesAtMs = [3400, 4400, 5400, 6400, 7400, 8400];
    expect(transitions()).toEqual([
      'closed>open@2400',
      ...probesAtMs.slice(0, -1).flatMap((t) => [`open>half-open@${t}`, `half-open>open@${t}`]),
      'open>half-open@8400',
      'half-open>closed@8400',
    ]);
    expect(ranAtMs.filter((t) => t >= 2000 && t < 9000)).toEqual([
      2000,
      2100,
      2200,
      2300,
      2400,
      ...probesAtMs,
      ...[8500, 8600, 8700, 8800, 8900],
    ]);
    expect(rejected).toBe(54);
    expect(failed).toBe(10);
    expect(succeeded).toBe(121 - 54 - 10);
    expect(breaker.opens).toBe(6);
    expect(breaker.state).toEqual({ kind: 'closed', consecutiveFailures: 0 });
  });
});
