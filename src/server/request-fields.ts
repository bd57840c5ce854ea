/**
 * Every field a request may carry, and what the server does with it: read it (the API's parse
 * acts on it), accept it checked (a sampling knob: a simulation has nothing to sample, so any valid
 * value gives the same answer), or refuse it with the reason. A field that is not listed is
 * refused too: no request parameter is ever ignored without a word.
 */

import { InvalidRequestError, isRecord, jsonType } from './chat-api.ts';

export type FieldRule =
  | { readonly kind: 'read' }
  | { readonly kind: 'number'; readonly min?: number; readonly max?: number; readonly integer?: boolean }
  | { readonly kind: 'string' | 'boolean' | 'object' | 'array' }
  | { readonly kind: 'one-of'; readonly values: readonly unknown[] }
  /** Refused unless it has one of these values (the ones that ask for nothing serve does not do). */
  | { readonly kind: 'refused'; readonly why: string; readonly unless?: readonly unknown[] };

/** The fields of a request, by name. */
export type FieldRules = Readonly<Record<string, FieldRule>>;

export const read: FieldRule = { kind: 'read' };
export const aString: FieldRule = { kind: 'string' };
export const aBoolean: FieldRule = { kind: 'boolean' };
export const anObject: FieldRule = { kind: 'object' };
export const anArray: FieldRule = { kind: 'array' };
export const aNumber = (min?: number, max?: number): FieldRule => ({ kind: 'number', min, max });
export const anInteger = (min?: number, max?: number): FieldRule => ({ kind: 'number', min, max, integer: true });
export const oneOf = (...values: unknown[]): FieldRule => ({ kind: 'one-of', values });
export const refused = (why: string, unless?: readonly unknown[]): FieldRule => ({ kind: 'refused', why, unless });

/** How an API words each problem with a field: each returns the 400's error. */
export interface FieldWords {
  unknown(field: string): InvalidRequestError;
  wrongType(field: string, expected: string, value: unknown): InvalidRequestError;
  outOfRange(field: string, bound: 'min' | 'max', limit: number, value: number): InvalidRequestError;
  notOneOf(field: string, values: readonly unknown[], value: unknown): InvalidRequestError;
  refused(field: string, why: string): InvalidRequestError;
}

/** Throws the API's 400 for the first field of `body` its rules do not take; `null` counts as absent, as the vendors read it. */
export function checkFields(body: Record<string, unknown>, rules: FieldRules, words: FieldWords): void {
  for (const [field, value] of Object.entries(body)) {
    const rule = Object.hasOwn(rules, field) ? rules[field]! : undefined;
    if (rule === undefined) throw words.unknown(field);
    if (value === null || value === undefined || rule.kind === 'read') continue;
    checkField(field, value, rule, words);
  }
}

function checkField(field: string, value: unknown, rule: Exclude<FieldRule, { kind: 'read' }>, words: FieldWords): void {
  switch (rule.kind) {
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value) || (rule.integer === true && !Number.isInteger(value))) {
        throw words.wrongType(field, rule.integer === true ? 'integer' : 'number', value);
      }
      if (rule.min !== undefined && value < rule.min) throw words.outOfRange(field, 'min', rule.min, value);
      if (rule.max !== undefined && value > rule.max) throw words.outOfRange(field, 'max', rule.max, value);
      return;
    }
    case 'string':
    case 'boolean':
      if (typeof value !== rule.kind) throw words.wrongType(field, rule.kind, value);
      return;
    case 'object':
      if (!isRecord(value)) throw words.wrongType(field, 'object', value);
      return;
    case 'array':
      if (!Array.isArray(value)) throw words.wrongType(field, 'array', value);
      return;
    case 'one-of':
      if (!rule.values.includes(value)) throw words.notOneOf(field, rule.values, value);
      return;
    case 'refused':
      if (rule.unless?.some((allowed) => JSON.stringify(allowed) === JSON.stringify(value))) return;
      throw words.refused(field, rule.why);
  }
}

/** OpenAI's wording, shared by its Chat Completions and Responses APIs. */
export const OPENAI_FIELD_WORDS: FieldWords = {
  unknown: (field) => new InvalidRequestError(`Unrecognized request argument supplied: ${field}`, field, 'unknown_parameter'),
  wrongType: (field, expected, value) =>
    new InvalidRequestError(
      `Invalid type for '${field}': expected ${openAiTypeName(expected)}, but got ${openAiTypeName(jsonType(value))} instead.`,
      field,
      'invalid_type',
    ),
  outOfRange: (field, bound, limit, value) =>
    new InvalidRequestError(
      `Invalid '${field}': ${Number.isInteger(limit) ? 'integer' : 'decimal'} ${bound === 'min' ? 'below minimum' : 'above maximum'} value. Expected a value ${bound === 'min' ? '>=' : '<='} ${limit}, but got ${value} instead.`,
      field,
      bound === 'min' ? 'integer_below_min_value' : 'integer_above_max_value',
    ),
  notOneOf: (field, values, value) =>
    new InvalidRequestError(
      `Invalid value: ${JSON.stringify(value)}. Supported values are: ${values.map((v) => `'${String(v)}'`).join(', ')}.`,
      field,
      'invalid_value',
    ),
  refused: (field, why) => new InvalidRequestError(`Unsupported parameter: '${field}' ${why}`, field, 'unsupported_parameter'),
};

function openAiTypeName(type: string): string {
  switch (type) {
    case 'number':
      return 'a decimal';
    case 'integer':
      return 'an integer';
    case 'object':
      return 'an object';
    case 'array':
      return 'an array';
    case 'null':
      return 'null';
    default:
      return `a ${type}`;
  }
}

/** Anthropic's (pydantic's) wording. */
export const ANTHROPIC_FIELD_WORDS: FieldWords = {
  unknown: (field) => new InvalidRequestError(`${field}: Extra inputs are not permitted`, field),
  wrongType: (field, expected, _value) => {
    const what = { number: 'a valid number', integer: 'a valid integer', object: 'a valid dictionary', array: 'a valid list' }[expected];
    return new InvalidRequestError(`${field}: Input should be ${what ?? `a valid ${expected}`}`, field);
  },
  outOfRange: (field, bound, limit) =>
    new InvalidRequestError(`${field}: Input should be ${bound === 'min' ? 'greater' : 'less'} than or equal to ${limit}`, field),
  notOneOf: (field, values) =>
    new InvalidRequestError(`${field}: Input should be ${values.map((v) => `'${String(v)}'`).join(' or ')}`, field),
  refused: (field, why) => new InvalidRequestError(`${field}: ${why}`, field),
};
