import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { encodeAnthropic } from '../../src/vendors/anthropic/encode.ts';
import { encodeOpenAi } from '../../src/vendors/openai/encode.ts';
import { bodyJsonOf, SharedParts, sharedPart } from '../../src/vendors/shared-part.ts';

const SCHEMA = { type: 'object', properties: { label: { type: 'string' } }, required: ['label'], additionalProperties: false };

function request(articleId: string, overrides: Partial<LlmRequest> = {}): LlmRequest {
  return { task: 'label', articleId, prompt: `Label article ${articleId}: "quoted" \u2028 text`, schema: SCHEMA, ...overrides };
}

describe('bodyJsonOf()', () => {
  it('is JSON.stringify of the body: undefined, function and symbol values left out, nested and odd values as it writes them', () => {
    const bodies: object[] = [
      {},
      { a: undefined },
      { a: undefined, b: 1 },
      { a: 1, b: undefined, c: () => 1, d: Symbol('s'), e: null, f: [undefined, 2], g: 'x"\n', h: { toJSON: () => 'j' } },
      { nested: sharedPart({ deep: [1, { x: undefined }] }), after: true },
      { only: sharedPart({}) },
    ];
    for (const body of bodies) expect(bodyJsonOf(body, new Map())).toBe(JSON.stringify(body));
  });

  it("takes a shared part's JSON from what it made before rather than serializing it again", () => {
    const part = sharedPart({ schema: SCHEMA });
    const made = new Map<object, string>();
    expect(bodyJsonOf({ a: 1, part }, made)).toBe(JSON.stringify({ a: 1, part }));
    expect(made.get(part)).toBe(JSON.stringify(part));
    // What it made is what it sends: a stand-in here shows it is not serialized again.
    made.set(part, '"made before"');
    expect(bodyJsonOf({ a: 2, part }, made)).toBe('{"a":2,"part":"made before"}');
    // A part not marked shared is serialized every time, and nothing is kept for it.
    const plain = { schema: SCHEMA };
    expect(bodyJsonOf({ plain }, made)).toBe(JSON.stringify({ plain }));
    expect(made.has(plain)).toBe(false);
  });

  it("is each vendor's body as JSON.stringify writes it, over many rows of a task", () => {
    const made = new Map<object, string>();
    for (let id = 0; id < 3; id++) {
      const openAi = encodeOpenAi(request(String(id)), 'gpt-4.1-mini', 100);
      expect(bodyJsonOf(openAi, made)).toBe(JSON.stringify(openAi));
      const anthropic = encodeAnthropic(request(String(id), { description: 'A label.' }), 'claude-sonnet-4-5', 100);
      expect(bodyJsonOf(anthropic, made)).toBe(JSON.stringify(anthropic));
    }
    // One response format, one tools list and one tool choice: made once for the three rows each.
    expect(made.size).toBe(3);
  });
});

describe('SharedParts', () => {
  it("gives a task's rows one part, made again when the task's name or description changes", () => {
    const parts = new SharedParts<{ name: string }>();
    let makes = 0;
    const make = (name: string) => () => {
      makes++;
      return { name };
    };
    const first = parts.get(SCHEMA, 'label', 'A label.', make('label'));
    expect(parts.get(SCHEMA, 'label', 'A label.', make('label'))).toBe(first);
    expect(makes).toBe(1);
    const renamed = parts.get(SCHEMA, 'tag', 'A label.', make('tag'));
    expect(renamed).toEqual({ name: 'tag' });
    expect(parts.get(SCHEMA, 'tag', 'Another.', make('tag'))).not.toBe(renamed);
    // Another schema object is another part, even with the same name.
    expect(parts.get({ ...SCHEMA }, 'tag', 'Another.', make('tag'))).not.toBe(first);
    expect(makes).toBe(4);
  });

  it("makes a vendor's encoder send the same response format for every row of a task, and another for another schema", () => {
    const a = encodeOpenAi(request('1'), 'gpt-4.1-mini', 100);
    const b = encodeOpenAi(request('2'), 'gpt-4.1-mini', 100);
    expect(b.response_format).toBe(a.response_format);
    const other = encodeOpenAi(request('3', { schema: { ...SCHEMA } }), 'gpt-4.1-mini', 100);
    expect(other.response_format).not.toBe(a.response_format);
    expect(other.response_format).toEqual(a.response_format);
  });
});
