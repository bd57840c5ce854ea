import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { BUILTIN_VALIDATORS_PATH, builtinValidatorsSource } from '../../scripts/builtin-validators.ts';
import { BUILTIN_VALIDATORS } from '../../src/provider/builtin-validators.ts';
import { AJV_OPTIONS, SchemaValidators } from '../../src/provider/schema-validators.ts';
import { loadBuiltinTasks } from '../../src/tasks/tasks-file.ts';

describe('BUILTIN_VALIDATORS', () => {
  it('is what `npm run validators` writes for the built-in tasks as they are now: run it after changing their schemas', () => {
    expect(readFileSync(BUILTIN_VALIDATORS_PATH, 'utf8')).toBe(builtinValidatorsSource());
  });

  it('holds a validator for each built-in task, which SchemaValidators hands out instead of compiling', () => {
    const answers = new SchemaValidators(8);
    const { tasks } = loadBuiltinTasks();
    expect(BUILTIN_VALIDATORS.size).toBe(tasks.length);
    for (const task of tasks) expect(answers.validator(task.schema)).toBe(BUILTIN_VALIDATORS.get(JSON.stringify(task.schema)));
  });

  it('judges answers as ajv compiling the schema at run time does, with the same first error', () => {
    const [summarize, sentiment] = loadBuiltinTasks().tasks.map((task) => task.schema);
    const cases: [Record<string, unknown>, unknown][] = [
      [summarize!, { summary: 'A storm hit.', keywords: ['storm'] }],
      [summarize!, { summary: '   ', keywords: [] }],
      [summarize!, { summary: 'x', keywords: [1] }],
      [summarize!, { summary: 'x' }],
      [summarize!, { summary: 'x', keywords: [], extra: true }],
      [sentiment!, { sentiment: 'neutral', score: 0 }],
      [sentiment!, { sentiment: 'happy', score: 0 }],
      [sentiment!, { sentiment: 'positive', score: 1.5 }],
      [sentiment!, { sentiment: 'negative', score: Number.NaN }],
      [sentiment!, []],
    ];
    for (const [schema, value] of cases) {
      const ahead = BUILTIN_VALIDATORS.get(JSON.stringify(schema))!;
      const now = new Ajv2020({ ...AJV_OPTIONS }).compile(schema);
      expect(ahead(value), JSON.stringify(value)).toBe(now(value));
      expect(ahead.errors ?? null).toEqual(now.errors ?? null);
    }
  });
});
