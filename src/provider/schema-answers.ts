import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import type { JsonSchema } from './json-schema.ts';
import { valueForSchema } from './schema-value.ts';

/** A schema the server cannot answer: it does not compile, or no value made for it validates. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

/** Candidates tried per schema before giving up: the plain one, then seeded random ones. */
const ATTEMPTS = 48;

type AjvClass = new (options: object) => { compile(schema: object): ValidateFunction };

interface AjvClasses {
  /** Draft-07 (and the draft-06 schemas it reads). */
  readonly draft7: AjvClass;
  readonly draft2019: AjvClass;
  readonly draft2020: AjvClass;
}

/**
 * Answers JSON schemas with values that validate: each candidate from {@link valueForSchema} is
 * checked with ajv against the schema as sent, so what the server answers always fits. Compiled
 * validators are kept per schema text, the most recently used `maxSchemas` of them — a client
 * asks the same few schemas over and over.
 */
export class SchemaAnswers {
  readonly #ajv: AjvClasses;
  readonly #maxSchemas: number;
  readonly #validators = new Map<string, ValidateFunction>();

  private constructor(ajv: AjvClasses, maxSchemas: number) {
    this.#ajv = ajv;
    this.#maxSchemas = maxSchemas;
  }

  /**
   * Loads ajv (synchronously: it is CommonJS, and its ~40 ms are paid once) on first use — a run or a
   * server that never needs it never pays for it — so that checking a schema or an answer never
   * waits on anything.
   */
  static create(maxSchemas: number): SchemaAnswers {
    const load = createRequire(import.meta.url);
    const { Ajv } = load('ajv') as typeof import('ajv');
    const { Ajv2019 } = load('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js');
    const { Ajv2020 } = load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
    return new SchemaAnswers({ draft7: Ajv, draft2019: Ajv2019, draft2020: Ajv2020 }, maxSchemas);
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

  /** The compiled validator, from the cache or compiled now. */
  validator(schema: JsonSchema): ValidateFunction {
    const text = JSON.stringify(schema);
    let validate = this.#validators.get(text);
    if (validate !== undefined) {
      // Most recently used last: the first entry is the one to drop.
      this.#validators.delete(text);
      this.#validators.set(text, validate);
      return validate;
    }
    validate = this.#compile(schema);
    if (this.#validators.size >= this.#maxSchemas) this.#validators.delete(this.#validators.keys().next().value!);
    this.#validators.set(text, validate);
    return validate;
  }

  #compile(schema: JsonSchema): ValidateFunction {
    // The dialect comes from `$schema`; ajv is not told it (it knows none before draft-07 by URI).
    const { $schema, ...rest } = schema;
    const dialect = typeof $schema === 'string' ? $schema : '';
    const first = /draft-0[67]/.test(dialect) ? this.#ajv.draft7 : /2019-09/.test(dialect) ? this.#ajv.draft2019 : this.#ajv.draft2020;
    try {
      return this.#compileWith(first, rest);
    } catch (error) {
      // Without `$schema`, a tuple `items: [...]` is the older drafts' form.
      if (first !== this.#ajv.draft2020 || !Array.isArray(rest.items))
        throw new SchemaError(`the schema is invalid: ${(error as Error).message}`);
      try {
        return this.#compileWith(this.#ajv.draft7, rest);
      } catch (older) {
        throw new SchemaError(`the schema is invalid: ${(older as Error).message}`);
      }
    }
  }

  #compileWith(Ajv: AjvClass, schema: object): ValidateFunction {
    // An instance per schema: ajv keeps every schema it compiled, and a dropped validator must go with it.
    // Formats are made from a table of known shapes (the tests check them); unknown ones are not errors.
    return new Ajv({ strict: false, validateFormats: false, allErrors: false, logger: false }).compile(schema);
  }
}

/** Schemas the process keeps compiled for answers it reads or makes, most recently used. */
const SHARED_SCHEMAS = 256;
let shared: SchemaAnswers | undefined;
const byObject = new WeakMap<JsonSchema, ValidateFunction>();

/** The process's one {@link SchemaAnswers}, made (and ajv loaded) on first use. */
export function sharedSchemaAnswers(): SchemaAnswers {
  shared ??= SchemaAnswers.create(SHARED_SCHEMAS);
  return shared;
}

/**
 * The validator of `schema`, compiled once per schema object: a run asks each task's schema, the
 * same object, for every article. Throws `SchemaError` when it does not compile.
 */
export function validatorOf(schema: JsonSchema): ValidateFunction {
  let validate = byObject.get(schema);
  if (validate === undefined) {
    validate = sharedSchemaAnswers().validator(schema);
    byObject.set(schema, validate);
  }
  return validate;
}
