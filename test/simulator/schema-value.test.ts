import { isIPv4, isIPv6 } from 'node:net';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleRegex } from '../../src/simulator/regex-sample.ts';
import { SchemaError } from '../../src/provider/schema-validators.ts';
import { SchemaAnswers } from '../../src/simulator/schema-answers.ts';
import { valueForSchema } from '../../src/simulator/schema-value.ts';

/** The formats the generator knows, checked here independently of it. */
const FORMATS: Record<string, (text: string) => boolean> = {
  'date-time': (s) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)),
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s),
  time: (s) => /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s),
  duration: (s) => /^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?$/.test(s),
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  hostname: (s) => /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(s),
  ipv4: (s) => isIPv4(s),
  ipv6: (s) => isIPv6(s),
  uri: (s) => /^[a-z][a-z0-9+.-]*:/i.test(s) && URL.canParse(s),
  'uri-reference': (s) => URL.canParse(s, 'https://example.com/'),
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  'json-pointer': (s) => /^(\/([^~/]|~[01])*)*$/.test(s),
  regex: (s) => {
    try {
      new RegExp(s, 'u');
      return true;
    } catch {
      return false;
    }
  },
};

// The judge: ajv on its own, formats checked, schemas read as draft 2020-12 (or draft-07 for tuple `items`).
const judge2020 = new Ajv2020({ strict: false, formats: FORMATS, allErrors: true });
const judge7 = new Ajv({ strict: false, formats: FORMATS, allErrors: true });
const judge = (schema: Record<string, unknown>) =>
  (Array.isArray((schema as { items?: unknown }).items) ? judge7 : judge2020).compile(schema);

let answers: SchemaAnswers;
beforeAll(async () => {
  answers = await SchemaAnswers.create(64);
});

/** The server's answer for `schema` (seeded by `variant`), checked by the judge; returns it for further checks. */
function answerFits(
  schema: Record<string, unknown>,
  words: readonly string[] = ['budget', 'council', 'growth', 'residents'],
  variant = 0,
): unknown {
  const value = answers.valueFor(schema, words, undefined, variant);
  const validate = judge(schema);
  const fits = validate(value);
  expect(fits, `${JSON.stringify(value)} for ${JSON.stringify(schema)}: ${JSON.stringify(validate.errors)}`).toBe(true);
  // What goes over the wire is JSON: the value must survive it unchanged.
  expect(JSON.parse(JSON.stringify(value))).toEqual(value);
  return value;
}

const obj = (properties: Record<string, object>, extra: object = {}) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
  ...extra,
});

describe('SchemaAnswers.valueFor', () => {
  it.each([
    ['an object with required properties and no others', obj({ title: { type: 'string' }, count: { type: 'integer' } })],
    [
      'optional properties and additionalProperties as a schema',
      { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'number' }, minProperties: 3 },
    ],
    ['minProperties past the listed ones', { type: 'object', properties: { a: { type: 'boolean' } }, minProperties: 2 }],
    [
      'maxProperties',
      { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } }, maxProperties: 1 },
    ],
    [
      'patternProperties',
      { type: 'object', patternProperties: { '^x-[a-z]+$': { type: 'integer' } }, additionalProperties: false, minProperties: 2 },
    ],
    [
      'dependentRequired',
      { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'], dependentRequired: { a: ['b'] } },
    ],
    ['a string enum', obj({ mood: { type: 'string', enum: ['positive', 'negative', 'neutral'] } })],
    ['a const', obj({ kind: { const: 'article' }, version: { const: 2 } })],
    [
      'string lengths',
      obj({
        short: { type: 'string', maxLength: 4 },
        long: { type: 'string', minLength: 40 },
        exact: { type: 'string', minLength: 7, maxLength: 7 },
      }),
    ],
    ['an empty string only', obj({ none: { type: 'string', maxLength: 0 } })],
    ...Object.keys(FORMATS).map((format): [string, object] => [`format ${format}`, obj({ value: { type: 'string', format } })]),
    ['a pattern', obj({ id: { type: 'string', pattern: '^[A-Z]{2}-\\d{4}$' } })],
    ['a pattern with alternation and a length', obj({ code: { type: 'string', pattern: '^(alpha|beta|gamma)-[0-9]+$', minLength: 8 } })],
    ['an unanchored pattern and a minimum length', obj({ word: { type: 'string', pattern: 'ab', minLength: 10 } })],
    ['integer bounds', obj({ n: { type: 'integer', minimum: 10, maximum: 12 } })],
    [
      'exclusive bounds',
      obj({
        n: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 2 },
        x: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
      }),
    ],
    [
      'multipleOf',
      obj({
        even: { type: 'integer', multipleOf: 2, minimum: 7 },
        tenth: { type: 'number', multipleOf: 0.1, minimum: 0.15, maximum: 0.25 },
      }),
    ],
    ['a negative range', obj({ n: { type: 'number', minimum: -5, maximum: -4 } })],
    ['a score in [-1, 1]', obj({ score: { type: 'number', minimum: -1, maximum: 1 } })],
    ['booleans and null', obj({ ok: { type: 'boolean' }, nothing: { type: 'null' } })],
    ['a type list with null', obj({ maybe: { type: ['string', 'null'] }, count: { type: ['null', 'integer'] } })],
    ['array bounds', obj({ tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 } })],
    ['an empty array only', obj({ none: { type: 'array', items: { type: 'string' }, maxItems: 0 } })],
    ['uniqueItems', obj({ tags: { type: 'array', items: { type: 'string' }, minItems: 8, uniqueItems: true } })],
    ['uniqueItems of an enum', obj({ picks: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 3, uniqueItems: true } })],
    [
      'uniqueItems of integers in a range',
      obj({ picks: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 5 }, minItems: 5, uniqueItems: true } }),
    ],
    ['prefixItems, no more', obj({ pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false } })],
    [
      'prefixItems, then more of a kind',
      obj({ row: { type: 'array', prefixItems: [{ type: 'boolean' }], items: { type: 'number' }, minItems: 3 } }),
    ],
    ['contains', obj({ list: { type: 'array', items: { type: ['string', 'integer'] }, contains: { type: 'integer', minimum: 100 } } })],
    ['anyOf', obj({ either: { anyOf: [{ type: 'string', format: 'email' }, { type: 'integer' }] } })],
    ['oneOf with overlapping branches', obj({ n: { oneOf: [{ type: 'number' }, { type: 'integer' }] } })],
    [
      'oneOf of objects told apart by a const',
      obj({
        shape: {
          oneOf: [
            obj({ kind: { const: 'circle' }, r: { type: 'number', minimum: 0 } }),
            obj({ kind: { const: 'square' }, side: { type: 'number' } }),
          ],
        },
      }),
    ],
    [
      'allOf',
      {
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { properties: { b: { type: 'integer', minimum: 5 } }, required: ['b'] },
        ],
      },
    ],
    [
      'allOf tightening bounds',
      obj({ n: { allOf: [{ type: 'number', minimum: 3 }, { type: 'integer', maximum: 4 }, { multipleOf: 2 }] } }),
    ],
    [
      'if / then / else',
      {
        type: 'object',
        properties: { kind: { enum: ['a', 'b'] }, size: { type: 'integer' } },
        required: ['kind'],
        if: { properties: { kind: { const: 'a' } } },
        // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword
        then: { required: ['size'] },
      },
    ],
    [
      '$ref into $defs',
      {
        type: 'object',
        properties: { author: { $ref: '#/$defs/person' }, editor: { $ref: '#/$defs/person' } },
        required: ['author', 'editor'],
        $defs: { person: obj({ name: { type: 'string' }, email: { type: 'string', format: 'email' } }) },
      },
    ],
    [
      '$ref into definitions',
      {
        type: 'object',
        properties: { n: { $ref: '#/definitions/positive' } },
        required: ['n'],
        definitions: { positive: { type: 'integer', minimum: 1 } },
      },
    ],
    [
      'a recursive $ref',
      {
        $ref: '#/$defs/node',
        $defs: { node: obj({ name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }) },
      },
    ],
    [
      'recursion through anyOf null',
      {
        $defs: { list: obj({ head: { type: 'integer' }, tail: { anyOf: [{ $ref: '#/$defs/list' }, { type: 'null' }] } }) },
        $ref: '#/$defs/list',
      },
    ],
    ['the older tuple items', { type: 'array', items: [{ type: 'string' }, { type: 'boolean' }], additionalItems: false, minItems: 2 }],
    ['not', obj({ word: { type: 'string', not: { const: 'alpha bravo charlie' } } })],
    ['true (anything)', obj({ anything: {} })],
    ['a top-level array', { type: 'array', items: obj({ id: { type: 'string', format: 'uuid' } }), minItems: 2, uniqueItems: true }],
    ['a top-level string', { type: 'string', minLength: 1 }],
  ])('%s: the plain value, and the values of other variants', (_, schema) => {
    answerFits(schema as Record<string, unknown>);
    // Variants as a request's hash makes them: anywhere in 32 bits.
    for (let n = 1; n <= 25; n++) answerFits(schema as Record<string, unknown>, undefined, Math.imul(n, 0x9e3779b1) >>> 0);
  });

  it('fills strings from the given words', () => {
    const value = answerFits(obj({ headline: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }), [
      'council',
      'budget',
      'approved',
    ]) as {
      headline: string;
      tags: string[];
    };
    expect(value.headline).toBe('council budget approved');
    expect(
      value.tags
        .join(' ')
        .split(' ')
        .every((word) => ['council', 'budget', 'approved', '2'].includes(word)),
    ).toBe(true);
  });

  it('answers the same schema with the same value', () => {
    const schema = obj({ a: { type: 'string' }, n: { type: 'number' }, list: { type: 'array', items: { type: 'integer' } } });
    expect(answers.valueFor(schema, ['x', 'y'])).toEqual(answers.valueFor(schema, ['x', 'y']));
    expect(answers.valueFor(schema, ['x', 'y'], undefined, 12_345)).toEqual(answers.valueFor(schema, ['x', 'y'], undefined, 12_345));
  });

  it('spreads the values of 300 variants over what the schema allows: every member, numbers across the bounds, every length', () => {
    const schema = obj({
      topic: { type: 'string', enum: ['economy', 'politics', 'sport', 'science', 'culture'] },
      confidence: { type: 'number', minimum: 0, maximum: 1 },
      year: { type: 'integer', minimum: 1990, maximum: 2030 },
      tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 4 },
      headline: { type: 'string', maxLength: 24 },
    });
    const words = ['harbor', 'bank', 'rates', 'inflation', 'eases', 'economists', 'wage', 'growth'];
    const values = Array.from(
      { length: 300 },
      (_, n) => answerFits(schema, words, Math.imul(n + 1, 0x9e3779b1) >>> 0) as Record<string, any>,
    );
    const count = (pick: (value: Record<string, any>) => unknown) => {
      const counts = new Map<unknown, number>();
      for (const value of values) counts.set(pick(value), (counts.get(pick(value)) ?? 0) + 1);
      return counts;
    };
    // Uniform over 5 members: 60 each expected; under 30 would be far out of chance.
    const topics = count((value) => value.topic);
    expect(topics.size).toBe(5);
    for (const [topic, times] of topics) expect(times, String(topic)).toBeGreaterThan(30);
    const confidences = values.map((value) => value.confidence as number);
    expect(Math.min(...confidences)).toBeLessThan(0.1);
    expect(Math.max(...confidences)).toBeGreaterThan(0.9);
    expect(new Set(confidences).size).toBeGreaterThan(50);
    // Two decimals, as a model writes a score.
    for (const confidence of confidences) expect(Math.round(confidence * 100) / 100).toBe(confidence);
    const years = values.map((value) => value.year as number);
    expect(Math.min(...years)).toBeLessThan(2000);
    expect(Math.max(...years)).toBeGreaterThan(2020);
    expect([...count((value) => value.tags.length).keys()].sort()).toEqual([1, 2, 3, 4]);
    for (const value of values) {
      // Strings of the words, cut between them.
      for (const text of [value.headline, ...value.tags])
        expect(
          text.split(' ').every((word: string) => words.includes(word)),
          text,
        ).toBe(true);
    }
    expect(count((value) => value.headline).size).toBeGreaterThan(10);
  });

  it.each([
    ['a range with nothing in it', { type: 'integer', minimum: 5, maximum: 1 }, 'no value was found that fits the schema (48 tried)'],
    ['false', obj({ never: false as unknown as object }), 'no value was found that fits the schema'],
    ['a type ajv does not know', { type: 'text' }, 'the schema is invalid: '],
    ['a pattern that is not a regular expression', { type: 'string', pattern: '(' }, 'the schema is invalid: '],
  ])('throws SchemaError for %s', (_, schema, message) => {
    expect(() => answers.valueFor(schema as Record<string, unknown>, [])).toThrow(SchemaError);
    expect(() => answers.valueFor(schema as Record<string, unknown>, [])).toThrow(message);
  });

  it('keeps at most maxSchemas compiled, the least recently used dropped first', async () => {
    const small = await SchemaAnswers.create(2);
    const schemas = [1, 2, 3].map((n) => ({ type: 'integer', minimum: n }));
    const first = small.validator(schemas[0]!);
    const second = small.validator(schemas[1]!);
    expect(small.validator(schemas[0]!)).toBe(first);
    small.validator(schemas[2]!); // full: drops schema 2, the least recently used
    expect(small.validator(schemas[0]!)).toBe(first);
    expect(small.validator(schemas[1]!)).not.toBe(second);
  });
});

describe('valueForSchema', () => {
  it('has no value for false, and an empty object for an object schema that asks nothing', () => {
    expect(valueForSchema(false)).toBeUndefined();
    expect(valueForSchema({ type: 'object' })).toEqual({});
  });

  it('makes the plainest choices on attempt 0 and other ones on other attempts', () => {
    const schema = { enum: ['first', 'second', 'third', 'fourth'] };
    expect(valueForSchema(schema)).toBe('first');
    const seen = new Set(Array.from({ length: 20 }, (_, attempt) => valueForSchema(schema, { attempt: attempt + 1 })));
    expect(seen.size).toBeGreaterThan(1);
  });
});

describe('sampleRegex', () => {
  const first = () => 0;
  it.each([
    'abc',
    '^[a-z]{3,8}$',
    '^\\d{3}-\\d{4}$',
    '^(foo|bar)+$',
    '^[A-Z][a-z]+( [A-Z][a-z]+)*$',
    '^sk-[a-zA-Z0-9]{8}$',
    '^#[0-9a-fA-F]{6}$',
    '^\\w+@\\w+\\.com$',
    '^[^\\s]+$',
    '^[^a-z]{2}$',
    '^(?<year>\\d{4})-(?<month>0[1-9]|1[0-2])$',
    '^(a|b)\\1$',
    '^(?:x|y)?z*$',
    '^\\u{1F600}\\p{Lu}\\p{Nd}$',
    '^[\\d\\-]{3}\\.[\\w]$',
    '^a{2}b{1,}c{0,1}$',
    '^.{5}$',
    'x(?=y)y',
    '^[\\]\\[]$',
  ])('%s: the sample matches', (pattern) => {
    const regex = new RegExp(pattern, 'u');
    expect(sampleRegex(pattern, first), pattern).toSatisfy((sample: string) => regex.test(sample));
    let state = 7;
    const random = (count: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % count;
    };
    for (let i = 0; i < 20; i++) expect(regex.test(sampleRegex(pattern, random)!), pattern).toBe(true);
  });

  it.each(['(', '[a-z', 'a**', '\\k<name>'])('%s: undefined, not a throw', (pattern) => {
    expect(sampleRegex(pattern, first)).toBeUndefined();
  });
});

describe('the answer validates for any satisfiable schema (property)', () => {
  const PATTERNS = ['^[a-z]{3,8}$', '^\\d{3}-\\d{4}$', '^(foo|bar)+$', '^sk-[a-zA-Z0-9]{8}$', 'ab+c'];
  const FORMAT_NAMES = Object.keys(FORMATS);
  const names = fc.constantFrom('a', 'b', 'title', 'count', 'items', 'when', 'x_y');

  const integerSchema = fc
    .record({
      lo: fc.integer({ min: -1000, max: 1000 }),
      extra: fc.nat(100),
      step: fc.option(fc.integer({ min: 1, max: 7 })),
      exLo: fc.boolean(),
      exHi: fc.boolean(),
    })
    .map(({ lo, extra, step, exLo, exHi }) => {
      const hi = lo + 2 * (step ?? 1) + 2 + extra;
      return {
        type: 'integer',
        ...(exLo ? { exclusiveMinimum: lo } : { minimum: lo }),
        ...(exHi ? { exclusiveMaximum: hi } : { maximum: hi }),
        ...(step === null ? {} : { multipleOf: step }),
      };
    });
  const numberSchema = fc
    .record({
      lo: fc.double({ min: -1000, max: 1000, noNaN: true }),
      span: fc.double({ min: 0.01, max: 1000, noNaN: true }),
      step: fc.option(fc.constantFrom(0.5, 0.25, 0.1, 2)),
      exLo: fc.boolean(),
      exHi: fc.boolean(),
      bounded: fc.boolean(),
    })
    .map(({ lo, span, step, exLo, exHi, bounded }) => {
      if (!bounded) return { type: 'number', ...(step === null ? {} : { multipleOf: step }) };
      const hi = lo + span + (step === null ? 0 : 2 * step);
      return {
        type: 'number',
        ...(exLo ? { exclusiveMinimum: lo } : { minimum: lo }),
        ...(exHi ? { exclusiveMaximum: hi } : { maximum: hi }),
        ...(step === null ? {} : { multipleOf: step }),
      };
    });
  const leaf = fc.oneof(
    fc.record({ min: fc.nat(6), extra: fc.nat(12) }).map(({ min, extra }) => ({ type: 'string', minLength: min, maxLength: min + extra })),
    fc.constantFrom(...FORMAT_NAMES).map((format) => ({ type: 'string', format })),
    fc.constantFrom(...PATTERNS).map((pattern) => ({ type: 'string', pattern })),
    fc.uniqueArray(fc.oneof(fc.string(), fc.integer(), fc.boolean()), { minLength: 1, maxLength: 4 }).map((values) => ({ enum: values })),
    // (Keys such as `valueOf` would trip ajv's own deep equality, not the generator.)
    fc
      .oneof(
        fc.string(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(fc.integer(), { maxLength: 3 }),
        fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.integer(), { maxKeys: 3 }),
      )
      .map((value) => ({ const: value })),
    integerSchema,
    numberSchema,
    fc.constantFrom({ type: 'boolean' }, { type: 'null' }, { type: ['string', 'null'] }, { type: ['integer', 'null'] }, {}),
  );

  const { node } = fc.letrec<{ node: object; object: object; array: object; anyOf: object; oneOf: object; allOf: object; tuple: object }>(
    (tie) => ({
      node: fc.oneof(
        { maxDepth: 4, depthIdentifier: 'schema' },
        leaf,
        tie('object'),
        tie('array'),
        tie('anyOf'),
        tie('oneOf'),
        tie('allOf'),
        tie('tuple'),
      ),
      object: fc
        .record({
          properties: fc.dictionary(names, tie('node'), { maxKeys: 4 }),
          required: fc.array(fc.boolean(), { maxLength: 4 }),
          closed: fc.boolean(),
        })
        .map(({ properties, required, closed }) => ({
          type: 'object',
          properties,
          required: Object.keys(properties).filter((_, index) => required[index] !== false),
          ...(closed ? { additionalProperties: false } : {}),
        })),
      array: fc
        .record({ items: tie('node'), min: fc.nat(3), extra: fc.nat(3) })
        .map(({ items, min, extra }) => ({ type: 'array', items, minItems: min, maxItems: min + extra })),
      anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
      // Branches of different types: exactly one holds.
      oneOf: fc
        .tuple(tie('object'), fc.constantFrom({ type: 'string' }, { type: 'integer' }, { type: 'boolean' }))
        .map((branches) => ({ oneOf: branches })),
      // Parts about different properties, none closed: all can hold at once.
      allOf: fc
        .tuple(fc.dictionary(names, tie('node'), { maxKeys: 2 }), fc.dictionary(names, tie('node'), { maxKeys: 2 }))
        .map(([left, right]) => ({
          allOf: [
            { type: 'object', properties: left, required: Object.keys(left) },
            {
              properties: Object.fromEntries(Object.entries(right).map(([key, value]) => [`other_${key}`, value])),
              required: Object.keys(right).map((key) => `other_${key}`),
            },
          ],
        })),
      tuple: fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((prefixItems) => ({ type: 'array', prefixItems, items: false })),
    }),
  );
  // Some schemas reach their parts through $defs, as generated schemas (zod, pydantic) do.
  const schema = fc.oneof(
    node,
    node.map((inner) => ({ type: 'object', properties: { ref: { $ref: '#/$defs/inner' } }, required: ['ref'], $defs: { inner } })),
  );

  it('ajv accepts the value made for every generated schema', () => {
    fc.assert(
      fc.property(
        schema,
        fc.array(fc.stringMatching(/^[a-z]{1,10}$/), { maxLength: 6 }),
        fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        (generated, words, variant) => {
          // As a server receives it: parsed JSON (fast-check's objects may lack a prototype, which ajv's const tells apart).
          const parsed = JSON.parse(JSON.stringify(generated));
          answerFits(parsed, words);
          answerFits(parsed, words, variant);
        },
      ),
      { numRuns: 200 },
    );
  });
});
