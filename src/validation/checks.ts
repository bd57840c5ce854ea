/**
 * The checks every public constructor and function runs on its arguments, with one message form:
 * `Expected <name> to be <what>, got <value>` in a `TypeError` (the p-limit / p-queue habit).
 *
 * Validation happens at the edges — the CLI, the config file, input lines, public constructors —
 * and the code inside trusts the types it is handed.
 */

const MAX_SHOWN_CHARS = 60;

/**
 * A value as a message shows it: strings quoted and escaped as JSON (so bytes from a bad input
 * never reach a terminal raw), small arrays and plain objects as JSON, numbers, booleans, null and
 * undefined as written, anything else by its type. Long renderings are cut with an ellipsis.
 */
export function show(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return clip(JSON.stringify(value));
    case 'function':
      return 'function';
    case 'object': {
      if (value === null) return 'null';
      const prototype = Object.getPrototypeOf(value);
      if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) return 'object';
      try {
        return clip(JSON.stringify(value));
      } catch {
        return Array.isArray(value) ? 'array' : 'object';
      }
    }
    default:
      return String(value);
  }
}

function clip(text: string): string {
  return text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS - 3)}...` : text;
}

/** The error every check throws: `Expected ${name} to be ${what}, got ${show(value)}`. */
export function expected(name: string, what: string, value: unknown): TypeError {
  return new TypeError(`Expected ${name} to be ${what}, got ${show(value)}`);
}

export function checkObject(name: string, value: unknown): asserts value is object {
  if (value === null || typeof value !== 'object') throw expected(name, 'an object', value);
}

export function checkFunction(name: string, value: unknown): asserts value is (...args: never[]) => unknown {
  if (typeof value !== 'function') throw expected(name, 'a function', value);
}

export function checkBoolean(name: string, value: unknown): asserts value is boolean {
  if (typeof value !== 'boolean') throw expected(name, 'a boolean', value);
}

/** A string: non-empty unless `allowEmpty` (a text may be blank where a name may not). */
export function checkString(name: string, value: unknown, options: { readonly allowEmpty?: boolean } = {}): asserts value is string {
  const allowEmpty = options.allowEmpty === true;
  if (typeof value !== 'string' || (value === '' && !allowEmpty)) {
    throw expected(name, allowEmpty ? 'a string' : 'a non-empty string', value);
  }
}

/** A whole number in [min, max] (a safe integer; `max` may be `Infinity` to allow it too). */
export function checkInteger(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): asserts value is number {
  const ok = typeof value === 'number' && (Number.isSafeInteger(value) || value === max) && value >= min && value <= max;
  if (!ok) {
    if (min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER) throw expected(name, 'a safe integer', value);
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : max === Infinity ? `>= ${min} or Infinity` : `in [${min}, ${max}]`;
    throw expected(name, `an integer ${range}`, value);
  }
}

export interface NumberRange {
  /** Smallest allowed value. @default -Infinity */
  readonly min?: number;
  /** Whether `min` itself is refused. @default false */
  readonly minExclusive?: boolean;
  /** Largest allowed value. @default Infinity */
  readonly max?: number;
  /** Whether `max` itself is refused. @default false */
  readonly maxExclusive?: boolean;
  /** Refuse `Infinity` (and `-Infinity`). @default true */
  readonly finite?: boolean;
  /** What the number counts, said in parentheses after the range: `ms`, `calls per second`. */
  readonly unit?: string;
}

/** A number (never NaN) in the range; finite unless `finite: false`. */
export function checkNumber(name: string, value: unknown, range: NumberRange = {}): asserts value is number {
  const { min = -Infinity, minExclusive = false, max = Infinity, maxExclusive = false, finite = true, unit } = range;
  const ok =
    typeof value === 'number' &&
    !Number.isNaN(value) &&
    (!finite || Number.isFinite(value)) &&
    (minExclusive ? value > min : value >= min) &&
    (maxExclusive ? value < max : value <= max);
  if (ok) return;
  const bounds: string[] = [];
  if (min > -Infinity && max < Infinity) bounds.push(`in ${minExclusive ? '(' : '['}${min}, ${max}${maxExclusive ? ')' : ']'}`);
  else if (min > -Infinity) bounds.push(`${minExclusive ? '>' : '>='} ${min}`);
  else if (max < Infinity) bounds.push(`${maxExclusive ? '<' : '<='} ${max}`);
  const what = `${finite ? 'a finite number' : 'a number'}${bounds.length > 0 ? ` ${bounds[0]}` : ''}${unit === undefined ? '' : ` (${unit})`}`;
  throw expected(name, what, value);
}

/** A span of time in ms: finite, >= 0 (or > 0 with `positive`). */
export function checkDurationMs(name: string, value: unknown, options: { readonly positive?: boolean } = {}): asserts value is number {
  checkNumber(name, value, { min: 0, minExclusive: options.positive === true, unit: 'ms' });
}

export function checkOneOf<T>(name: string, value: unknown, choices: readonly T[]): asserts value is T {
  if (!choices.includes(value as T)) throw expected(name, `one of ${choices.map((choice) => show(choice)).join(', ')}`, value);
}

/** Something with `now()` and `setTimer()`: a `Clock`. */
export function checkClock(name: string, value: unknown): void {
  const clock = value as { now?: unknown; setTimer?: unknown } | null;
  if (clock === null || typeof clock !== 'object' || typeof clock.now !== 'function' || typeof clock.setTimer !== 'function') {
    throw expected(name, 'a Clock', value);
  }
}
