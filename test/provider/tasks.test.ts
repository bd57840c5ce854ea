import { describe, expect, it } from 'vitest';
import { MalformedOutputError } from '../../src/provider/provider.ts';
import { promptOf, readAnswer, TASK_DEFINITIONS } from '../../src/provider/tasks/answer.ts';

const { summarize, sentiment } = TASK_DEFINITIONS;

describe('the tasks as real providers are asked them', () => {
  it('promptOf() - puts the task instruction, the title and the article together', () => {
    const prompt = promptOf({ task: 'sentiment', articleId: '1', title: 'Rain', text: 'It rained.' });
    expect(prompt).toBe(`${sentiment.instruction}\n\nTitle: Rain\n\nIt rained.`);
  });

  it('has strict schemas: every property required, no others', () => {
    for (const task of Object.values(TASK_DEFINITIONS)) {
      const schema = task.schema as { properties: object; required: string[]; additionalProperties: boolean };
      expect(schema.additionalProperties).toBe(false);
      expect([...schema.required].sort()).toEqual(Object.keys(schema.properties).sort());
    }
  });

  it('readAnswer() - reads JSON text or a parsed value into the output', async () => {
    await expect(readAnswer(summarize, '{"summary":" A fire. ","keywords":["fire"," town ",""]}')).resolves.toEqual({
      task: 'summarize',
      summary: 'A fire.',
      keywords: ['fire', 'town'],
    });
    await expect(readAnswer(sentiment, { sentiment: 'negative', score: -0.5 })).resolves.toEqual({
      task: 'sentiment',
      sentiment: 'negative',
      score: -0.5,
    });
  });

  it.each([
    [summarize, '{"summary": "cut', /not JSON/],
    [summarize, '{"summary":"x"}', /does not fit the summarize schema: the answer must have required property 'keywords'/],
    [summarize, { summary: 'x', keywords: ['a'], extra: 1 }, /must NOT have additional properties/],
    [summarize, { summary: '  ', keywords: [] }, /the summary is empty/],
    [sentiment, { sentiment: 'angry', score: 0 }, /\/sentiment must be equal to one of the allowed values/],
    [sentiment, { sentiment: 'positive', score: 3 }, /the score 3 is outside \[-1, 1\]/],
  ])('readAnswer() - refuses a bad answer with a MalformedOutputError (%#)', async (task, answer, message) => {
    const error = await readAnswer(task, answer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedOutputError);
    expect((error as Error).message).toMatch(message);
  });
});
