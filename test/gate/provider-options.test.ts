import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { checkProviderSetup, providerSetupProblem } from '../../src/gate/provider-options.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { ScriptedProvider } from '../../src/testing/scripted-provider.ts';

describe('providerSetupProblem()', () => {
  it.each([
    ['a request limit alone', { limits: requestLimit(5, 1) }, undefined],
    [
      'a token burst above the default reservation',
      { limits: [...requestLimit(5, 1), { kind: 'tokens', rate: 100, burst: 257 }] },
      undefined,
    ],
    [
      'an output-token burst equal to the reservation',
      { limits: [{ kind: 'output-tokens', rate: 10, burst: 100 }], maxOutputTokens: 100 },
      undefined,
    ],
    ['an unlimited token limit, whatever its burst', { limits: [{ kind: 'tokens', rate: Infinity, burst: 1 }] }, undefined],
    ['an adaptive rate below a finite request rate', { limits: requestLimit(5, 1), adaptive: {} }, undefined],
  ] as const)('%s: none', (_, setup, problem) => {
    expect(providerSetupProblem(setup)).toEqual(problem);
  });

  it('a token burst no larger than the reservation: the burst is at fault, and says of what', () => {
    expect(providerSetupProblem({ limits: [...requestLimit(5, 1), { kind: 'tokens', rate: 100, burst: 256 }] })).toEqual({
      rule: 'token-burst',
      field: 'limits[1].burst',
      expected: "more than maxOutputTokens (256, the default; a call takes its prompt's tokens plus that many at once)",
      value: 256,
    });
    expect(providerSetupProblem({ limits: [{ kind: 'output-tokens', rate: 10, burst: 99 }], maxOutputTokens: 100 })).toMatchObject({
      rule: 'token-burst',
      field: 'limits[0].burst',
      expected: 'at least maxOutputTokens (100; a call takes that many at once)',
    });
  });

  it('an adaptive rate over an unlimited request rate, or over no request limit', () => {
    expect(providerSetupProblem({ limits: requestLimit(Infinity, 1), adaptive: {} })).toMatchObject({
      rule: 'adaptive-rate',
      field: 'adaptive',
    });
    expect(providerSetupProblem({ limits: [{ kind: 'tokens', rate: 100, burst: 1000 }], adaptive: {} })).toMatchObject({
      rule: 'adaptive-rate',
    });
  });
});

describe('checkProviderSetup() and new CallGate()', () => {
  it('throw a TypeError naming the option and the provider', () => {
    const setup = { limits: [{ kind: 'tokens' as const, rate: 100, burst: 50 }] };
    expect(() => checkProviderSetup(setup, 'p')).toThrow(
      /^Expected limits\[0\]\.burst of "p" to be more than maxOutputTokens \(256, the default; .*\), got 50$/,
    );
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'p', clock });
    expect(() => new CallGate({ provider, ...setup, clock })).toThrow(TypeError);
    expect(() => new CallGate({ provider, limits: requestLimit(Infinity, 1), adaptive: {}, clock })).toThrow(/adaptive of "p"/);
  });
});
