import { InvalidRequestError } from '../serve/chat-api.ts';
import type { FieldWords } from '../serve/request-fields.ts';

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
