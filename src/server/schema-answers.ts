import type { ValidateFunction } from 'ajv';
import type { JsonSchema } from '../provider/tasks/task.ts';
import { withDescribedConstraints } from './described-constraints.ts';
import { valueForSchema } from './schema-value.ts';

/** The first candidate that `fits`, or undefined after {@link ATTEMPTS}. */
function search(schema: JsonSchema, words: readonly string[], fits: (value: unknown) => boolean): unknown {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const value = valueForSchema(schema, { words, attempt });
    if (value !== undefined && fits(value)) return value;
  }
  return undefined;
}

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

  /** Loads ajv on first use: a server that is never started never pays for it. */
  static async create(maxSchemas: number): Promise<SchemaAnswers> {
    const [{ Ajv }, { Ajv2019 }, { Ajv2020 }] = await Promise.all([import('ajv'), import('ajv/dist/2019.js'), import('ajv/dist/2020.js')]);
    return new SchemaAnswers({ draft7: Ajv, draft2019: Ajv2019, draft2020: Ajv2020 }, maxSchemas);
  }

  /**
   * A value that validates against `schema`, strings made of `words`. Throws {@link SchemaError}.
   * `validate` saves a second cache lookup when the caller has the schema's validator already.
   */
  valueFor(schema: JsonSchema, words: readonly string[], validate: ValidateFunction = this.validator(schema)): unknown {
    // Constraints the schema states in words are kept to when they can be; the schema as sent always is.
    const described = withDescribedConstraints(schema);
    if (described !== schema) {
      let narrower: ValidateFunction | undefined;
      try {
        narrower = this.validator(described);
      } catch {
        // Words that make no schema are words only.
      }
      const value =
        narrower === undefined ? undefined : search(described, words, (candidate) => narrower(candidate) && validate(candidate));
      if (value !== undefined) return value;
    }
    const value = search(schema, words, validate);
    if (value === undefined) throw new SchemaError(`no value was found that fits the schema (${ATTEMPTS} tried)`);
    return value;
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
