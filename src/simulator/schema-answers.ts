import type { ValidateFunction } from 'ajv';
import type { JsonSchema } from '../provider/json-schema.ts';
import { SchemaError, SchemaValidators, sharedValidators } from '../provider/schema-validators.ts';
import { valueForSchema } from './schema-value.ts';

/** Candidates tried per schema before giving up: the plain one, then seeded random ones. */
const ATTEMPTS = 48;

/**
 * Answers JSON schemas with values that validate: each candidate from {@link valueForSchema} is
 * checked with ajv against the schema as sent, so what the simulator answers always fits.
 */
export class SchemaAnswers {
  readonly #validators: SchemaValidators;

  private constructor(validators: SchemaValidators) {
    this.#validators = validators;
  }

  /** Answers keeping their own `maxSchemas` validators compiled (a server's, apart from the process's). */
  static create(maxSchemas: number): SchemaAnswers {
    return new SchemaAnswers(SchemaValidators.create(maxSchemas));
  }

  /** Answers checked by `validators`. */
  static over(validators: SchemaValidators): SchemaAnswers {
    return new SchemaAnswers(validators);
  }

  /**
   * A value that validates against `schema`, strings made of `words`. Throws {@link SchemaError}.
   * `validate` saves a second cache lookup when the caller has the schema's validator already.
   * `variant` 0 tries the plainest value first; any other integer tries values seeded from it first
   * (the same variant, the same value) and the plainest last, so that answers seeded per request
   * vary as the requests do and fit wherever the plain one would.
   */
  valueFor(schema: JsonSchema, words: readonly string[], validate: ValidateFunction = this.validator(schema), variant = 0): unknown {
    for (let tried = 0; tried < ATTEMPTS; tried++) {
      // Attempt 0 is the plain one: first for variant 0, last otherwise (and never twice: a seeded
      // attempt that would come to 0 takes ATTEMPTS, which variant 0 never reaches).
      const attempt = variant === 0 ? tried : tried === ATTEMPTS - 1 ? 0 : variant + tried || ATTEMPTS;
      const value = valueForSchema(schema, { words, attempt });
      if (value !== undefined && validate(value)) return value;
    }
    throw new SchemaError(`no value was found that fits the schema (${ATTEMPTS} tried)`);
  }

  /** The compiled validator, from the cache or compiled now (see {@link SchemaValidators.validator}). */
  validator(schema: JsonSchema): ValidateFunction {
    return this.#validators.validator(schema);
  }
}

let shared: SchemaAnswers | undefined;

/** The process's answers, over its shared validators (ajv loaded on first use). */
export function sharedSchemaAnswers(): SchemaAnswers {
  shared ??= SchemaAnswers.over(sharedValidators());
  return shared;
}
