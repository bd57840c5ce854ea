/**
 * Every field a request may carry, and what the server does with it: read it (the API's parse
 * acts on it), accept it checked (a sampling knob: a simulation has nothing to sample, so any valid
 * value gives the same answer), or refuse it with the reason. A field that is not listed is
 * refused too: no request parameter is ever ignored without a word.
 */

import { type InvalidRequestError, isRecord } from './chat-api.ts';

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
