// Every answer is checked against its task's schema in the call loop, whatever the provider — a
// provider of one's own included — and an unfit one is repaired or retried as a vendor's is.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { AttemptEvent } from '../../src/gate/attempt.ts';
import type { ArticleResult } from '../../src/pipeline/result.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import type { LlmOutput, LlmRequest, Provider } from '../../src/provider/provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { OpenAiProvider } from '../../src/vendors/openai/openai-provider.ts';
import { RunEvents } from '../../src/pipeline/run-events.ts';

/** A score of 1 to 5, nothing else. */
const SCORE = {
  type: 'object',
  properties: { score: { type: 'integer', minimum: 1, maximum: 5 } },
  required: ['score'],
  additionalProperties: false,
} as const;
const TASKS = defineTasks([{ name: 'rate', prompt: 'Rate: {{title}}', schema: SCORE }]);
const BANANA = { score: 'banana', extra: 1 } as unknown as LlmOutput;

/** A provider of one's own: answers each call with the next of `answers` (the last repeating), and keeps what it was asked. */
function ownProvider(answers: readonly LlmOutput[], checksAnswers?: boolean): Provider & { asked: LlmRequest[] } {
  const asked: LlmRequest[] = [];
  return {
    name: 'mine',
    checksAnswers,
    asked,
    call: async (request) => {
      asked.push(request);
      return { output: answers[Math.min(asked.length - 1, answers.length - 1)]!, usage: { inputTokens: 10, outputTokens: 5 } };
    },
  };
}

/** A run's events whose attempts go into `attempts`. */
function attemptsInto(attempts: AttemptEvent[]): RunEvents {
  const events = new RunEvents();
  events.on('attempt', (event) => void attempts.push(event));
  return events;
}

async function runWith(provider: Provider) {
  const clock = new ManualClock();
  const results: ArticleResult[] = [];
  const events: AttemptEvent[] = [];
  const summary = await drive(
    clock,
    runPipeline({
      source: [{ id: '1', title: 'A fine day', content: 'Sun.' }],
      tasks: TASKS,
      providers: [{ provider, limits: requestLimit(Infinity, 1) }],
      retry: { maxAttempts: 2, backoff: () => 10 },
      clock,
      onResult: (result) => void results.push(result),
      events: attemptsInto(events),
    }),
  );
  return { summary, result: results[0]!, events };
}

describe('the call loop judges every answer against its schema', () => {
  it('a provider of one’s own answering { score: "banana", extra: 1 } does not succeed: repaired, retried afresh, then failed with why', async () => {
    const provider = ownProvider([BANANA]);
    const { summary, result, events } = await runWith(provider);
    expect(summary).toMatchObject({ succeeded: 0, failed: 1 });
    expect(result).toMatchObject({ status: 'failed', error: { type: 'MalformedOutputError', task: 'rate' } });
    expect(result.error!.message).toMatch(/does not fit the rate schema/);
    expect(events.map((event) => [event.attempt, event.repair, event.outcome])).toEqual([
      [1, 0, 'malformed'],
      [1, 1, 'malformed'],
      [2, 0, 'malformed'],
    ]);
    // What the repair shows the model: its answer, and each thing wrong with it.
    expect(provider.asked[1]!.messages).toEqual([
      { role: 'assistant', content: '{"score":"banana","extra":1}' },
      { role: 'user', content: expect.stringContaining("- the answer: must not have the property 'extra'") },
    ]);
  });

  it('an unfit answer mended by its repair succeeds, the repair counted and paid', async () => {
    const { summary, result, events } = await runWith(ownProvider([BANANA, { score: 4 }]));
    expect(summary).toMatchObject({ succeeded: 1, failed: 0 });
    expect(result).toMatchObject({ status: 'succeeded', outputs: { rate: { score: 4 } }, attempts: 2, repairs: 1 });
    expect(events.map((event) => event.outcome)).toEqual(['malformed', 'ok']);
    // The unfit attempt was sent and answered: its usage is on its error, as a vendor's unfit answer carries it.
    expect(events[0]).toMatchObject({
      called: true,
      usage: undefined,
      error: { name: 'MalformedOutputError', usage: { inputTokens: 10 } },
    });
  });

  it('an answer that is no object at all is unfit too', async () => {
    const { result } = await runWith(ownProvider(['4' as unknown as LlmOutput]));
    expect(result.error!.message).toMatch(/not a JSON object/);
  });

  it('a provider that checks its own answers (checksAnswers, as the vendors’ decode does) is not checked again', async () => {
    const trusted = ownProvider([BANANA], true);
    const { result } = await runWith(trusted);
    // What it vouched for stands: the loop does not pay for the check twice.
    expect(result).toMatchObject({ status: 'succeeded', outputs: { rate: BANANA } });
    expect(new OpenAiProvider({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9' }).checksAnswers).toBe(true);
  });
});
