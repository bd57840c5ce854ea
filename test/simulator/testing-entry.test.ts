import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { JsonSchema } from '../../src/provider/json-schema.ts';
import { fittingValue, simulatedAnswer } from '../../src/testing/index.ts';

const SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    label: { type: 'string', enum: ['up', 'down', 'flat'] },
    score: { type: 'integer', minimum: 3, maximum: 9 },
    code: { type: 'string', pattern: '^[A-Z]{3}-\\d{2}$' },
    tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 4 },
  },
  required: ['label', 'score', 'code', 'tags'],
  additionalProperties: false,
};

describe('news-processor/testing: the simulator as fixtures', () => {
  it('makes values that fit the schema, the same for a variant, other values for others', () => {
    const validate = new Ajv().compile(SCHEMA);
    const values = [0, 1, 2, 3, 4, 5].map((variant) => fittingValue(SCHEMA, { variant }));
    for (const value of values) expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    expect(fittingValue(SCHEMA, { variant: 3 })).toEqual(values[3]);
    expect(new Set(values.map((value) => JSON.stringify(value))).size).toBeGreaterThan(1);
  });

  it('makes its strings of the words it is given', () => {
    const value = fittingValue({ type: 'array', items: { type: 'string' }, minItems: 3, maxItems: 3 }, { words: ['alpha'] }) as string[];
    expect(value).toHaveLength(3);
    for (const item of value) expect(item).toMatch(/alpha/);
  });

  it('refuses a schema no value fits, saying so', () => {
    expect(() => fittingValue({ type: 'integer', minimum: 5, maximum: 4 })).toThrow(/no value/);
  });

  it("answers a user's task as the simulated provider does: fitting, and the same request the same answer", () => {
    const request = { task: 'grade', articleId: 'a1', prompt: 'Title: Rates\n\nThe council raised rates again.', schema: SCHEMA };
    const answer = simulatedAnswer(request, 7);
    expect(new Ajv().compile(SCHEMA)(answer)).toBe(true);
    expect(simulatedAnswer(request, 7)).toEqual(answer);
  });
});
