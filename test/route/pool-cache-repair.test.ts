// A pool's answer cache and repairs: the call loop gives them to every route, a pool as a single provider's.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { MalformedOutputError, ServerError } from '../../src/provider/provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { CallLoop, type CallLoopOptions } from '../../src/route/call-loop.ts';
import { RoutePool, type RoutePoolOptions } from '../../src/route/pool.ts';
import { ProviderRoute } from '../../src/route/provider-route.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import type { RouteCallOptions } from '../../src/route/route.ts';
import { drive, ScriptedProvider, type Step } from '../../src/testing/scripted-provider.ts';
import { MemoryCache } from '../cache/memory-cache.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

const PRICE = { inputPerMTok: 1, outputPerMTok: 2 };

/** Scripted members behind gates of their own, a pool of them, and a loop with the cache calling it. */
function poolOf(
  clock: ManualClock,
  scripts: readonly (readonly Step[])[],
  options: Partial<RoutePoolOptions> & Pick<CallLoopOptions, 'retry' | 'maxRepairs' | 'cache'> = {},
) {
  const { retry = { backoff: () => 100 }, maxRepairs, cache = new MemoryCache(), ...poolOptions } = options;
  const providers = scripts.map((script, index) => new ScriptedProvider({ name: `key-${'ab'[index]}`, clock, script }));
  const gates = providers.map((provider) => new CallGate({ provider, limits: requestLimit(Infinity, 1), clock, price: PRICE }));
  const pool = new RoutePool({ name: 'gpt', members: gates, clock, ...poolOptions });
  const loop = new CallLoop({ clock, cache, retry, maxRepairs });
  const call = (request: LlmRequest, callOptions?: RouteCallOptions) => loop.call(pool, request, callOptions);
  return { cache: cache as MemoryCache, providers, gates, pool, loop, call };
}

const calls = (providers: readonly ScriptedProvider[]) => providers.reduce((sum, provider) => sum + provider.calls.length, 0);

describe('RoutePool with an answer cache', () => {
  it('.call() - a second identical request is served from the cache: no member called, the member whose key held it named', async () => {
    const clock = new ManualClock();
    const { cache, providers, gates, call } = poolOf(clock, [[{ error: new ServerError() }], [{}]]);
    const request = builtinRequest('summarize', 'a1');
    const first = await drive(clock, call(request));
    expect(first).toMatchObject({ servedBy: 'key-b', attempts: 2 });
    expect(first.cached).toBeUndefined();
    expect(calls(providers)).toBe(2);
    // Kept under the key of the member that made it, and that one only.
    expect([...cache.entries.keys()]).toEqual([gates[1]!.answerKey(request)]);
    const events: AttemptEvent[] = [];
    const second = await call(request, { onAttempt: (event) => events.push(event) });
    expect(second).toEqual({ response: { output: first.response.output }, attempts: 0, cached: true, savedNanoUsd: 0, servedBy: 'key-b' });
    expect(calls(providers)).toBe(2);
    expect(events).toEqual([]);
  });

  it('.call() - a hit under any member’s key, at that member’s price; never another member’s answer for a gate alone', async () => {
    const clock = new ManualClock();
    const { cache, providers, gates, loop, call } = poolOf(clock, [[{}], [{}]]);
    const request = builtinRequest('summarize', 'a1');
    const usage = { inputTokens: 1000, outputTokens: 500 };
    await cache.put(gates[1]!.answerKey(request)!, { output: { summary: 'kept', keywords: [] }, usage });
    const answer = await call(request);
    // 1,000 tokens at $1/M and 500 at $2/M.
    expect(answer).toMatchObject({ cached: true, servedBy: 'key-b', savedNanoUsd: 2_000_000, response: { output: { summary: 'kept' } } });
    expect(calls(providers)).toBe(0);
    // key-a's own key holds nothing: key-b's answer is not key-a's.
    const direct = await drive(clock, loop.call(new ProviderRoute(gates[0]!), request));
    expect(direct.cached).toBeUndefined();
    expect(providers[0]!.calls).toHaveLength(1);
  });

  it('.call() - members that shape answers alike share a key: an answer from any of them is kept under it', async () => {
    const clock = new ManualClock();
    const cache = new MemoryCache();
    // Two keys of one model at one base URL: what shapes their answers is the same.
    const sameModel = (name: string, script: readonly Step[]) =>
      Object.assign(new ScriptedProvider({ name, clock, script }), {
        answerIdentity: (request: LlmRequest, maxOutputTokens: number) => ({ model: 'm', prompt: request.prompt, maxOutputTokens }),
      });
    const gates = [sameModel('key-a', [{ error: new ServerError() }]), sameModel('key-b', [{}])].map(
      (provider) => new CallGate({ provider, limits: requestLimit(Infinity, 1), clock }),
    );
    const loop = new CallLoop({ clock, cache, retry: { backoff: () => 100 } });
    const pool = new RoutePool({ name: 'gpt', members: gates, clock });
    const request = builtinRequest('summarize', 'a1');
    expect(gates[0]!.answerKey(request)).toBe(gates[1]!.answerKey(request));
    expect(await drive(clock, loop.call(pool, request))).toMatchObject({ servedBy: 'key-b' });
    expect([...cache.entries.keys()]).toEqual([gates[1]!.answerKey(request)]);
    expect(await loop.call(pool, request)).toMatchObject({ cached: true, servedBy: 'key-a' });
  });

  it('.call() - identical calls at once make one call; the others wait for its answer', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [[{ latencyMs: 50 }], [{ latencyMs: 50 }]]);
    const request = builtinRequest('summarize', 'a1');
    const answers = await drive(clock, Promise.all([call(request), call(request), call(request)]));
    expect(calls(providers)).toBe(1);
    expect(answers.map((answer) => answer.cached === true)).toEqual([false, true, true]);
    expect(new Set(answers.map((answer) => answer.servedBy)).size).toBe(1);
  });

  it('.call() - a cache that fails is a miss: the call is made', async () => {
    const clock = new ManualClock();
    const { cache, providers, call } = poolOf(clock, [[{}], [{}]]);
    cache.failure = new Error('store down');
    const answer = await drive(clock, call(builtinRequest('summarize', 'a1')));
    expect(answer.cached).toBeUndefined();
    expect(calls(providers)).toBe(1);
  });

  it('.call() - an answer from a fallback is kept by the fallback’s own call, under its key', async () => {
    const clock = new ManualClock();
    const fallback = new CallGate({ provider: new ScriptedProvider({ name: 'claude', clock }), limits: requestLimit(100, 1), clock });
    const { cache, providers, gates, call } = poolOf(clock, [[{ error: new ServerError() }], [{ error: new ServerError() }]], {
      fallback: [new ProviderRoute(fallback)],
      retry: { maxAttempts: 2, backoff: () => 1 },
    });
    const request = builtinRequest('summarize', 'a1');
    expect(await drive(clock, call(request))).toMatchObject({ servedBy: 'claude' });
    expect([...cache.entries.keys()]).toEqual([fallback.answerKey(request)]);
    expect(cache.entries.has(gates[0]!.answerKey(request)!)).toBe(false);
    expect(calls(providers)).toBe(2);
    // The fallback's own cache answers it next time, and the pool says the answer came from a cache.
    const again = await drive(clock, call(request));
    expect(again).toMatchObject({ servedBy: 'claude', cached: true });
  });
});

const unfit = () =>
  new MalformedOutputError('score out of range', {
    answer: '{"summary":"x"}',
    problems: [{ path: '/keywords', message: "must have required property 'keywords'" }],
  });

describe('RoutePool repairs', () => {
  it('.call() - an unfit answer is repaired at once through the pool, counted apart from the attempts, and paid', async () => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [[{ error: unfit() }, {}], [{}]], { retry: { maxAttempts: 1 } });
    const events: AttemptEvent[] = [];
    const tally = { calls: 0, latencyMs: 0, costNanoUsd: 0, repairs: 0 };
    const request = builtinRequest('summarize', 'a1');
    const answer = await drive(clock, call(request, { onAttempt: (event) => events.push(event), tally }));
    expect(answer.attempts).toBe(1);
    expect(events.map((e) => [e.provider, e.attempt, e.repair, e.outcome])).toEqual([
      ['key-a', 1, 0, 'malformed'],
      [answer.servedBy, 1, 1, 'ok'],
    ]);
    expect(tally).toMatchObject({ calls: 2, repairs: 1 });
    const repairRequest = [...providers[0]!.calls, ...providers[1]!.calls].map((call) => call.request)[1]!;
    expect(repairRequest.messages).toEqual([
      { role: 'assistant', content: '{"summary":"x"}' },
      { role: 'user', content: expect.stringContaining("- /keywords: must have required property 'keywords'") },
    ]);
  });

  it.each([
    [
      1,
      [
        [1, 0, 'malformed'],
        [1, 1, 'malformed'],
        [2, 0, 'ok'],
      ],
    ],
    [
      0,
      [
        [1, 0, 'malformed'],
        [2, 0, 'malformed'],
        [3, 0, 'ok'],
      ],
    ],
  ])('.call() - with maxRepairs %i, the repairs spent, a retry asks afresh', async (maxRepairs, expected) => {
    const clock = new ManualClock();
    const { providers, call } = poolOf(clock, [[{ error: unfit() }, { error: unfit() }, {}]], {
      maxRepairs,
      retry: { maxAttempts: 3, backoff: () => 1 },
    });
    const events: AttemptEvent[] = [];
    await drive(clock, call(builtinRequest('summarize', 'a1'), { onAttempt: (event) => events.push(event) }));
    expect(events.map((e) => [e.attempt, e.repair, e.outcome])).toEqual(expected);
    expect(providers[0]!.calls.map((call) => call.request.messages?.length)).toEqual(
      maxRepairs === 1 ? [undefined, 2, undefined] : [undefined, undefined, undefined],
    );
  });

  it('rejects a maxRepairs that is not a whole number ≥ 0', () => {
    const clock = new ManualClock();
    expect(() => poolOf(clock, [[{}]], { maxRepairs: -1 })).toThrow(/maxRepairs/);
  });
});
