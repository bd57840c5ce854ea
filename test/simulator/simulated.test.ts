import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, it, expect } from 'vitest';
import { generateArticles } from '../../src/sources/generated.ts';
import type { Article } from '../../src/sources/article.ts';
import { ManualClock } from '../../src/clock.ts';
import {
  MalformedOutputError,
  RateLimitError,
  ServerError,
  TimeoutError,
  type LlmRequest,
  type LlmResponse,
} from '../../src/provider/provider.ts';
import { builtinRequest } from '../requests.ts';
import { formatRateLimitHeaders, HEADER_STYLES, parseRateLimitHeaders } from '../../src/vendors/rate-limit-headers.ts';

/** The header styles that say anything (Gemini's says nothing, not even `retry-after`). */
const SPOKEN_STYLES = HEADER_STYLES.filter((style) => Object.keys(formatRateLimitHeaders(style, [], 1)).length > 0);
import {
  FAILURE_PROFILES,
  OUTAGE_PROFILE_WINDOW,
  PROFILE_NAMES,
  SimulatedProvider,
  isProfileName,
  type FailureProfile,
  type SimulatedProviderOptions,
} from '../../src/simulator/simulated.ts';

const TITLE = 'Solar farm opens ahead of schedule';
const TEXT =
  'A new solar farm opened on Monday in the north of the county, three months ahead of schedule. ' +
  'The solar plant will supply clean power to forty thousand homes. ' +
  'Local officials praised the strong progress and welcomed the new jobs at the solar site.';

const request = (task: 'summarize' | 'sentiment' = 'summarize', title = TITLE, text = TEXT): LlmRequest =>
  builtinRequest(task, 'article-1', title, text);

const ALWAYS: Record<'rateLimited' | 'serverError' | 'hang', FailureProfile> = {
  rateLimited: { rateLimitedProbability: 1, serverErrorProbability: 0, hangProbability: 0 },
  serverError: { rateLimitedProbability: 0, serverErrorProbability: 1, hangProbability: 0 },
  hang: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 1 },
};

function setup(options: SimulatedProviderOptions = {}): { clock: ManualClock; provider: SimulatedProvider } {
  const clock = new ManualClock();
  return { clock, provider: new SimulatedProvider({ clock, ...options }) };
}

/** Records when (on the manual clock) and how a call settled. */
function track(clock: ManualClock, promise: Promise<LlmResponse>) {
  const state: { settledAtMs?: number; value?: LlmResponse; error?: unknown } = {};
  promise.then(
    (value) => Object.assign(state, { settledAtMs: clock.now(), value }),
    (error: unknown) => Object.assign(state, { settledAtMs: clock.now(), error }),
  );
  return state;
}

/** What a call came to, in a form that compares across runs. */
function outcomeOf(result: PromiseSettledResult<LlmResponse>): string {
  if (result.status === 'fulfilled') return `ok ${JSON.stringify(result.value.output)}`;
  const error: unknown = result.reason;
  if (error instanceof RateLimitError) return `429 ${error.retryAfterMs}`;
  if (error instanceof ServerError) return '503';
  if (error instanceof TimeoutError) return 'hang';
  return `other ${String(error)}`;
}

/** Starts `count` calls at once and runs the clock until all have settled (hangs time out). */
async function runConcurrently(clock: ManualClock, provider: SimulatedProvider, count: number) {
  const settled = Promise.allSettled(Array.from({ length: count }, () => provider.call(request())));
  await clock.advance(30_000);
  return settled;
}

describe('SimulatedProvider - unfit answers', () => {
  it('answers unfit as often as malformedProbability says — a MalformedOutputError with the answer, its problems and its usage — and every repair fit', async () => {
    const provider = new SimulatedProvider({
      minLatencyMs: 0,
      maxLatencyMs: 0,
      profile: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0, malformedProbability: 1 },
    });
    const request = builtinRequest('sentiment', '1', 'Fire', 'A fire broke out.');
    const error = (await provider.call(request).catch((e: unknown) => e)) as MalformedOutputError;
    expect(error).toBeInstanceOf(MalformedOutputError);
    expect(error.problems).toEqual([{ path: '', message: "must have required property 'sentiment'" }]);
    expect(JSON.parse(error.answer!)).not.toHaveProperty('sentiment');
    expect(error.usage!.inputTokens).toBeGreaterThan(0);
    expect(provider.malformed).toBe(1);
    const repaired = await provider.call({
      ...request,
      messages: [
        { role: 'assistant', content: error.answer! },
        { role: 'user', content: 'add the sentiment' },
      ],
    });
    expect(repaired.output).toHaveProperty('sentiment');
    // The conversation is billed too: a token for every four characters of it all.
    expect(repaired.usage!.inputTokens).toBeGreaterThan(error.usage!.inputTokens);
    expect(() => new SimulatedProvider({ profile: { ...FAILURE_PROFILES.default, malformedProbability: 2 } })).toThrow(
      /^Expected profile.malformedProbability to be/,
    );
  });
});

describe('FAILURE_PROFILES', () => {
  it('FAILURE_PROFILES - holds the documented probabilities', () => {
    expect(FAILURE_PROFILES).toEqual({
      default: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0 },
      production: { rateLimitedProbability: 0.1, serverErrorProbability: 0.05, hangProbability: 0.05 },
      stress: { rateLimitedProbability: 0.25, serverErrorProbability: 0.1, hangProbability: 0.15 },
      outage: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0 },
      unfit: { rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0, malformedProbability: 0.2 },
    });
    expect(PROFILE_NAMES).toEqual(['default', 'production', 'stress', 'outage', 'unfit']);
    expect(Object.isFrozen(FAILURE_PROFILES.production)).toBe(true);
    expect(OUTAGE_PROFILE_WINDOW).toEqual({ startMs: 2000, endMs: 8000 });
    expect(Object.isFrozen(OUTAGE_PROFILE_WINDOW)).toBe(true);
  });

  it('isProfileName() - accepts only the profile names', () => {
    expect(isProfileName('production')).toBe(true);
    expect(isProfileName('outage')).toBe(true);
    expect(isProfileName('chaos')).toBe(false);
    expect(isProfileName('toString')).toBe(false);
    expect(isProfileName(undefined)).toBe(false);
  });
});

describe('SimulatedProvider', () => {
  it('constructor - applies the documented defaults', async () => {
    const { clock, provider } = setup();
    expect(provider.name).toBe('simulated');
    const call = track(clock, provider.call(request()));
    await clock.advance(199);
    expect(call.settledAtMs).toBeUndefined();
    await clock.advance(601);
    expect(call.value).toBeDefined();
  });

  it('constructor - throws TypeError for bad options', () => {
    const bad: [SimulatedProviderOptions, RegExp][] = [
      [{ name: '' }, /Expected name to be a non-empty string, got ""/],
      [{ minLatencyMs: -1 }, /Expected minLatencyMs to be a finite number >= 0 \(ms\), got -1/],
      [{ minLatencyMs: Number.NaN }, /minLatencyMs.*got NaN/],
      [{ maxLatencyMs: Infinity }, /maxLatencyMs.*got Infinity/],
      [{ minLatencyMs: 500, maxLatencyMs: 400 }, /Expected minLatencyMs to be at most maxLatencyMs \(400\), got 500/],
      [{ hangMs: -5 }, /Expected hangMs to be a finite number >= 0 \(ms\), got -5/],
      [{ seed: 1.5 }, /Expected seed to be a safe integer, got 1.5/],
      [{ profile: 'chaos' as never }, /Expected profile to be one of "default", "production", "stress".*got "chaos"/],
      [{ profile: { ...ALWAYS.hang, hangProbability: 1.5 } }, /profile.hangProbability.*\[0, 1\], got 1.5/],
      [{ profile: { ...ALWAYS.hang, serverErrorProbability: 0.5 } }, /sum to at most 1, got 1.5/],
      [{ quota: { rate: 0, burst: 1 } }, /Expected quota.rate to be a number > 0 \(calls per second\), got 0/],
      [{ quota: { rate: 5, burst: 0.5 } }, /Expected quota.burst to be a finite number >= 1, got 0.5/],
      [{ quota: null as never }, /Expected quota to be an object.*got null/],
      [{ headerStyle: 'aws' as never }, /Expected headerStyle to be one of "openai", "anthropic", "azure", "gemini", "ietf", got "aws"/],
      [{ outage: null as never }, /Expected outage to be an object, got null/],
      [{ outage: { startMs: -1, endMs: 5 } }, /Expected outage.startMs to be a finite number >= 0 \(ms\), got -1/],
      [{ outage: { startMs: 0, endMs: Infinity } }, /Expected outage.endMs to be a finite number >= 0 \(ms\), got Infinity/],
      [{ outage: { startMs: 5, endMs: 4 } }, /Expected outage.endMs to be at least outage.startMs \(5\), got 4/],
      [{ profile: 'outage', outage: { startMs: 5, endMs: Number.NaN } }, /outage.endMs.*got NaN/],
      [{ epochMs: Number.NaN }, /Expected epochMs to be a finite number \(Unix epoch ms\), got NaN/],
    ];
    for (const [options, message] of bad) {
      expect(() => new SimulatedProvider(options), JSON.stringify(options)).toThrow(TypeError);
      expect(() => new SimulatedProvider(options)).toThrow(message);
    }
  });

  it('.call() - resolves after a latency within [minLatencyMs, maxLatencyMs]', async () => {
    const { clock, provider } = setup({ minLatencyMs: 100, maxLatencyMs: 300 });
    const latenciesMs: number[] = [];
    for (let i = 0; i < 50; i++) {
      const startMs = clock.now();
      const call = track(clock, provider.call(request()));
      await clock.advance(300);
      expect(call.value).toBeDefined();
      latenciesMs.push(call.settledAtMs! - startMs);
    }
    expect(Math.min(...latenciesMs)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...latenciesMs)).toBeLessThanOrEqual(300);
    // Uniform over the range, not a constant: both halves get hit.
    expect(latenciesMs.some((ms) => ms < 200)).toBe(true);
    expect(latenciesMs.some((ms) => ms > 200)).toBe(true);
  });

  it('.call() - takes exactly the latency when min and max agree', async () => {
    const { clock, provider } = setup({ minLatencyMs: 250, maxLatencyMs: 250 });
    const call = track(clock, provider.call(request()));
    await clock.advance(249);
    expect(call.settledAtMs).toBeUndefined();
    await clock.advance(1);
    expect(call.settledAtMs).toBe(250);
  });

  it('.call() - gives the same results for the same seed', async () => {
    const run = async (seed: number) => {
      const { clock, provider } = setup({ profile: 'stress', seed, minLatencyMs: 0, maxLatencyMs: 1000 });
      return (await runConcurrently(clock, provider, 200)).map(outcomeOf);
    };
    const first = await run(7);
    expect(await run(7)).toEqual(first);
    expect(await run(8)).not.toEqual(first);
  });

  it('.call() - gives call n the same fate whether calls overlap or not', async () => {
    const options: SimulatedProviderOptions = { profile: 'stress', seed: 3, minLatencyMs: 0, maxLatencyMs: 1000 };
    const concurrent = setup(options);
    const together = (await runConcurrently(concurrent.clock, concurrent.provider, 100)).map(outcomeOf);

    const sequential = setup(options);
    const oneByOne: string[] = [];
    for (let i = 0; i < 100; i++) oneByOne.push(...(await runConcurrently(sequential.clock, sequential.provider, 1)).map(outcomeOf));
    expect(oneByOne).toEqual(together);
  });

  it('.call() - never fails with the default profile', async () => {
    const { clock, provider } = setup({ minLatencyMs: 0, maxLatencyMs: 0 });
    const outcomes = await runConcurrently(clock, provider, 500);
    expect(outcomes.every((result) => result.status === 'fulfilled')).toBe(true);
    expect([provider.calls, provider.rateLimited, provider.serverErrors, provider.hangs]).toEqual([500, 0, 0, 0]);
  });

  it.each([
    ['production', { rateLimited: [0.07, 0.13], serverError: [0.03, 0.07], hang: [0.03, 0.07] }],
    ['stress', { rateLimited: [0.21, 0.29], serverError: [0.07, 0.13], hang: [0.12, 0.18] }],
  ] as const)('.call() - fails at roughly the %s profile rates', async (profile, bounds) => {
    const { clock, provider } = setup({ profile, minLatencyMs: 0, maxLatencyMs: 0 });
    const callCount = 2000;
    const outcomes = await runConcurrently(clock, provider, callCount);
    const share = (type: abstract new (...args: never[]) => Error) =>
      outcomes.filter((result) => result.status === 'rejected' && result.reason instanceof type).length / callCount;
    const shares = { rateLimited: share(RateLimitError), serverError: share(ServerError), hang: share(TimeoutError) };
    for (const key of ['rateLimited', 'serverError', 'hang'] as const) {
      expect(shares[key], key).toBeGreaterThanOrEqual(bounds[key][0]);
      expect(shares[key], key).toBeLessThanOrEqual(bounds[key][1]);
    }
    expect(provider.calls).toBe(callCount);
    expect(provider.rateLimited).toBe(shares.rateLimited * callCount);
    expect(provider.serverErrors).toBe(shares.serverError * callCount);
    expect(provider.hangs).toBe(shares.hang * callCount);
  });

  it('.call() - rejects with RateLimitError after the latency, with a retry-after of 100-1000 ms', async () => {
    const { clock, provider } = setup({ profile: ALWAYS.rateLimited, minLatencyMs: 50, maxLatencyMs: 50 });
    const retryAftersMs: number[] = [];
    for (let i = 0; i < 100; i++) {
      const call = track(clock, provider.call(request()));
      await clock.advance(49);
      expect(call.settledAtMs).toBeUndefined();
      await clock.advance(1);
      expect(call.error).toBeInstanceOf(RateLimitError);
      const { retryAfterMs, status, retryable } = call.error as RateLimitError;
      expect([status, retryable]).toEqual([429, true]);
      retryAftersMs.push(retryAfterMs!);
    }
    expect(retryAftersMs.every((ms) => Number.isInteger(ms) && ms >= 100 && ms <= 1000)).toBe(true);
    expect(new Set(retryAftersMs).size).toBeGreaterThan(50);
    expect(provider.rateLimited).toBe(100);
  });

  it('.call() - rejects with ServerError (503) after the latency', async () => {
    const { clock, provider } = setup({ profile: ALWAYS.serverError, minLatencyMs: 50, maxLatencyMs: 50 });
    const call = track(clock, provider.call(request()));
    await clock.advance(49);
    expect(call.settledAtMs).toBeUndefined();
    await clock.advance(1);
    expect(call.error).toBeInstanceOf(ServerError);
    expect((call.error as ServerError).status).toBe(503);
    expect(provider.serverErrors).toBe(1);
  });

  it('.call() - rejects with RateLimitError when the quota is exhausted', async () => {
    const { clock, provider } = setup({ quota: { rate: 5, burst: 1 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const first = provider.call(request());
    const second = track(clock, provider.call(request()));
    // The quota answers at once: no clock movement needed.
    await new Promise((resolve) => setImmediate(resolve));
    expect(second.settledAtMs).toBe(0);
    expect(second.error).toBeInstanceOf(RateLimitError);
    expect((second.error as RateLimitError).retryAfterMs).toBe(200);
    await clock.advance(0);
    await expect(first).resolves.toBeDefined();
    expect([provider.calls, provider.rateLimited]).toEqual([2, 1]);
  });

  it('.call() - reports the time left until the quota admits a call as retryAfterMs', async () => {
    const { clock, provider } = setup({ quota: { rate: 5, burst: 1 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const first = provider.call(request());
    await clock.advance(0);
    await first;
    await clock.advance(50);
    await expect(provider.call(request())).rejects.toMatchObject({ name: 'RateLimitError', retryAfterMs: 150 });
    await clock.advance(149.5);
    // Half a millisecond to go still reads as 1 ms: hints are whole ms rounded up.
    await expect(provider.call(request())).rejects.toMatchObject({ retryAfterMs: 1 });
  });

  it('.call() - succeeds again once the quota has refilled', async () => {
    const { clock, provider } = setup({ quota: { rate: 5, burst: 1 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const first = provider.call(request());
    await expect(provider.call(request())).rejects.toBeInstanceOf(RateLimitError);
    await clock.advance(200);
    await first;
    const third = provider.call(request());
    await clock.advance(0);
    await expect(third).resolves.toMatchObject({ output: { summary: expect.any(String) } });
  });

  it('.call() - checks the quota on arrival, before the latency', async () => {
    const { clock, provider } = setup({ quota: { rate: 1, burst: 2 }, minLatencyMs: 500, maxLatencyMs: 500 });
    const calls = [0, 1, 2].map(() => track(clock, provider.call(request())));
    await clock.advance(0);
    expect(calls[2]!.error).toBeInstanceOf(RateLimitError);
    expect((calls[2]!.error as RateLimitError).retryAfterMs).toBe(1000);
    expect(calls[0]!.settledAtMs).toBeUndefined();
    await clock.advance(500);
    expect(calls[0]!.value).toBeDefined();
    expect(calls[1]!.value).toBeDefined();
  });

  it('.call() - rejects with signal.reason when aborted during the latency, clearing its timer', async () => {
    const { clock, provider } = setup({ minLatencyMs: 500, maxLatencyMs: 500 });
    const controller = new AbortController();
    const reason = new Error('user cancelled');
    const call = provider.call(request(), { signal: controller.signal });
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(1);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it('.call() - rejects with signal.reason at once when already aborted, without counting the call', async () => {
    const { provider } = setup();
    const reason = new Error('too late');
    await expect(provider.call(request(), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(provider.calls).toBe(0);
  });

  it('.call() - hangs until the signal aborts', async () => {
    const { clock, provider } = setup({ profile: ALWAYS.hang });
    const controller = new AbortController();
    const call = track(clock, provider.call(request(), { signal: controller.signal }));
    await clock.advance(29_999);
    expect(call.settledAtMs).toBeUndefined();
    const reason = new Error('deadline');
    controller.abort(reason);
    await new Promise((resolve) => setImmediate(resolve));
    expect(call.error).toBe(reason);
    expect(clock.pendingTimers).toBe(0);
    expect(provider.hangs).toBe(1);
  });

  it('.call() - rejects a hanging call with TimeoutError after hangMs', async () => {
    const { clock, provider } = setup({ profile: ALWAYS.hang, hangMs: 5000 });
    const call = track(clock, provider.call(request()));
    await clock.advance(4999);
    expect(call.settledAtMs).toBeUndefined();
    await clock.advance(1);
    expect(call.error).toBeInstanceOf(TimeoutError);
    expect((call.error as TimeoutError).timeoutMs).toBe(5000);
    expect((call.error as TimeoutError).retryable).toBe(false);
  });

  it('.call() - summarizes with the lead sentence and keywords from the text', async () => {
    const { clock, provider } = setup({ minLatencyMs: 0, maxLatencyMs: 0 });
    const call = provider.call(request('summarize'));
    await clock.advance(0);
    const { output, usage } = await call;
    expect(output).toEqual({
      summary: 'A new solar farm opened on Monday in the north of the county, three months ahead of schedule.',
      keywords: ['solar', 'farm', 'ahead', 'schedule', 'opens'],
    });
    expect(usage).toEqual({
      inputTokens: Math.ceil(request().prompt.length / 4),
      outputTokens: expect.any(Number),
    });
    expect(usage!.outputTokens).toBeGreaterThan(0);
  });

  it('.call() - reads the sentiment of the text', async () => {
    const { clock, provider } = setup({ minLatencyMs: 0, maxLatencyMs: 0 });
    const positive = provider.call(request('sentiment'));
    const negative = provider.call(
      request('sentiment', 'Factory fire', 'A fire destroyed the factory. Two workers were killed and the damage is a disaster.'),
    );
    await clock.advance(0);
    const positiveOutput = (await positive).output;
    expect(positiveOutput).toMatchObject({ sentiment: 'positive' });
    expect((positiveOutput as { score: number }).score).toBeGreaterThan(0.2);
    expect((await negative).output).toMatchObject({ sentiment: 'negative' });
  });

  it('.call() - answers any other task with a value made to fit its schema, of words from the prompt', async () => {
    const { clock, provider } = setup({ minLatencyMs: 0, maxLatencyMs: 0 });
    const schema = {
      type: 'object',
      properties: { people: { type: 'array', items: { type: 'string' }, minItems: 1 }, count: { type: 'integer', minimum: 2, maximum: 4 } },
      required: ['people', 'count'],
      additionalProperties: false,
    };
    const answer = provider.call({ task: 'entities', articleId: '1', prompt: `List the people.\n\nTitle: ${TITLE}\n\n${TEXT}`, schema });
    await clock.advance(0);
    const { output } = await answer;
    expect(output).toEqual({ people: expect.arrayContaining([expect.stringMatching(/solar|farm|schedule/)]), count: expect.any(Number) });
    expect(output.count).toBeGreaterThanOrEqual(2);
  });

  it('.call() - answers any other task as articles differ: 300 articles, every topic, confidences across [0, 1]; the same request, the same answer', async () => {
    const schema = {
      type: 'object',
      properties: {
        topic: { type: 'string', enum: ['economy', 'politics', 'sport', 'science', 'culture'] },
        confidence: { type: 'number', minimum: 0, maximum: 1 },
      },
      required: ['topic', 'confidence'],
      additionalProperties: false,
    };
    const validate = new Ajv2020({ strict: false }).compile(schema);
    const classify = (article: Article): LlmRequest => ({
      task: 'classify',
      articleId: article.id,
      prompt: `Classify the article.\n\nTitle: ${article.title}\n\n${article.content}`,
      schema,
    });
    const articles = [...generateArticles(300)];
    const answersOf = async (provider: SimulatedProvider, list: readonly Article[]) => {
      const outputs = [];
      for (const article of list) outputs.push((await provider.call(classify(article))).output);
      return outputs;
    };
    const outputs = await answersOf(new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), articles);
    for (const output of outputs) expect(validate(output), JSON.stringify(output)).toBe(true);
    const topics = new Map<unknown, number>();
    for (const { topic } of outputs) topics.set(topic, (topics.get(topic) ?? 0) + 1);
    expect(topics.size).toBe(5);
    const confidences = outputs.map((output) => output.confidence as number);
    expect(Math.min(...confidences)).toBeLessThan(0.1);
    expect(Math.max(...confidences)).toBeGreaterThan(0.9);
    expect(new Set(confidences).size).toBeGreaterThan(50);
    // Seeded by the request, not by the call's place: the last ten articles first, from a new provider, answered alike.
    const again = await answersOf(new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), articles.slice(-10).reverse());
    expect(again.reverse()).toEqual(outputs.slice(-10));
    // Another seed, other answers.
    const reseeded = await answersOf(new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0, seed: 2 }), articles.slice(0, 20));
    expect(reseeded.filter((output, index) => JSON.stringify(output) !== JSON.stringify(outputs[index])).length).toBeGreaterThan(10);
  });

  it('.call() - refuses a schema no value fits with a BadRequestError, not retried', async () => {
    const { clock, provider } = setup({ minLatencyMs: 0, maxLatencyMs: 0 });
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 3, maximum: 2 } }, required: ['n'] };
    const answer = provider.call({ task: 'impossible', articleId: '1', prompt: 'x', schema }).catch((e: unknown) => e);
    await clock.advance(0);
    expect(await answer).toMatchObject({
      name: 'BadRequestError',
      retryable: false,
      message: expect.stringMatching(/impossible schema admits no value/),
    });
  });

  it('.call() - rejects with TypeError for a request without a prompt or a schema', async () => {
    const { provider } = setup();
    await expect(provider.call({ task: 'x', articleId: '1' } as unknown as LlmRequest)).rejects.toThrow(
      new TypeError('Expected request.prompt to be a string, got undefined'),
    );
    expect(provider.calls).toBe(0);
  });
});

/** 2025-01-01T00:00:00Z, what the providers below take their creation to be. */
const EPOCH_MS = Date.UTC(2025, 0, 1);

/** Lets promise continuations run without moving the manual clock. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('SimulatedProvider - rate-limit headers', () => {
  /** Starts `count` zero-latency calls now and returns how each settled. */
  async function callNow(clock: ManualClock, provider: SimulatedProvider, count: number) {
    const settled = Promise.allSettled(Array.from({ length: count }, () => provider.call(request())));
    await clock.advance(0);
    return settled;
  }

  const quotaOptions = (headerStyle: (typeof HEADER_STYLES)[number]): SimulatedProviderOptions => ({
    headerStyle,
    quota: { rate: 5, burst: 3 },
    minLatencyMs: 0,
    maxLatencyMs: 0,
    epochMs: EPOCH_MS,
  });

  it('.call() - sends no headers without a headerStyle', async () => {
    const { clock, provider } = setup({ quota: { rate: 5, burst: 1 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const [first, second] = await callNow(clock, provider, 2);
    expect(first!.status === 'fulfilled' && 'headers' in first.value).toBe(false);
    expect((second as PromiseRejectedResult).reason).toBeInstanceOf(RateLimitError);
    expect((second as PromiseRejectedResult).reason.headers).toBeUndefined();
  });

  it('.call() - sends OpenAI headers describing the quota: 300 a minute; after 2 of a burst of 3, 1 remains, full in 400 ms', async () => {
    const { clock, provider } = setup(quotaOptions('openai'));
    const [, second] = await callNow(clock, provider, 2);
    expect((second as PromiseFulfilledResult<LlmResponse>).value.headers).toEqual({
      'x-ratelimit-limit-requests': '300',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '400ms',
    });
  });

  it('.call() - sends Anthropic headers with the reset as a timestamp from epochMs and the clock', async () => {
    const { clock, provider } = setup(quotaOptions('anthropic'));
    await clock.advance(1000);
    const [, second] = await callNow(clock, provider, 2);
    expect((second as PromiseFulfilledResult<LlmResponse>).value.headers).toEqual({
      'anthropic-ratelimit-requests-limit': '300',
      'anthropic-ratelimit-requests-remaining': '1',
      'anthropic-ratelimit-requests-reset': '2025-01-01T00:00:01.400Z',
    });
  });

  it('.call() - sends IETF headers with the reset in whole seconds', async () => {
    const { clock, provider } = setup(quotaOptions('ietf'));
    const [, second] = await callNow(clock, provider, 2);
    expect((second as PromiseFulfilledResult<LlmResponse>).value.headers).toEqual({
      'ratelimit-policy': '"requests";q=300;w=60',
      ratelimit: '"requests";r=1;t=1',
    });
  });

  it.each(SPOKEN_STYLES)('.call() - sends headers that parse back to the quota state (%s)', async (style) => {
    const clock = new ManualClock(12_345);
    const provider = new SimulatedProvider({ ...quotaOptions(style), clock });
    const parsed = (response: PromiseSettledResult<LlmResponse>) =>
      parseRateLimitHeaders((response as PromiseFulfilledResult<LlmResponse>).value.headers, { nowMs: EPOCH_MS + clock.now() - 12_345 });
    const roundTo = (ms: number) => (style === 'ietf' ? Math.ceil(ms / 1000) * 1000 : ms);

    const [first, second] = await callNow(clock, provider, 2);
    expect(parsed(first!).limits).toMatchObject([{ kind: 'requests', limit: 300, windowMs: 60_000, remaining: 2, resetMs: roundTo(200) }]);
    expect(parsed(second!).limits).toMatchObject([{ kind: 'requests', limit: 300, windowMs: 60_000, remaining: 1, resetMs: roundTo(400) }]);

    // 100 ms later the bucket holds 1.5: this call leaves 0.5 — no whole call left, full in 500 ms.
    await clock.advance(100);
    const [third] = await callNow(clock, provider, 1);
    expect(parsed(third!).limits).toMatchObject([{ kind: 'requests', limit: 300, windowMs: 60_000, remaining: 0, resetMs: roundTo(500) }]);
  });

  it('.call() - computes the headers when it answers, after the latency', async () => {
    const { clock, provider } = setup({ ...quotaOptions('openai'), minLatencyMs: 100, maxLatencyMs: 100 });
    const calls = [track(clock, provider.call(request())), track(clock, provider.call(request()))];
    await clock.advance(100);
    // Charged 2 at 0 ms, refilled 0.5 by 100 ms: 1.5 left, full in 300 ms.
    expect(calls[1]!.value!.headers).toMatchObject({ 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '300ms' });
  });

  it('.call() - sends no header at all in the Gemini style, a quota 429 keeping its wait', async () => {
    const { clock, provider } = setup(quotaOptions('gemini'));
    const outcomes = await callNow(clock, provider, 4);
    expect((outcomes[0] as PromiseFulfilledResult<LlmResponse>).value.headers).toEqual({});
    const error = (outcomes[3] as PromiseRejectedResult).reason as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.retryAfterMs).toBe(200);
    expect(error.headers).toEqual({});
  });

  it.each(SPOKEN_STYLES)('.call() - sends retry-after, retry-after-ms and the quota on a quota 429 (%s)', async (style) => {
    const { clock, provider } = setup(quotaOptions(style));
    const outcomes = await callNow(clock, provider, 4);
    const error = (outcomes[3] as PromiseRejectedResult).reason as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.retryAfterMs).toBe(200);
    expect(error.headers).toMatchObject({ 'retry-after': '1', 'retry-after-ms': '200' });
    const info = parseRateLimitHeaders(error.headers, { nowMs: EPOCH_MS });
    expect(info.retryAfterMs).toBe(200);
    expect(info.limits).toMatchObject([{ kind: 'requests', limit: 300, remaining: 0 }]);
    expect(Object.isFrozen(error.headers)).toBe(true);
  });

  it('.call() - sends only retry-after and retry-after-ms on a random 429 without a quota', async () => {
    const { clock, provider } = setup({ headerStyle: 'openai', profile: ALWAYS.rateLimited, minLatencyMs: 0, maxLatencyMs: 0 });
    for (const outcome of await callNow(clock, provider, 20)) {
      const error = (outcome as PromiseRejectedResult).reason as RateLimitError;
      expect(error.headers).toEqual({
        'retry-after': String(Math.ceil(error.retryAfterMs! / 1000)),
        'retry-after-ms': String(error.retryAfterMs),
      });
    }
  });

  it('.call() - sends an empty header set on answers without a quota', async () => {
    const { clock, provider } = setup({ headerStyle: 'anthropic', minLatencyMs: 0, maxLatencyMs: 0 });
    const [answer] = await callNow(clock, provider, 1);
    expect((answer as PromiseFulfilledResult<LlmResponse>).value.headers).toEqual({});
  });

  it('.call() - sends the quota, and no retry-after, on a random 503', async () => {
    const { clock, provider } = setup({ ...quotaOptions('openai'), profile: ALWAYS.serverError });
    const [outcome] = await callNow(clock, provider, 1);
    const error = (outcome as PromiseRejectedResult).reason as ServerError;
    expect(error).toBeInstanceOf(ServerError);
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.headers).toEqual({
      'x-ratelimit-limit-requests': '300',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '200ms',
    });
  });

  it(".call() - keeps each call's fate and retry-after whatever the header style", async () => {
    const run = async (headerStyle?: (typeof HEADER_STYLES)[number]) => {
      const { clock, provider } = setup({ profile: 'stress', seed: 11, minLatencyMs: 0, maxLatencyMs: 1000, headerStyle });
      return (await runConcurrently(clock, provider, 200)).map(outcomeOf);
    };
    const plain = await run();
    for (const style of HEADER_STYLES) expect(await run(style)).toEqual(plain);
  });
});

describe('SimulatedProvider - outage', () => {
  /** Calls at `atMs` since creation (zero latency) and says how it went. */
  async function callAt(clock: ManualClock, provider: SimulatedProvider, atMs: number, startMs = 0) {
    await clock.advance(startMs + atMs - clock.now());
    const settled = Promise.allSettled([provider.call(request())]);
    await clock.advance(0);
    return (await settled)[0]!;
  }

  it('.call() - fails exactly the calls arriving in [startMs, endMs), with a retryable 503', async () => {
    // The window is measured from the provider's creation, not from the clock's zero.
    const clock = new ManualClock(1000);
    const provider = new SimulatedProvider({ clock, outage: { startMs: 2000, endMs: 8000 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const outcomes = [];
    for (const atMs of [0, 1999, 2000, 2000.5, 5000, 7999, 7999.9, 8000, 9000]) {
      outcomes.push([atMs, outcomeOf(await callAt(clock, provider, atMs, 1000))]);
    }
    expect(outcomes.map(([atMs, outcome]) => `${atMs} ${String(outcome).slice(0, 3)}`)).toEqual([
      '0 ok ',
      '1999 ok ',
      '2000 503',
      '2000.5 503',
      '5000 503',
      '7999 503',
      '7999.9 503',
      '8000 ok ',
      '9000 ok ',
    ]);
    expect([provider.calls, provider.outageErrors, provider.serverErrors, provider.rateLimited]).toEqual([9, 5, 5, 0]);
  });

  it('.call() - fails an outage call after its latency, judged by its arrival', async () => {
    const { clock, provider } = setup({ outage: { startMs: 100, endMs: 200 }, minLatencyMs: 50, maxLatencyMs: 50 });
    await clock.advance(199);
    const call = track(clock, provider.call(request()));
    await clock.advance(49);
    expect(call.settledAtMs).toBeUndefined();
    await clock.advance(1);
    expect(call.settledAtMs).toBe(249);
    expect(call.error).toBeInstanceOf(ServerError);
    const { status, retryable, message } = call.error as ServerError;
    expect([status, retryable, message]).toEqual([503, true, 'service unavailable (503): outage']);
  });

  it('.call() - sends a retry-after of the outage time left, measured when the 503 is sent', async () => {
    const { clock, provider } = setup({
      headerStyle: 'openai',
      outage: { startMs: 1000, endMs: 6000 },
      minLatencyMs: 100,
      maxLatencyMs: 100,
    });
    await clock.advance(3000);
    const early = track(clock, provider.call(request()));
    await clock.advance(2950);
    const late = track(clock, provider.call(request()));
    await clock.advance(200);
    expect((early.error as ServerError).retryAfterMs).toBe(2900);
    expect((early.error as ServerError).headers).toEqual({ 'retry-after': '3', 'retry-after-ms': '2900' });
    // Arrived at 5950, answered at 6050: the outage is over, nothing left to wait.
    expect((late.error as ServerError).retryAfterMs).toBe(0);
    expect((late.error as ServerError).headers).toEqual({ 'retry-after': '0', 'retry-after-ms': '0' });
  });

  it('.call() - sends no retry-after on outage 503s without a headerStyle', async () => {
    const { clock, provider } = setup({ outage: { startMs: 0, endMs: 1000 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const outcome = await callAt(clock, provider, 10);
    const error = (outcome as PromiseRejectedResult).reason as ServerError;
    expect(error).toBeInstanceOf(ServerError);
    expect([error.retryAfterMs, error.headers]).toEqual([undefined, undefined]);
  });

  it('.call() - sends the quota with the outage retry-after, and spends no quota during the outage', async () => {
    const { clock, provider } = setup({
      headerStyle: 'ietf',
      quota: { rate: 1, burst: 1 },
      outage: { startMs: 0, endMs: 2500 },
      minLatencyMs: 0,
      maxLatencyMs: 0,
    });
    const outcomes = await Promise.allSettled([1, 2, 3].map(() => provider.call(request())));
    for (const outcome of outcomes) {
      const error = (outcome as PromiseRejectedResult).reason as ServerError;
      expect(error).toBeInstanceOf(ServerError);
      expect(error.headers).toEqual({
        'retry-after': '3',
        'retry-after-ms': '2500',
        'ratelimit-policy': '"requests";q=60;w=60',
        ratelimit: '"requests";r=1;t=0',
      });
    }
    // After the outage the quota is untouched: a full burst of one call, then a 429.
    const after = await callAt(clock, provider, 2500);
    expect(after.status).toBe('fulfilled');
    expect(outcomeOf(await callAt(clock, provider, 2500))).toBe('429 1000');
    expect([provider.outageErrors, provider.serverErrors, provider.rateLimited]).toEqual([3, 3, 1]);
  });

  it('.call() - does not count an outage call aborted during its latency', async () => {
    const { clock, provider } = setup({ outage: { startMs: 0, endMs: 1000 }, minLatencyMs: 100, maxLatencyMs: 100 });
    const controller = new AbortController();
    const reason = new Error('gone');
    const call = provider.call(request(), { signal: controller.signal });
    await clock.advance(50);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect([provider.calls, provider.outageErrors, provider.serverErrors]).toEqual([1, 0, 0]);
  });

  it('.call() - draws as many random numbers per outage call, so calls after it keep their fate', async () => {
    const run = async (outage?: { startMs: number; endMs: number }) => {
      const { clock, provider } = setup({ profile: 'production', seed: 5, minLatencyMs: 0, maxLatencyMs: 50, outage });
      // One call every 10 ms, not awaited: hangs must not hold up the calls after them.
      const calls: Promise<PromiseSettledResult<LlmResponse>>[] = [];
      for (let i = 0; i < 300; i++) {
        calls.push(Promise.allSettled([provider.call(request())]).then(([result]) => result!));
        await clock.advance(10);
      }
      await clock.advance(30_000);
      return (await Promise.all(calls)).map(outcomeOf);
    };
    const normal = await run();
    const withOutage = await run({ startMs: 1000, endMs: 2000 });
    expect(withOutage.slice(100, 200).every((outcome) => outcome === '503')).toBe(true);
    expect(withOutage.slice(0, 100)).toEqual(normal.slice(0, 100));
    expect(withOutage.slice(200)).toEqual(normal.slice(200));
    // The normal run failed in places, so the equality above compares fates, not just successes.
    expect(new Set(normal.map((outcome) => outcome.slice(0, 3))).size).toBeGreaterThan(2);
  });

  it("constructor - the 'outage' profile is down from 2 s to 8 s, with no random failures", async () => {
    const { clock, provider } = setup({ profile: 'outage', minLatencyMs: 0, maxLatencyMs: 0 });
    const outcomes: string[] = [];
    for (const atMs of [0, 1999, 2000, 7999, 8000]) outcomes.push(outcomeOf(await callAt(clock, provider, atMs)).slice(0, 3));
    expect(outcomes).toEqual(['ok ', 'ok ', '503', '503', 'ok ']);
    const after = await runConcurrently(clock, provider, 200);
    expect(after.every((outcome) => outcome.status === 'fulfilled')).toBe(true);
    expect(provider.outageErrors).toBe(2);
  });

  it("constructor - an outage option overrides the 'outage' profile's window", async () => {
    const { clock, provider } = setup({ profile: 'outage', outage: { startMs: 100, endMs: 200 }, minLatencyMs: 0, maxLatencyMs: 0 });
    const outcomes: string[] = [];
    for (const atMs of [99, 100, 199, 200, 2000]) outcomes.push(outcomeOf(await callAt(clock, provider, atMs)).slice(0, 3));
    expect(outcomes).toEqual(['ok ', '503', '503', 'ok ', 'ok ']);
  });

  it('constructor - an empty outage window never fails a call', async () => {
    const { clock, provider } = setup({ outage: { startMs: 100, endMs: 100 }, minLatencyMs: 0, maxLatencyMs: 0 });
    expect((await callAt(clock, provider, 100)).status).toBe('fulfilled');
    await flush();
    expect(provider.outageErrors).toBe(0);
  });
});
