import { describe, expect, it } from 'vitest';
import { readAnswer } from '../../src/provider/answer.ts';
import { MalformedOutputError } from '../../src/provider/provider.ts';
import { builtinRequest } from '../requests.ts';

const summarize = builtinRequest('summarize', '1', 'Fire', 'A fire broke out.');
const sentiment = builtinRequest('sentiment', '1', 'Fire', 'A fire broke out.');

describe('readAnswer()', () => {
  it('reads JSON text or a parsed value that fits the request schema, as it is', async () => {
    await expect(readAnswer(summarize, '{"summary":"A fire.","keywords":["fire","town"]}')).resolves.toEqual({
      summary: 'A fire.',
      keywords: ['fire', 'town'],
    });
    await expect(readAnswer(sentiment, { sentiment: 'negative', score: -0.5 })).resolves.toEqual({ sentiment: 'negative', score: -0.5 });
  });

  it.each([
    [summarize, '{"summary": "cut', /not JSON/],
    [summarize, '"a string"', /not a JSON object for the summarize schema/],
    [summarize, [1, 2], /not a JSON object/],
    [summarize, '{"summary":"x"}', /does not fit the summarize schema: the answer must have required property 'keywords'/],
    [summarize, { summary: 'x', keywords: ['a'], extra: 1 }, /the answer must not have the property 'extra'/],
    // The built-in schemas say what the old parse checked by hand: a summary with text, a score in [-1, 1].
    [summarize, { summary: '  ', keywords: [] }, /\/summary must match pattern/],
    [sentiment, { sentiment: 'angry', score: 0 }, /\/sentiment must be equal to one of the allowed values/],
    [sentiment, { sentiment: 'positive', score: 3 }, /\/score must be <= 1/],
  ])('refuses a bad answer with a MalformedOutputError (%#)', async (request, answer, message) => {
    const error = await readAnswer(request, answer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedOutputError);
    expect((error as Error).message).toMatch(message);
  });

  it('carries the answer as the model gave it, as text, and each problem apart: the field and what was expected there — what a repair sends back', async () => {
    const error = (await readAnswer(sentiment, { sentiment: 'positive', score: 3 }).catch((e: unknown) => e)) as MalformedOutputError;
    expect(error.answer).toBe('{"sentiment":"positive","score":3}');
    expect(error.problems).toEqual([{ path: '/score', message: 'must be <= 1' }]);
    const text = (await readAnswer(summarize, '{"summary": "cut').catch((e: unknown) => e)) as MalformedOutputError;
    expect(text.answer).toBe('{"summary": "cut');
    expect(text.problems).toEqual([{ path: '', message: expect.stringMatching(/^is not JSON/) }]);
  });

  it('carries what the caller gives it — the headers, the usage — on the error, so the limits and the cost still hear of the call', async () => {
    const usage = { inputTokens: 12, outputTokens: 3 };
    const error = (await readAnswer(summarize, '{', { headers: { 'x-a': '1' }, usage }).catch((e: unknown) => e)) as MalformedOutputError;
    expect(error.headers).toEqual({ 'x-a': '1' });
    expect(error.usage).toEqual(usage);
  });
});
