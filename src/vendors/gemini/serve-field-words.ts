import { InvalidRequestError } from '../serve/chat-api.ts';
import type { FieldWords } from '../serve/request-fields.ts';

/** Google's wording (the JSON-to-proto parser's, then the API's own). */
export const GEMINI_FIELD_WORDS: FieldWords = {
  unknown: (field) => new InvalidRequestError(`Invalid JSON payload received. Unknown name "${field}": Cannot find field.`, field),
  wrongType: (field, expected, value) =>
    new InvalidRequestError(`Invalid value at '${field}' (${expected}), ${JSON.stringify(value) ?? String(value)}`, field),
  outOfRange: (field, bound, limit, value) =>
    new InvalidRequestError(
      `* GenerateContentRequest.${field}: ${value} is ${bound === 'min' ? 'below' : 'above'} the ${bound === 'min' ? 'least' : 'most'} value, ${limit}`,
      field,
    ),
  notOneOf: (field, values, value) =>
    new InvalidRequestError(
      `Invalid value at '${field}', ${JSON.stringify(value)}: expected one of ${values.map((v) => JSON.stringify(v)).join(', ')}`,
      field,
    ),
  refused: (field, why) => new InvalidRequestError(`* GenerateContentRequest.${field}: ${why}`, field),
};
