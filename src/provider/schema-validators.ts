import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import { BUILTIN_VALIDATORS } from './builtin-validators.ts';
import type { JsonSchema } from './json-schema.ts';

/** A schema that cannot be answered: it does not compile, or (the simulator) no value made for it validates. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

type AjvClass = new (options: object) => { compile(schema: object): ValidateFunction };

interface AjvClasses {
  /** Draft-07 (and the draft-06 schemas it reads). */
  readonly draft7: AjvClass;
  readonly draft2019: AjvClass;
  readonly draft2020: AjvClass;
}

/** What every schema is compiled with, at run time and ahead of time (`npm run validators`) alike. */
export const AJV_OPTIONS = Object.freeze({ strict: false, validateFormats: false, allErrors: false, logger: false });

let ajvClasses: AjvClasses | undefined;

/**
 * Loads ajv (synchronously: it is CommonJS, and its ~40 ms are paid once) the first time a schema
 * that was not compiled ahead is compiled: a run of the built-in tasks never pays for it.
 */
function loadAjv(): AjvClasses {
  if (ajvClasses === undefined) {
    const load = createRequire(import.meta.url);
    const { Ajv } = load('ajv') as typeof import('ajv');
    const { Ajv2019 } = load('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js');
    const { Ajv2020 } = load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
    ajvClasses = { draft7: Ajv, draft2019: Ajv2019, draft2020: Ajv2020 };
  }
  return ajvClasses;
}

/**
 * Compiled validators of JSON schemas (draft-07, 2019-09 and 2020-12, by `$schema`), kept per
 * schema text, the most recently used `maxSchemas` of them — a run or a server asks the same few
 * schemas over and over. The built-in tasks' validators were compiled ahead (`npm run
 * validators`): a run of them never loads ajv.
 */
export class SchemaValidators {
  readonly #maxSchemas: number;
  readonly #validators = new Map<string, ValidateFunction>();

  /** Loads ajv when a schema not compiled ahead first needs it. */
  constructor(maxSchemas: number) {
    this.#maxSchemas = maxSchemas;
  }

  /** Loads ajv now, so that checking a schema or an answer never waits on it (a server, before it listens). */
  static create(maxSchemas: number): SchemaValidators {
    loadAjv();
    return new SchemaValidators(maxSchemas);
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
    validate = BUILTIN_VALIDATORS.get(text) ?? this.#compile(schema);
    if (this.#validators.size >= this.#maxSchemas) this.#validators.delete(this.#validators.keys().next().value!);
    this.#validators.set(text, validate);
    return validate;
  }

  #compile(schema: JsonSchema): ValidateFunction {
    // The dialect comes from `$schema`; ajv is not told it (it knows none before draft-07 by URI).
    const { $schema, ...rest } = schema;
    const dialect = typeof $schema === 'string' ? $schema : '';
    const ajv = loadAjv();
    const first = /draft-0[67]/.test(dialect) ? ajv.draft7 : /2019-09/.test(dialect) ? ajv.draft2019 : ajv.draft2020;
    try {
      return this.#compileWith(first, rest);
    } catch (error) {
      // Without `$schema`, a tuple `items: [...]` is the older drafts' form.
      if (first !== ajv.draft2020 || !Array.isArray(rest.items))
        throw new SchemaError(`the schema is invalid: ${(error as Error).message}`);
      try {
        return this.#compileWith(ajv.draft7, rest);
      } catch (older) {
        throw new SchemaError(`the schema is invalid: ${(older as Error).message}`);
      }
    }
  }

  #compileWith(Ajv: AjvClass, schema: object): ValidateFunction {
    // An instance per schema: ajv keeps every schema it compiled, and a dropped validator must go with it.
    // Formats are made from a table of known shapes (the tests check them); unknown ones are not errors.
    return new Ajv({ ...AJV_OPTIONS }).compile(schema);
  }
}

/** Schemas the process keeps compiled for answers it reads or makes, most recently used. */
const SHARED_SCHEMAS = 256;
let shared: SchemaValidators | undefined;
const byObject = new WeakMap<JsonSchema, ValidateFunction>();

/** The process's one {@link SchemaValidators}, made on first use. */
export function sharedValidators(): SchemaValidators {
  shared ??= new SchemaValidators(SHARED_SCHEMAS);
  return shared;
}

/**
 * The validator of `schema`, compiled once per schema object: a run asks each task's schema, the
 * same object, for every article. Throws `SchemaError` when it does not compile.
 */
export function validatorOf(schema: JsonSchema): ValidateFunction {
  let validate = byObject.get(schema);
  if (validate === undefined) {
    validate = sharedValidators().validator(schema);
    byObject.set(schema, validate);
  }
  return validate;
}
