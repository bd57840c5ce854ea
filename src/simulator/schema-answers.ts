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
   */
  valueFor(schema: JsonSchema, words: readonly string[], validate: ValidateFunction = this.validator(schema)): unknown {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
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
