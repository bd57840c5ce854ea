/**
 * Constraints a schema states in words instead of keywords. Anthropic's structured outputs take
 * fewer keywords than JSON Schema has, so the SDKs move the others into the description, where the
 * model reads them and keeps to them: the Anthropic SDK (and LangChain's ChatAnthropic through it)
 * writes `{minimum: 0, maximum: 10}`, the AI SDK writes `minimum: 0; maximum: 10.` on a line of its
 * own. serve keeps to them too, so that the client's own validation (zod, on the full schema) passes
 * as it does against the real model.
 */

import type { JsonSchema } from '../provider/json-schema.ts';
import { isRecord } from '../vendors/serve/chat-api.ts';

/** The keywords taken back from descriptions: those that narrow a value (not `not`, not `$schema`). */
const KEYWORDS = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'enum',
  'const',
];

/** The AI SDK's names for them: the keyword with its capitals as spaced lower case (`max items`). */
const SPOKEN = new Map(KEYWORDS.map((keyword) => [keyword.replace(/[A-Z]/g, (capital) => ` ${capital.toLowerCase()}`), keyword]));
/** The AI SDK writes these as they are, not as JSON. */
const RAW = new Set(['pattern', 'format']);

const SUBSCHEMA_MAPS = ['properties', '$defs', 'definitions', 'patternProperties', 'dependentSchemas'];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMAS = ['items', 'additionalProperties', 'contains', 'not', 'if', 'then', 'else'];

/** `schema` with the constraints its descriptions state added as keywords (where the keyword is not there already); `schema` itself when none do. */
export function withDescribedConstraints(schema: JsonSchema): JsonSchema {
  const result = rewrite(schema);
  return result === undefined ? schema : (result as JsonSchema);
}

/** The subschema rewritten, or undefined when nothing in it changes. */
function rewrite(schema: unknown): Record<string, unknown> | undefined {
  if (!isRecord(schema)) return undefined;
  let changed: Record<string, unknown> | undefined;
  const set = (key: string, value: unknown) => {
    changed ??= { ...schema };
    changed[key] = value;
  };
  if (typeof schema.description === 'string') {
    for (const [keyword, value] of Object.entries(describedConstraints(schema.description))) {
      if (schema[keyword] === undefined) set(keyword, value);
    }
  }
  for (const key of SUBSCHEMA_MAPS) {
    const children = schema[key];
    if (!isRecord(children)) continue;
    let rewritten: Record<string, unknown> | undefined;
    for (const [name, child] of Object.entries(children)) {
      const next = rewrite(child);
      if (next === undefined) continue;
      rewritten ??= { ...children };
      rewritten[name] = next;
    }
    if (rewritten !== undefined) set(key, rewritten);
  }
  for (const key of SUBSCHEMA_LISTS) {
    const children = schema[key];
    if (!Array.isArray(children)) continue;
    const next = children.map((child) => rewrite(child));
    if (next.some((child) => child !== undefined))
      set(
        key,
        children.map((child, index) => next[index] ?? child),
      );
  }
  for (const key of SUBSCHEMAS) {
    const next = rewrite(schema[key]);
    if (next !== undefined) set(key, next);
  }
  return changed;
}

/** The constraints a description states, in either SDK's notation; none when it states none readably. */
export function describedConstraints(description: string): Record<string, unknown> {
  return { ...spokenConstraints(description), ...bracedConstraints(description) };
}

/** The Anthropic SDK's `{key: JSON, key: JSON}` at the end of the description. */
function bracedConstraints(description: string): Record<string, unknown> {
  const text = description.trimEnd();
  if (!text.endsWith('}')) return {};
  const start = matchingBrace(text);
  if (start === undefined) return {};
  const constraints: Record<string, unknown> = {};
  for (const member of topLevelMembers(text.slice(start + 1, -1))) {
    const match = /^\s*([A-Za-z$_][\w$]*)\s*:\s*([\s\S]*?)\s*$/.exec(member);
    if (match === null) return {};
    try {
      constraints[match[1]!] = JSON.parse(match[2]!);
    } catch {
      return {};
    }
  }
  return pickKeywords(constraints);
}

/** `a: 1, b: [1, 2], c: "x, y"` split at the commas that separate members (not inside brackets or strings). */
function topLevelMembers(body: string): string[] {
  const members: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let index = 0; index < body.length; index++) {
    const char = body[index];
    if (quoted) {
      if (char === '\\') index++;
      else if (char === '"') quoted = false;
    } else if (char === '"') quoted = true;
    else if (char === '[' || char === '{') depth++;
    else if (char === ']' || char === '}') depth--;
    else if (char === ',' && depth === 0) {
      members.push(body.slice(start, index));
      start = index + 1;
    }
  }
  members.push(body.slice(start));
  return members;
}

/** Where the `{` that the final `}` closes is, outside JSON strings. */
function matchingBrace(text: string): number | undefined {
  let depth = 0;
  let quoted = false;
  for (let index = text.length - 1; index >= 0; index--) {
    const char = text[index];
    if (char === '"' && text[index - 1] !== '\\') quoted = !quoted;
    if (quoted) continue;
    if (char === '}') depth++;
    else if (char === '{' && --depth === 0) return index;
  }
  return undefined;
}

/** The AI SDK's `min items: 1; max items: 3.` as the description's last line. */
function spokenConstraints(description: string): Record<string, unknown> {
  const line = description.split('\n').at(-1)!.trim();
  if (!line.endsWith('.')) return {};
  const names = [...SPOKEN.keys()].join('|');
  const parts = line.slice(0, -1).split(new RegExp(`; (?=(?:${names}): )`));
  const constraints: Record<string, unknown> = {};
  for (const part of parts) {
    const match = new RegExp(`^(${names}): (.*)$`).exec(part);
    if (match === null) return {};
    const keyword = SPOKEN.get(match[1]!)!;
    if (RAW.has(keyword)) constraints[keyword] = match[2];
    else {
      try {
        constraints[keyword] = JSON.parse(match[2]!);
      } catch {
        return {};
      }
    }
  }
  return constraints;
}

function pickKeywords(parsed: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(parsed).filter(([key]) => KEYWORDS.includes(key)));
}
