import { InvalidRequestError, jsonType } from '../serve/chat-api.ts';
import type { FieldWords } from '../serve/request-fields.ts';

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
