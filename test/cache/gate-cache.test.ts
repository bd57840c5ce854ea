import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import { gateCaller } from '../gate-caller.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { LocalBudget } from '../../src/quota/budget.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { ServerError, type CallOptions, type LlmRequest, type LlmResponse, type Provider } from '../../src/provider/provider.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';
import { MemoryCache } from './memory-cache.ts';
import '../tokenizer-loaded.ts';

/** Answers after 10 ms with 1,000 input and 500 output tokens; fails while `failing` says so. */
class CountingProvider implements Provider {
  readonly name = 'p';
  calls = 0;
  failing = 0;
  readonly #clock: ManualClock;

  constructor(clock: ManualClock) {
    this.#clock = clock;
  }

  answerIdentity(request: LlmRequest, maxOutputTokens: number): unknown {
    return { p: this.name, task: request.task, prompt: request.prompt, maxOutputTokens };
  }

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    this.calls++;
    await sleep(this.#clock, 10, options.signal);
    if (this.failing > 0) {
      this.failing--;
      throw new ServerError();
    }
    return {
      output: { summary: `answer ${this.calls} to ${request.articleId}`, keywords: [] },
      usage: { inputTokens: 1000, outputTokens: 500 },
    };
  }
}

const price = { inputPerMTok: 1, outputPerMTok: 2 };
/** 1,000 tokens at $1/M and 500 at $2/M. */
const CALL_NANO_USD = 2_000_000;

function setup(options: { budgetUsd?: number } = {}) {
  const clock = new ManualClock();
  const provider = new CountingProvider(clock);
  const limits = new LocalLimits({ limits: requestLimit(1, 1), clock });
  const cache = new MemoryCache();
  const budget = options.budgetUsd === undefined ? undefined : new LocalBudget({ maxUsd: options.budgetUsd });
  const gate = gateCaller({ provider, limits, clock, price, budget, cache, retry: { backoff: () => 100 } });
  const events: AttemptEvent[] = [];
  return { clock, provider, limits, cache, budget, gate, events, onAttempt: (event: AttemptEvent) => events.push(event) };
}

describe("a call through a provider's gate with an answer cache", () => {
  it('.call() - a kept answer makes no call and takes nothing from the limits or the budget', async () => {
    const { clock, provider, limits, budget, gate, events, onAttempt } = setup({ budgetUsd: 1 });
    const first = await drive(clock, gate.call(builtinRequest('summarize', '1'), { onAttempt }));
    expect(first).toMatchObject({ attempts: 1 });
    expect(first.cached).toBeUndefined();
    const tokens = limits.bucket('requests')!.tokens();
    const spent = budget!.spentUsd;
    expect(spent).toBeGreaterThan(0);
    // The same request for another article (the key is the request as sent, not the article).
    const second = await gate.call(builtinRequest('summarize', '2'), { onAttempt });
    expect(second).toEqual({ response: { output: first.response.output }, attempts: 0, cached: true, savedNanoUsd: CALL_NANO_USD });
    expect(provider.calls).toBe(1);
    expect(events).toHaveLength(1);
    expect(limits.bucket('requests')!.tokens()).toBe(tokens);
    expect(budget!.spentUsd).toBe(spent);
  });

  it('.call() - a hit answers even when the budget could not cover a call', async () => {
    const { clock, provider, gate } = setup({ budgetUsd: 0.0021 });
    await drive(clock, gate.call(builtinRequest('summarize', '1')));
    const again = await gate.call(builtinRequest('summarize', '1'));
    expect(again.cached).toBe(true);
    expect(provider.calls).toBe(1);
  });

  it('.call() - another request is asked again', async () => {
    const { clock, provider, gate } = setup();
    await drive(clock, gate.call(builtinRequest('summarize', '1')));
    const other = await drive(clock, gate.call(builtinRequest('summarize', '1', 'Another title')));
    expect(other.cached).toBeUndefined();
    const shorter = await drive(clock, gate.call(builtinRequest('summarize', '1'), { maxOutputTokens: 100 }));
    expect(shorter.cached).toBeUndefined();
    expect(provider.calls).toBe(3);
  });

  it('.call() - identical calls at once are made once: the others wait for its answer', async () => {
    const { clock, provider, cache, gate } = setup();
    const calls = ['1', '2', '3'].map((id) => gate.call(builtinRequest('summarize', id)));
    const answers = await drive(clock, Promise.all(calls));
    expect(provider.calls).toBe(1);
    expect(answers.map((answer) => answer.attempts)).toEqual([1, 0, 0]);
    expect(answers.map((answer) => answer.cached)).toEqual([undefined, true, true]);
    expect(new Set(answers.map((answer) => answer.response.output.summary))).toEqual(new Set(['answer 1 to 1']));
    // Looked up once: the waiting calls asked the call under way, not the store.
    expect(cache.gets).toBe(1);
    expect(cache.puts).toBe(1);
  });

  it('.call() - a call under way that fails leaves the next waiting call to make its own', async () => {
    const { clock, provider, cache } = setup();
    const events: AttemptEvent[] = [];
    const failing = gateCaller({
      provider,
      limits: requestLimit(1000, 10),
      clock,
      cache,
      retry: { maxAttempts: 1 },
    });
    provider.failing = 1;
    const first = failing.call(builtinRequest('summarize', '1')).catch((error: unknown) => error);
    const second = failing.call(builtinRequest('summarize', '2'), { onAttempt: (event) => events.push(event) });
    const [error, answer] = await drive(clock, Promise.all([first, second]));
    expect((error as Error).name).toBe('RetryError');
    expect(answer).toMatchObject({ attempts: 1, response: { output: { summary: 'answer 2 to 2' } } });
    expect(events.map((event) => event.outcome)).toEqual(['ok']);
    // Only the answer was kept, not the failure.
    expect(cache.entries.size).toBe(1);
  });

  it('.call() - a waiting call that is aborted rejects with its reason; the call under way goes on', async () => {
    const { clock, provider, gate } = setup();
    const first = gate.call(builtinRequest('summarize', '1'));
    const controller = new AbortController();
    const second = gate.call(builtinRequest('summarize', '2'), { signal: controller.signal }).catch((error: unknown) => error);
    await clock.advance(1);
    controller.abort(new Error('stop'));
    expect(((await second) as Error).message).toBe('stop');
    expect((await drive(clock, first)).attempts).toBe(1);
    expect(provider.calls).toBe(1);
  });

  it('.call() - a store that fails is a miss: the call is made, and the run goes on', async () => {
    const { clock, provider, cache, gate } = setup();
    cache.failure = new Error('store gone');
    const answer = await drive(clock, gate.call(builtinRequest('summarize', '1')));
    expect(answer.attempts).toBe(1);
    expect(provider.calls).toBe(1);
    expect(cache.gets).toBe(1);
    expect(cache.puts).toBe(1);
  });

  it('.call() - a provider that does not say what shapes its answers is never cached', async () => {
    const clock = new ManualClock();
    const counting = new CountingProvider(clock);
    const provider: Provider = { name: 'opaque', call: (request, options) => counting.call(request, options) };
    const cache = new MemoryCache();
    const gate = gateCaller({ provider, limits: requestLimit(1000, 10), clock, cache });
    await drive(clock, gate.call(builtinRequest('summarize', '1')));
    await drive(clock, gate.call(builtinRequest('summarize', '1')));
    expect(counting.calls).toBe(2);
    expect(cache.gets + cache.puts).toBe(0);
  });
});
