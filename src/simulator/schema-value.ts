/**
 * A value made to fit a JSON Schema — what a model with strict structured output would answer —
 * from the schema alone: objects (properties, required, additionalProperties, min/maxProperties,
 * dependentRequired), strings (enum, const, min/maxLength, common formats, patterns), numbers and
 * integers (bounds, exclusive bounds, multipleOf), booleans, null, arrays (items, prefixItems, the
 * older tuple `items`, min/maxItems, uniqueItems, contains), anyOf / oneOf / allOf / if-then-else,
 * `$ref` into `$defs` or `definitions`, and type lists such as `["string", "null"]`.
 *
 * The value is a candidate: keywords that only a validator can settle (`not`, overlapping `oneOf`
 * branches, a pattern with lookarounds) may defeat it. Attempt 0 makes the plainest choices (first
 * branch, first enum member, a few items, the number nearest 0); other attempts make seeded random
 * ones — any member, any branch, a length anywhere from the least allowed to a few past it, a number
 * anywhere within the bounds, a run of the words from anywhere in the list — so a caller that
 * validates can try again and get something else, and one that seeds per request gets answers
 * that differ as requests do.
 */

import { createRandom } from './random.ts';
import { isRecord, type JsonSchema } from '../provider/json-schema.ts';
import { sampleRegex, type Choose } from './regex-sample.ts';

/** A schema as it may appear anywhere in a JSON Schema: an object, or `true` / `false`. */
export type SchemaNode = JsonSchema | boolean;

export interface SchemaValueOptions {
  /** Words strings are made of, in order of preference (an empty list counts as none). @default a few neutral words (alpha, bravo, …) */
  readonly words?: readonly string[];
  /** 0 for the plainest choices; any other integer seeds random ones (the same integer, the same value). @default 0 */
  readonly attempt?: number;
}

const DEFAULT_WORDS: readonly string[] = Object.freeze(['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot']);

/** Items in an array that asks for none in particular: enough to look like a list. */
const PLAIN_ITEMS = 3;
/** Words in a string that asks for no length in particular. */
const PLAIN_WORDS = 3;
/** Past this nesting, only what is required is made (recursive schemas end here). */
const MINIMAL_DEPTH = 6;
/** Past this many values made, the same: a schema of nested arrays must not grow without bound. */
const VALUE_BUDGET = 2_000;
/** Never nest deeper than this, whatever the schema requires: the candidate then fails validation. */
const MAX_DEPTH = 64;
/** `$ref`, `allOf`, `anyOf`… resolved per node at most this many times (a `$ref` loop ends here). */
const MAX_RESOLUTIONS = 64;

/** A candidate value for `schema`; `undefined` when the schema admits nothing (`false`) or was beyond reach. */
export function valueForSchema(schema: SchemaNode, options: SchemaValueOptions = {}): unknown {
  const { words = DEFAULT_WORDS, attempt = 0 } = options;
  return new Maker(schema, words.length > 0 ? words : DEFAULT_WORDS, attempt).make(schema, 0, 0);
}

type Schema = Record<string, unknown>;
type TypeName = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

const TYPE_NAMES: readonly TypeName[] = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'];

class Maker {
  readonly #root: SchemaNode;
  readonly #words: readonly string[];
  readonly #random: (() => number) | undefined;
  #made = 0;

  constructor(root: SchemaNode, words: readonly string[], attempt: number) {
    this.#root = root;
    this.#words = words;
    this.#random = attempt === 0 ? undefined : createRandom(attempt);
  }

  /** An index in [0, count): 0 on the plain attempt, random otherwise. */
  readonly choose: Choose = (count) => (this.#random === undefined || count <= 1 ? 0 : Math.floor(this.#random() * count));

  #coin(): boolean {
    return this.#random !== undefined && this.#random() < 0.5;
  }

  #minimal(depth: number): boolean {
    return depth >= MINIMAL_DEPTH || this.#made >= VALUE_BUDGET;
  }

  /**
   * `salt` tells the items of an array apart (numbers, members, strings all differ); `shift` tells
   * a value's strings from its siblings' in an object, so two text properties get different words.
   */
  make(node: SchemaNode, depth: number, salt: number, shift = 0): unknown {
    if (depth > MAX_DEPTH) return undefined;
    this.#made++;
    const schema = this.#resolve(node, depth);
    if (schema === undefined) return undefined;
    if ('const' in schema) return structuredClone(schema.const);
    if (Array.isArray(schema.enum)) {
      if (schema.enum.length === 0) return undefined;
      return structuredClone(schema.enum[(salt + this.choose(schema.enum.length)) % schema.enum.length]);
    }
    const type = this.#typeOf(schema, depth);
    switch (type) {
      case 'object':
        return this.#object(schema, depth, salt, shift);
      case 'array':
        return this.#array(schema, depth, salt, shift);
      case 'string':
        return this.#string(schema, salt + shift);
      case 'integer':
      case 'number': {
        const number = numberFor(schema, type === 'integer', salt, this.#random);
        // JSON has no -0: the value is what goes over the wire.
        return number === 0 ? 0 : number;
      }
      case 'boolean':
        return (salt + this.choose(2)) % 2 === 0;
      case 'null':
        return null;
      default:
        return undefined;
    }
  }

  /**
   * The node with `$ref`, `allOf`, `anyOf`, `oneOf` and `if` folded into one plain schema: a
   * reference by its target (siblings kept), branches by the chosen one merged with the rest,
   * `allOf` by merging its parts. Undefined when the node admits nothing.
   */
  #resolve(node: SchemaNode, depth: number): Schema | undefined {
    if (node === false) return undefined;
    if (node === true || node === null || typeof node !== 'object') return {};
    let schema: Schema | undefined = { ...node };
    for (let step = 0; step < MAX_RESOLUTIONS && schema !== undefined; step++) {
      const { $ref, anyOf, oneOf, allOf, if: condition, then, else: otherwise, ...rest } = schema;
      if (typeof $ref === 'string') {
        schema = merge(this.#target($ref), withKeys(rest, { anyOf, oneOf, allOf, if: condition, then, else: otherwise }));
      } else if (Array.isArray(anyOf) || Array.isArray(oneOf)) {
        const branches = (Array.isArray(anyOf) ? anyOf : oneOf) as SchemaNode[];
        const left = withKeys(rest, {
          allOf,
          if: condition,
          then,
          else: otherwise,
          [Array.isArray(anyOf) ? 'oneOf' : 'anyOf']: Array.isArray(anyOf) ? oneOf : anyOf,
        });
        schema = merge(left, this.#branch(branches, depth));
      } else if (Array.isArray(allOf)) {
        schema = (allOf as SchemaNode[]).reduce<Schema | undefined>(
          (merged, part) => (merged === undefined ? undefined : merge(merged, part)),
          withKeys(rest, { if: condition, then, else: otherwise }),
        );
      } else if (condition !== undefined) {
        // `then` with a value that meets the condition; on other attempts, sometimes `else`.
        const useElse = otherwise !== undefined && this.#coin();
        schema = useElse ? merge(rest, otherwise as SchemaNode) : merge(merge(rest, condition as SchemaNode), (then ?? true) as SchemaNode);
      } else {
        return schema;
      }
    }
    return schema;
  }

  /** A branch of anyOf / oneOf: the first (or a random one); deep down, one that does not recurse if there is one. */
  #branch(branches: readonly SchemaNode[], depth: number): SchemaNode {
    if (branches.length === 0) return false;
    if (this.#minimal(depth)) {
      const flat = branches.find((branch) => typeof branch === 'boolean' || !/"\$ref"|"(object|array)"/.test(JSON.stringify(branch)));
      if (flat !== undefined) return flat;
    }
    return branches[this.choose(branches.length)]!;
  }

  /** What a local `$ref` (`#`, `#/$defs/name`, `#/definitions/name`, any JSON pointer) points to; `{}` when unknown. */
  #target(ref: string): SchemaNode {
    if (!ref.startsWith('#')) return true;
    let target: unknown = this.#root;
    const pointer = decodeURIComponent(ref.slice(1));
    if (pointer === '') return this.#root;
    for (const token of pointer.split('/').slice(1)) {
      const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
      if (target === null || typeof target !== 'object' || !Object.hasOwn(target, key)) return true;
      target = (target as Record<string, unknown>)[key];
    }
    return typeof target === 'boolean' || (target !== null && typeof target === 'object') ? (target as SchemaNode) : true;
  }

  #typeOf(schema: Schema, depth: number): TypeName | undefined {
    const declared = schema.type;
    let types: TypeName[];
    if (typeof declared === 'string') types = [declared as TypeName];
    else if (Array.isArray(declared)) types = declared.filter((type): type is TypeName => TYPE_NAMES.includes(type as TypeName));
    else types = inferTypes(schema);
    if (types.length === 0) return undefined;
    // Deep down, null ends a recursion where allowed; elsewhere it says least, so it comes last.
    if (types.includes('null') && (this.#minimal(depth) || types.length === 1)) return 'null';
    const informative = types.filter((type) => type !== 'null');
    return this.#random !== undefined && this.#random() < 0.2 && types.includes('null')
      ? 'null'
      : informative[this.choose(informative.length)];
  }

  #object(schema: Schema, depth: number, salt: number, shift: number): Record<string, unknown> {
    const properties = isRecord(schema.properties) ? (schema.properties as Record<string, SchemaNode>) : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((key) => typeof key === 'string') : []);
    const maxProperties = typeof schema.maxProperties === 'number' ? schema.maxProperties : Infinity;
    const minProperties = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
    const dependent = dependentRequired(schema);
    const keys = new Set<string>(required);
    if (!this.#minimal(depth)) {
      for (const key of Object.keys(properties)) {
        if (keys.size >= maxProperties) break;
        if (!keys.has(key) && (this.#random === undefined || this.#coin())) keys.add(key);
      }
    }
    for (const key of [...keys]) for (const also of dependent.get(key) ?? []) keys.add(also);
    // minProperties: listed properties first, then names of our own where the schema admits them.
    for (const key of Object.keys(properties)) if (keys.size < minProperties) keys.add(key);
    const extraName = this.#extraName(schema);
    for (let n = 1; keys.size < minProperties && extraName !== undefined && n <= minProperties * 2; n++) keys.add(extraName(n));

    const value: Record<string, unknown> = {};
    // Properties in the schema's order, then the rest: what a model writes.
    const ordered = [
      ...Object.keys(properties).filter((key) => keys.has(key)),
      ...[...keys].filter((key) => !Object.hasOwn(properties, key)),
    ];
    ordered.forEach((key, index) => {
      const node = Object.hasOwn(properties, key) ? properties[key]! : this.#extraSchema(schema, key);
      const made = this.make(node, depth + 1, salt, shift + index);
      if (made !== undefined) value[key] = made;
    });
    return value;
  }

  /** Names for properties the schema does not list: matching a patternProperties key, or any when additionalProperties allows. */
  #extraName(schema: Schema): ((n: number) => string) | undefined {
    if (isRecord(schema.patternProperties)) {
      const pattern = Object.keys(schema.patternProperties)[0];
      if (pattern !== undefined) return (n) => sampleRegex(pattern, (count) => n % Math.max(count, 1)) ?? `extra${n}`;
    }
    return schema.additionalProperties === false ? undefined : (n) => `extra${n}`;
  }

  /** The schema of a property not listed in `properties`: a matching patternProperties entry, or additionalProperties. */
  #extraSchema(schema: Schema, key: string): SchemaNode {
    if (isRecord(schema.patternProperties)) {
      for (const [pattern, node] of Object.entries(schema.patternProperties as Record<string, SchemaNode>)) {
        if (safeTest(pattern, key)) return node;
      }
    }
    const extra = schema.additionalProperties;
    return typeof extra === 'boolean' || isRecord(extra) ? (extra as SchemaNode) : true;
  }

  #array(schema: Schema, depth: number, salt: number, shift: number): unknown[] {
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
    const rest = (Array.isArray(schema.items) ? schema.additionalItems : Array.isArray(schema.prefixItems) ? schema.items : schema.items) as
      | SchemaNode
      | undefined;
    const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0;
    let maxItems = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity;
    if (rest === false) maxItems = Math.min(maxItems, tuple.length);
    const contains = schema.contains as SchemaNode | undefined;
    const minContains = contains === undefined ? 0 : typeof schema.minContains === 'number' ? schema.minContains : 1;

    const fewest = Math.max(minItems, minContains);
    let count: number;
    if (this.#minimal(depth)) count = fewest;
    else if (this.#random === undefined) count = Math.max(fewest, tuple.length, PLAIN_ITEMS);
    // Any length the schema allows, up to a few past the least: lists of a model's length.
    else count = fewest + this.choose(Math.min(maxItems, fewest + PLAIN_ITEMS) - fewest + 1);
    count = Math.min(count, maxItems);

    const unique = schema.uniqueItems === true;
    const seen = new Set<string>();
    const items: unknown[] = [];
    for (let index = 0; index < count; index++) {
      const node: SchemaNode =
        index < tuple.length ? (tuple[index] as SchemaNode) : index < tuple.length + minContains ? contains! : (rest ?? true);
      let item = this.make(node, depth + 1, salt + index, shift);
      // Distinct items for uniqueItems: other salts give other values (other words, numbers, members).
      for (let retry = 1; unique && retry <= 8 && seen.has(JSON.stringify(item)); retry++) {
        item = this.make(node, depth + 1, salt + index + retry * count, shift);
      }
      if (item === undefined) break;
      seen.add(JSON.stringify(item));
      items.push(item);
    }
    return items;
  }

  #string(schema: Schema, salt: number): string {
    const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
    const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
    const format = typeof schema.format === 'string' ? formatted(schema.format, salt + this.choose(1000)) : undefined;
    if (format !== undefined) return format;
    if (typeof schema.pattern === 'string') {
      // The plain attempt starts every choice at `salt`, so sibling strings differ.
      const choose: Choose = this.#random === undefined ? (count) => salt % Math.max(count, 1) : this.choose;
      const sampled = sampleRegex(schema.pattern, choose);
      if (sampled !== undefined) return fitLength(sampled, minLength, maxLength, schema.pattern);
    }
    // Other attempts say no word twice: a run of the list is at most the list.
    const wordCount = this.#random === undefined ? PLAIN_WORDS : 1 + this.choose(Math.min(PLAIN_WORDS * 2, this.#words.length));
    // Other attempts start anywhere in the list, so that one word list gives many strings.
    const start = salt + this.choose(this.#words.length);
    const words = Array.from({ length: wordCount }, (_, i) => this.#words[(start + i) % this.#words.length]!);
    // Past the list, a number keeps sibling strings apart.
    if (salt >= this.#words.length) words.push(String(Math.floor(salt / this.#words.length) + 1));
    return fitLength(words.join(' '), minLength, maxLength, undefined);
  }
}

/** Every type a schema's keywords imply when it names none. */
function inferTypes(schema: Schema): TypeName[] {
  const has = (...keys: string[]) => keys.some((key) => key in schema);
  if (has('properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties')) return ['object'];
  if (has('items', 'prefixItems', 'minItems', 'maxItems', 'contains', 'uniqueItems')) return ['array'];
  if (has('minLength', 'maxLength', 'pattern', 'format')) return ['string'];
  if (has('minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf')) return ['number'];
  // Anything goes: a short string says the most.
  return ['string'];
}

function dependentRequired(schema: Schema): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const source of [schema.dependentRequired, schema.dependencies]) {
    if (!isRecord(source)) continue;
    for (const [key, value] of Object.entries(source as Record<string, unknown>)) {
      if (Array.isArray(value))
        map.set(
          key,
          value.filter((item): item is string => typeof item === 'string'),
        );
    }
  }
  return map;
}

function withKeys(schema: Schema, extra: Record<string, unknown>): Schema {
  const out = { ...schema };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) out[key] = value;
  return out;
}

const LOWER_BOUNDS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains']);
const UPPER_BOUNDS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains']);

/**
 * One schema that asks what both ask, as far as plain keywords go: types intersected, properties
 * merged, required united, bounds tightened, enums intersected. Combinators of `b` that `a` has too
 * move into an `allOf` for the next round of resolving. Undefined when either admits nothing.
 */
function merge(a: SchemaNode | undefined, b: SchemaNode): Schema | undefined {
  if (a === undefined || a === false || b === false) return undefined;
  const left: Schema = a === true ? {} : { ...a };
  if (b === true) return left;
  const pending: Schema[] = [];
  for (const [key, value] of Object.entries(b)) {
    const existing = left[key];
    if (existing === undefined) {
      left[key] = value;
    } else if (key === 'type') {
      const types = intersectTypes(existing, value);
      if (types.length === 0) return undefined;
      left.type = types;
    } else if (key === 'properties' && isRecord(existing) && isRecord(value)) {
      const properties: Record<string, unknown> = { ...existing };
      for (const [name, node] of Object.entries(value)) {
        properties[name] = Object.hasOwn(existing, name) ? { allOf: [existing[name], node] } : node;
      }
      left.properties = properties;
    } else if (key === 'required' && Array.isArray(existing) && Array.isArray(value)) {
      left.required = [...new Set([...existing, ...value])];
    } else if (LOWER_BOUNDS.has(key) && typeof existing === 'number' && typeof value === 'number') {
      left[key] = Math.max(existing, value);
    } else if (UPPER_BOUNDS.has(key) && typeof existing === 'number' && typeof value === 'number') {
      left[key] = Math.min(existing, value);
    } else if (key === 'enum' && Array.isArray(existing) && Array.isArray(value)) {
      const allowed = new Set(value.map((item) => JSON.stringify(item)));
      left.enum = existing.filter((item) => allowed.has(JSON.stringify(item)));
    } else if (key === 'multipleOf' && typeof existing === 'number' && typeof value === 'number') {
      left.multipleOf = existing % value === 0 ? existing : value % existing === 0 ? value : existing * value;
    } else if (key === 'items' || key === 'additionalProperties' || key === 'contains') {
      left[key] = { allOf: [existing, value] };
    } else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf' || key === '$ref' || key === 'if') {
      // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword here, never awaited
      pending.push(key === 'if' ? { if: value, then: b.then, else: b.else } : { [key]: value });
    }
    // Anything else (a second pattern, format, description) keeps the first: a candidate, after all.
  }
  if (pending.length > 0) left.allOf = [...(Array.isArray(left.allOf) ? left.allOf : []), ...pending];
  return left;
}

function intersectTypes(a: unknown, b: unknown): TypeName[] {
  const list = (value: unknown): TypeName[] => (Array.isArray(value) ? value : [value]) as TypeName[];
  const right = list(b);
  const out = new Set<TypeName>();
  for (const type of list(a)) {
    if (right.includes(type)) out.add(type);
    // Integers are numbers: number ∩ integer is integer.
    else if ((type === 'number' && right.includes('integer')) || (type === 'integer' && right.includes('number'))) out.add('integer');
  }
  return [...out];
}

/** A number within the schema's bounds and a multiple of its `multipleOf`, near 0 (or near a random point). */
function numberFor(schema: Schema, integer: boolean, salt: number, random: (() => number) | undefined): number | undefined {
  const bound = (inclusive: unknown, exclusive: unknown, pick: (x: number, y: number) => number) => {
    const candidates: { value: number; strict: boolean }[] = [];
    if (typeof inclusive === 'number') candidates.push({ value: inclusive, strict: false });
    if (typeof exclusive === 'number') candidates.push({ value: exclusive, strict: true });
    if (candidates.length === 0) return undefined;
    return candidates.reduce((x, y) => (pick(x.value, y.value) === y.value && (x.value !== y.value || y.strict) ? y : x));
  };
  const low = bound(schema.minimum, schema.exclusiveMinimum, Math.max);
  const high = bound(schema.maximum, schema.exclusiveMaximum, Math.min);
  const fits = (x: number) =>
    Number.isFinite(x) &&
    (low === undefined || (low.strict ? x > low.value : x >= low.value)) &&
    (high === undefined || (high.strict ? x < high.value : x <= high.value)) &&
    (!integer || Number.isInteger(x));

  const lowValue = low?.value ?? (high === undefined ? -100 : high.value - 200);
  const highValue = high?.value ?? lowValue + 200;
  // Plain: the allowed value nearest 0 (nudged by salt, so siblings differ); random: anywhere between.
  let target = random === undefined ? Math.min(Math.max(salt, lowValue), highValue) : lowValue + random() * (highValue - lowValue);
  if (random !== undefined && !integer) {
    // Two decimals, as a model writes a score or a price, where the bounds leave room for them.
    const rounded = Math.round(target * 100) / 100;
    if (fits(rounded)) target = rounded;
  }

  const step = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? schema.multipleOf : undefined;
  if (step !== undefined) {
    // Multiples k·step near the target, then from each bound inwards; k·step / step must come back whole.
    const starts = [Math.round(target / step), Math.ceil(lowValue / step), Math.floor(highValue / step)];
    for (const start of starts) {
      for (let offset = 0; offset <= 64; offset++) {
        for (const k of offset === 0 ? [start] : [start + offset, start - offset]) {
          const x = k * step;
          if (fits(x) && Number.isInteger(x / step)) return x;
        }
      }
    }
    return undefined;
  }
  if (integer) {
    const lowest = low === undefined ? -Infinity : low.strict ? Math.floor(low.value) + 1 : Math.ceil(low.value);
    const highest = high === undefined ? Infinity : high.strict ? Math.ceil(high.value) - 1 : Math.floor(high.value);
    const x = Math.min(Math.max(Math.round(target), lowest), highest);
    return fits(x) ? x : undefined;
  }
  if (fits(target)) return target;
  // An exclusive bound was hit: halfway between the bounds is inside.
  const middle = (lowValue + highValue) / 2;
  return fits(middle) ? middle : undefined;
}

/** A string of the format, or undefined for formats without a known shape (then plain words do). */
function formatted(format: string, salt: number): string | undefined {
  const day = new Date(Date.UTC(2024, 0, 1 + (salt % 3650), salt % 24, salt % 60, 0));
  const hex = (width: number) => (salt % 16 ** Math.min(width, 8)).toString(16).padStart(width, '0');
  switch (format) {
    case 'date-time':
      return day.toISOString().replace('.000Z', 'Z');
    case 'date':
      return day.toISOString().slice(0, 10);
    case 'time':
      return `${day.toISOString().slice(11, 19)}Z`;
    case 'duration':
      return `P${(salt % 365) + 1}D`;
    case 'email':
    case 'idn-email':
      return `user${salt}@example.com`;
    case 'hostname':
    case 'idn-hostname':
      return `host${salt}.example.com`;
    case 'ipv4':
      return `192.0.2.${salt % 256}`;
    case 'ipv6':
      return `2001:db8::${(salt % 65_536).toString(16)}`;
    case 'uri':
    case 'iri':
      return `https://example.com/items/${salt}`;
    case 'uri-reference':
    case 'iri-reference':
      return `/items/${salt}`;
    case 'uri-template':
      return 'https://example.com/items/{id}';
    case 'uuid':
      return `00000000-0000-4000-8000-${hex(12)}`;
    case 'json-pointer':
      return `/items/${salt}`;
    case 'relative-json-pointer':
      return String(salt % 10);
    case 'regex':
      return '^[a-z]+$';
    case 'byte':
      return Buffer.from(`value ${salt}`).toString('base64');
    default:
      return undefined;
  }
}

/**
 * `text` made to fit [min, max] code points (what JSON Schema counts). A pattern's sample is padded
 * only where the pattern is not anchored, and never cut: cutting would break the match.
 */
function fitLength(text: string, min: number, max: number, pattern: string | undefined): string {
  const points = Array.from(text);
  if (pattern === undefined) {
    while (points.length < min) points.push(...Array.from(points.length === 0 ? 'x' : ` ${text}`));
    const kept = points.slice(0, Math.min(Math.max(min, Math.min(points.length, max)), max));
    // Cut short, the words end where one ends, as a model's would, unless that falls under the minimum.
    const space = kept.length < points.length ? kept.lastIndexOf(' ') : -1;
    return (space > 0 && space >= min ? kept.slice(0, space) : kept).join('');
  }
  if (points.length >= min) return text;
  const padding = 'x'.repeat(min - points.length);
  if (!pattern.endsWith('$')) return text + padding;
  if (!pattern.startsWith('^')) return padding + text;
  return text;
}

function safeTest(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(text);
  } catch {
    return false;
  }
}
