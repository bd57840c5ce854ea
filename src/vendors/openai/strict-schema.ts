/**
 * OpenAI's strict-mode rules for JSON schemas (`strict: true` on a `json_schema` response format or
 * a function tool), checked as OpenAI checks them, so code that passes against `serve` does not fail
 * against the real API: the root is an object (not a union); every object sets
 * `additionalProperties: false` and lists every property in `required`; only the supported
 * keywords appear. The keywords refused are the ones the official SDK's own strict transform
 * refuses (openai-node's `lib/transform`), and `oneOf` (strict mode takes `anyOf` only).
 */

import type { JsonSchema } from '../../provider/json-schema.ts';
import { isRecord } from '../../provider/json-schema.ts';

const UNSUPPORTED_KEYWORDS = [
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$recursiveAnchor',
  '$recursiveRef',
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'minContains',
  'maxContains',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'minProperties',
  'maxProperties',
  'patternProperties',
  'propertyNames',
  'prefixItems',
  'unevaluatedItems',
  'unevaluatedProperties',
  'uniqueItems',
];

/** A place in the schema as OpenAI's messages write it: a Python tuple, `()` at the root. */
type Context = readonly (string | number)[];

/**
 * What OpenAI would say is wrong with `schema` in strict mode — its message after "Invalid schema
 * for …: " — or undefined when strict mode takes it.
 */
export function strictSchemaProblem(schema: JsonSchema): string | undefined {
  const type = schema.type;
  if (type !== 'object' || schema.anyOf !== undefined) {
    const named = schema.anyOf !== undefined && type === undefined ? 'None' : String(type ?? 'None');
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${named}"'.`;
  }
  return problemAt(schema, []);
}

function problemAt(schema: unknown, context: Context): string | undefined {
  if (!isRecord(schema)) return undefined;
  for (const keyword of UNSUPPORTED_KEYWORDS) {
    if (schema[keyword] !== undefined) return `In context=${tuple(context)}, '${keyword}' is not permitted.`;
  }
  const type = schema.type;
  const isObject = type === 'object' || (Array.isArray(type) && type.includes('object')) || schema.properties !== undefined;
  if (isObject) {
    if (schema.additionalProperties !== false) {
      return `In context=${tuple(context)}, 'additionalProperties' is required to be supplied and to be false.`;
    }
    const required = Array.isArray(schema.required) ? schema.required : [];
    const missing = Object.keys(isRecord(schema.properties) ? schema.properties : {}).find((key) => !required.includes(key));
    if (missing !== undefined) {
      return `In context=${tuple(context)}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    }
  }
  for (const [keyword, children] of [
    ['properties', schema.properties],
    ['$defs', schema.$defs],
    ['definitions', schema.definitions],
  ] as const) {
    if (!isRecord(children)) continue;
    for (const [name, child] of Object.entries(children)) {
      const problem = problemAt(child, [...context, keyword, name]);
      if (problem !== undefined) return problem;
    }
  }
  if (isRecord(schema.items)) {
    const problem = problemAt(schema.items, [...context, 'items']);
    if (problem !== undefined) return problem;
  }
  if (Array.isArray(schema.anyOf)) {
    for (const [index, child] of schema.anyOf.entries()) {
      const problem = problemAt(child, [...context, 'anyOf', index]);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

/** A Python tuple's repr: `()`, `('items',)`, `('properties', 'x')`, `('anyOf', 0)`. */
function tuple(context: Context): string {
  const members = context.map((part) => (typeof part === 'number' ? String(part) : pythonString(part)));
  return members.length === 1 ? `(${members[0]},)` : `(${members.join(', ')})`;
}

function pythonString(text: string): string {
  return text.includes("'") && !text.includes('"') ? `"${text}"` : `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/**
 * Why OpenAI would refuse `schema` as a task's (every task is sent in strict mode), in OpenAI's
 * words: what a run says before its first call rather than meeting a 400 on every one.
 */
export function openAiSchemaProblem(schema: JsonSchema): string | undefined {
  const problem = strictSchemaProblem(schema);
  return problem === undefined ? undefined : `OpenAI's strict mode refuses its schema: ${problem}`;
}
