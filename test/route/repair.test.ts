import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import { gateCaller } from '../gate-caller.ts';
import { LocalBudget, NANO_USD } from '../../src/quota/budget.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { readAnswer } from '../../src/provider/answer.ts';
import { MalformedOutputError, type CallOptions, type LlmRequest, type LlmResponse, type Provider } from '../../src/provider/provider.ts';
import { RetryError } from '../../src/retry/retry.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { encodeAnthropic } from '../../src/vendors/anthropic/encode.ts';
import { encodeOpenAi } from '../../src/vendors/openai/encode.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

const request: LlmRequest = builtinRequest('sentiment', '7', 'Fire', 'A fire broke out.');
const USAGE = { inputTokens: 1000, outputTokens: 100 };
/** $400 and $1,600 a million tokens: $0.56 a call. */
const PRICE = { inputPerMTok: 400, outputPerMTok: 1600 };

/** A model that answers a score out of range `unfit` times, then fits; every answer billed. */
class UnfitModel implements Provider {
  readonly name = 'unfit';
  readonly framing = { perMessageTokens: 0, perRequestTokens: 0 };
  readonly requests: LlmRequest[] = [];
  constructor(
    private readonly clock: ManualClock,
    private unfit: number,
  ) {}

  async call(asked: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    this.requests.push(asked);
    await sleep(this.clock, 10, options.signal);
    const score = this.unfit-- > 0 ? 3 : 0.5;
    return { output: await readAnswer(asked, { sentiment: 'positive', score }, { usage: USAGE }), usage: USAGE };
  }
}

function setup(unfit: number, options: { maxRepairs?: number; maxAttempts?: number; budget?: LocalBudget } = {}) {
  const clock = new ManualClock();
  const provider = new UnfitModel(clock, unfit);
  const gate = gateCaller({
    provider,
    limits: requestLimit(Infinity, 1),
    clock,
    price: PRICE,
    budget: options.budget,
    maxRepairs: options.maxRepairs,
    retry: { maxAttempts: options.maxAttempts ?? 3, backoff: () => 100 },
  });
  const events: AttemptEvent[] = [];
  const tally = { calls: 0, latencyMs: 0, costNanoUsd: 0, repairs: 0 };
  return { clock, provider, gate, events, tally, onAttempt: (event: AttemptEvent) => void events.push(event) };
}

describe('the call loop - repairs', () => {
  it('asks again at once with the unfit answer as the assistant’s turn and its problems as the user’s, counted apart from the attempts, and paid', async () => {
    const budget = new LocalBudget({ maxUsd: 10 });
    const { clock, provider, gate, events, tally, onAttempt } = setup(1, { budget });
    const { response, attempts } = await drive(clock, gate.call(request, { onAttempt, tally }));
    expect(response.output).toEqual({ sentiment: 'positive', score: 0.5 });
    expect(attempts).toBe(1);
    expect(events.map((e) => [e.attempt, e.repair, e.outcome, e.retryInMs])).toEqual([
      [1, 0, 'malformed', undefined],
      [1, 1, 'ok', undefined],
    ]);
    // At once: no backoff between the unfit answer and its repair.
    expect(events[1]!.sentAtMs).toBe(events[0]!.atMs);
    expect(provider.requests[0]!.messages).toBeUndefined();
    expect(provider.requests[1]).toMatchObject({ prompt: request.prompt, schema: request.schema });
    expect(provider.requests[1]!.messages).toEqual([
      { role: 'assistant', content: '{"sentiment":"positive","score":3}' },
      { role: 'user', content: expect.stringContaining('- /score: must be <= 1') },
    ]);
    expect(tally).toMatchObject({ calls: 2, repairs: 1, costNanoUsd: 2 * 0.56 * NANO_USD });
    expect(budget.spentUsd).toBeCloseTo(1.12, 9);
  });

  it('repairs up to maxRepairs times, the conversation growing, then leaves the answer to the retry policy, which asks afresh', async () => {
    const { clock, provider, gate, events, tally, onAttempt } = setup(3, { maxRepairs: 2, maxAttempts: 2 });
    const { response } = await drive(clock, gate.call(request, { onAttempt, tally }));
    expect(response.output).toEqual({ sentiment: 'positive', score: 0.5 });
    expect(events.map((e) => [e.attempt, e.repair, e.outcome])).toEqual([
      [1, 0, 'malformed'],
      [1, 1, 'malformed'],
      [1, 2, 'malformed'],
      [2, 0, 'ok'],
    ]);
    expect(provider.requests.map((asked) => asked.messages?.length ?? 0)).toEqual([0, 2, 4, 0]);
    expect(events[2]!.retryInMs).toBe(100);
    expect(tally).toMatchObject({ calls: 4, repairs: 2 });
  });

  it('maxRepairs 0 repairs nothing: an unfit answer is retried as before, and the call fails with it when the attempts run out', async () => {
    const { clock, provider, gate, events, onAttempt } = setup(9, { maxRepairs: 0, maxAttempts: 2 });
    const error = await drive(
      clock,
      gate.call(request, { onAttempt }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(RetryError);
    expect((error as RetryError).lastError).toBeInstanceOf(MalformedOutputError);
    expect(events.map((e) => e.repair)).toEqual([0, 0]);
    expect(provider.requests.every((asked) => asked.messages === undefined)).toBe(true);
  });

  it('refuses a maxRepairs that is not a whole number ≥ 0', () => {
    expect(() => setup(0, { maxRepairs: -1 })).toThrow(/^Expected maxRepairs to be/);
    expect(() => setup(0, { maxRepairs: 1.5 })).toThrow(/^Expected maxRepairs to be/);
  });
});

describe('the vendors send the conversation after the prompt', () => {
  const repaired: LlmRequest = {
    ...request,
    messages: [
      { role: 'assistant', content: '{"score":3}' },
      { role: 'user', content: 'fix it' },
    ],
  };

  it('OpenAI: as chat messages after the prompt’s', () => {
    expect(encodeOpenAi(repaired, 'm', 64).messages).toEqual([
      { role: 'user', content: request.prompt },
      { role: 'assistant', content: '{"score":3}' },
      { role: 'user', content: 'fix it' },
    ]);
  });

  it('Anthropic: as turns that alternate after the prompt’s', () => {
    expect(encodeAnthropic(repaired, 'm', 64).messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
  });
});
