import type { JsonSchema } from '../provider/json-schema.ts';
import { sharedSchemaAnswers } from '../simulator/schema-answers.ts';

/** What {@link fittingValue} takes besides the schema. */
export interface FittingValueOptions {
  /** The words its strings are made of. @default a few neutral words */
  readonly words?: readonly string[];
  /**
   * Which of the schema's values: 0 is the plainest, any other integer a value seeded from it (the
   * same variant, the same value), as the simulated provider varies its answers per request.
   * @default 0
   */
  readonly variant?: number;
}

const WORDS = ['market', 'report', 'growth', 'council', 'weather'];

/**
 * A value that fits `schema`, made as the simulated provider makes its answers to a task of the
 * user's (enum members, numbers within their bounds, lists of allowed lengths, strings matching
 * their patterns) and checked against the schema with ajv: a fixture for a test of code that reads
 * a task's output. Throws an error saying so when no value can be made to fit (a contradictory schema).
 */
export function fittingValue(schema: JsonSchema, options: FittingValueOptions = {}): unknown {
  const answers = sharedSchemaAnswers();
  return answers.valueFor(schema, options.words ?? WORDS, answers.validator(schema), options.variant ?? 0);
}
