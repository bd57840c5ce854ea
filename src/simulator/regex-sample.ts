/**
 * A string that a JSON-schema `pattern` matches, made from the pattern itself: literals, classes,
 * `\d \w \s`, `.`, groups, alternation, quantifiers and back-references. Lookarounds are skipped
 * and word boundaries ignored, so the result is a candidate: the caller tests it against the real
 * `RegExp` (JSON Schema patterns are ECMAScript with the `u` flag).
 */

/** Picks one of `count` choices, an integer in [0, count): `() => 0` gives the plainest string. */
export type Choose = (count: number) => number;

/** The string, or undefined when the pattern uses syntax this sampler does not know. */
export function sampleRegex(pattern: string, choose: Choose): string | undefined {
  try {
    const parser = new Parser(pattern);
    const node = parser.alternation();
    if (!parser.done) return undefined;
    const groups: string[] = [];
    return sample(node, choose, groups);
  } catch (error) {
    if (error instanceof UnsupportedPattern) return undefined;
    throw error;
  }
}

/** Extra repetitions an open quantifier (`*`, `+`, `{n,}`) may draw beyond its minimum. */
const OPEN_REPEATS = 3;

type Range = readonly [number, number];

type Node =
  | { readonly kind: 'empty' }
  | { readonly kind: 'literal'; readonly codePoint: number }
  | { readonly kind: 'set'; readonly ranges: readonly Range[]; readonly negated: boolean }
  | { readonly kind: 'sequence'; readonly items: readonly Node[] }
  | { readonly kind: 'alternation'; readonly options: readonly Node[] }
  | { readonly kind: 'group'; readonly index: number | undefined; readonly node: Node }
  | { readonly kind: 'repeat'; readonly node: Node; readonly min: number; readonly max: number }
  | { readonly kind: 'backreference'; readonly index: number };

class UnsupportedPattern extends Error {}

const code = (char: string): number => char.codePointAt(0)!;
const DIGITS: readonly Range[] = [[code('0'), code('9')]];
const WORD: readonly Range[] = [[code('a'), code('z')], [code('A'), code('Z')], ...DIGITS, [code('_'), code('_')]];
const SPACE: readonly Range[] = [
  [code(' '), code(' ')],
  [code('\t'), code('\t')],
  [code('\n'), code('\n')],
];
/** What negated classes and `.` pick from: plain printable characters first. */
const PRINTABLE: readonly Range[] = [[code('a'), code('z')], [code('A'), code('Z')], ...DIGITS, [code(' '), code('~')]];

class Parser {
  readonly #chars: readonly string[];
  #at = 0;
  #groups = 0;

  constructor(pattern: string) {
    this.#chars = Array.from(pattern);
  }

  get done(): boolean {
    return this.#at >= this.#chars.length;
  }

  alternation(): Node {
    const options = [this.#sequence()];
    while (this.#peek() === '|') {
      this.#at++;
      options.push(this.#sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alternation', options };
  }

  #sequence(): Node {
    const items: Node[] = [];
    while (!this.done && this.#peek() !== '|' && this.#peek() !== ')') items.push(this.#quantified(this.#atom()));
    return { kind: 'sequence', items };
  }

  #quantified(node: Node): Node {
    const next = this.#peek();
    let min: number;
    let max: number;
    if (next === '?' || next === '*' || next === '+') {
      this.#at++;
      [min, max] = next === '?' ? [0, 1] : next === '*' ? [0, Infinity] : [1, Infinity];
    } else if (next === '{' && this.#bounds() !== undefined) {
      [min, max] = this.#bounds()!;
      this.#at = this.#chars.indexOf('}', this.#at) + 1;
    } else {
      return node;
    }
    if (this.#peek() === '?') this.#at++; // lazy: the same strings match
    return { kind: 'repeat', node, min, max };
  }

  /** `{n}`, `{n,}` or `{n,m}` at the cursor, or undefined (then `{` is a literal). */
  #bounds(): [number, number] | undefined {
    const rest = this.#chars.slice(this.#at, this.#at + 24).join('');
    const match = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (match === null) return undefined;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
    return [min, max];
  }

  #atom(): Node {
    const char = this.#next();
    switch (char) {
      case '^':
      case '$':
        return { kind: 'empty' };
      case '.':
        return { kind: 'set', ranges: [[code('\n'), code('\n')]], negated: true };
      case '[':
        return this.#class();
      case '(':
        return this.#group();
      case '\\':
        return this.#escape(false);
      case '*':
      case '+':
      case '?':
        throw new UnsupportedPattern();
      default:
        return { kind: 'literal', codePoint: code(char) };
    }
  }

  #group(): Node {
    let index: number | undefined;
    let discard = false;
    if (this.#peek() === '?') {
      this.#at++;
      const kind = this.#next();
      if (kind === '=' || kind === '!') discard = true;
      else if (kind === '<' && (this.#peek() === '=' || this.#peek() === '!')) {
        this.#at++;
        discard = true;
      } else if (kind === '<') {
        while (this.#next() !== '>');
        index = ++this.#groups;
      } else if (kind !== ':') throw new UnsupportedPattern();
    } else {
      index = ++this.#groups;
    }
    const node = this.alternation();
    if (this.#next() !== ')') throw new UnsupportedPattern();
    // A lookaround consumes nothing; whether it holds is for the caller's RegExp test to say.
    return discard ? { kind: 'empty' } : { kind: 'group', index, node };
  }

  #class(): Node {
    let negated = false;
    if (this.#peek() === '^') {
      negated = true;
      this.#at++;
    }
    const ranges: Range[] = [];
    let first = true;
    while (this.#peek() !== ']' || first) {
      first = false;
      const low = this.#classMember();
      if (this.#peek() === '-' && this.#chars[this.#at + 1] !== ']' && low.length === 1 && low[0]![0] === low[0]![1]) {
        this.#at++;
        const high = this.#classMember();
        if (high.length !== 1 || high[0]![0] !== high[0]![1]) throw new UnsupportedPattern();
        ranges.push([low[0]![0], high[0]![0]]);
      } else {
        ranges.push(...low);
      }
    }
    this.#at++;
    return { kind: 'set', ranges, negated };
  }

  #classMember(): readonly Range[] {
    const char = this.#next();
    if (char !== '\\') return [[code(char), code(char)]];
    const node = this.#escape(true);
    if (node.kind === 'literal') return [[node.codePoint, node.codePoint]];
    // A negated shorthand inside a class (`[\D]`): one character it admits stands for it.
    if (node.kind === 'set' && node.negated) return [[code(pickFrom(node, () => 0)), code(pickFrom(node, () => 0))]];
    if (node.kind === 'set') return node.ranges;
    throw new UnsupportedPattern();
  }

  #escape(inClass: boolean): Node {
    const char = this.#next();
    const set = (ranges: readonly Range[], negated = false): Node => ({ kind: 'set', ranges, negated });
    switch (char) {
      case 'd':
        return set(DIGITS);
      case 'D':
        return set(DIGITS, true);
      case 'w':
        return set(WORD);
      case 'W':
        return set(WORD, true);
      case 's':
        return set(SPACE);
      case 'S':
        return set(SPACE, true);
      case 'b':
        if (inClass) return { kind: 'literal', codePoint: 8 };
        return { kind: 'empty' };
      case 'B':
        return { kind: 'empty' };
      case 'n':
        return { kind: 'literal', codePoint: 10 };
      case 't':
        return { kind: 'literal', codePoint: 9 };
      case 'r':
        return { kind: 'literal', codePoint: 13 };
      case 'f':
        return { kind: 'literal', codePoint: 12 };
      case 'v':
        return { kind: 'literal', codePoint: 11 };
      case '0':
        return { kind: 'literal', codePoint: 0 };
      case 'x':
        return { kind: 'literal', codePoint: this.#hex(2) };
      case 'u':
        if (this.#peek() === '{') {
          const end = this.#chars.indexOf('}', this.#at);
          if (end === -1) throw new UnsupportedPattern();
          const digits = this.#chars.slice(this.#at + 1, end).join('');
          this.#at = end + 1;
          return { kind: 'literal', codePoint: parseHex(digits) };
        }
        return { kind: 'literal', codePoint: this.#hex(4) };
      case 'p':
      case 'P':
        return this.#property(char === 'P');
      default:
        if (/[1-9]/.test(char) && !inClass) {
          let digits = char;
          while (/\d/.test(this.#peek() ?? '')) digits += this.#next();
          return { kind: 'backreference', index: Number(digits) };
        }
        if (/[a-zA-Z0-9]/.test(char)) throw new UnsupportedPattern();
        return { kind: 'literal', codePoint: code(char) };
    }
  }

  /** `\p{…}`: the common general categories, by a character of each. */
  #property(negated: boolean): Node {
    if (this.#next() !== '{') throw new UnsupportedPattern();
    const end = this.#chars.indexOf('}', this.#at);
    if (end === -1) throw new UnsupportedPattern();
    const name = this.#chars
      .slice(this.#at, end)
      .join('')
      .replace(/^(General_Category|gc)=/, '');
    this.#at = end + 1;
    const example = PROPERTY_EXAMPLES[name];
    if (example === undefined) throw new UnsupportedPattern();
    const ranges: Range[] = [[code(example), code(example)]];
    return { kind: 'set', ranges, negated };
  }

  #hex(length: number): number {
    const digits = this.#chars.slice(this.#at, this.#at + length).join('');
    this.#at += length;
    return parseHex(digits);
  }

  #peek(): string | undefined {
    return this.#chars[this.#at];
  }

  #next(): string {
    const char = this.#chars[this.#at++];
    if (char === undefined) throw new UnsupportedPattern();
    return char;
  }
}

const PROPERTY_EXAMPLES: Readonly<Record<string, string>> = {
  L: 'a',
  Letter: 'a',
  Ll: 'a',
  Lowercase_Letter: 'a',
  Lu: 'A',
  Uppercase_Letter: 'A',
  N: '0',
  Nd: '0',
  Number: '0',
  Decimal_Number: '0',
  P: '.',
  Punctuation: '.',
  Z: ' ',
  Zs: ' ',
  Separator: ' ',
};

function parseHex(digits: string): number {
  if (!/^[0-9a-fA-F]{1,6}$/.test(digits)) throw new UnsupportedPattern();
  return Number.parseInt(digits, 16);
}

function sample(node: Node, choose: Choose, groups: string[]): string {
  switch (node.kind) {
    case 'empty':
      return '';
    case 'literal':
      return String.fromCodePoint(node.codePoint);
    case 'set':
      return pickFrom(node, choose);
    case 'sequence':
      return node.items.map((item) => sample(item, choose, groups)).join('');
    case 'alternation':
      return sample(node.options[choose(node.options.length)]!, choose, groups);
    case 'group': {
      const text = sample(node.node, choose, groups);
      if (node.index !== undefined) groups[node.index] = text;
      return text;
    }
    case 'repeat': {
      const span = node.max === Infinity ? OPEN_REPEATS : Math.min(node.max - node.min, OPEN_REPEATS);
      const count = node.min + choose(span + 1);
      let text = '';
      for (let i = 0; i < count; i++) text += sample(node.node, choose, groups);
      return text;
    }
    case 'backreference':
      return groups[node.index] ?? '';
  }
}

/** A character of the set: from its ranges, or (negated) the first printable one outside them. */
function pickFrom(node: { readonly ranges: readonly Range[]; readonly negated: boolean }, choose: Choose): string {
  const inside = (point: number) => node.ranges.some(([low, high]) => point >= low && point <= high);
  if (!node.negated) {
    if (node.ranges.length === 0) throw new UnsupportedPattern();
    const [low, high] = node.ranges[choose(node.ranges.length)]!;
    return String.fromCodePoint(low + choose(Math.min(high - low + 1, 26)));
  }
  const candidates: number[] = [];
  for (const [low, high] of PRINTABLE) {
    for (let point = low; point <= high && candidates.length < 26; point++) if (!inside(point)) candidates.push(point);
  }
  if (candidates.length === 0) throw new UnsupportedPattern();
  return String.fromCodePoint(candidates[choose(candidates.length)]!);
}
