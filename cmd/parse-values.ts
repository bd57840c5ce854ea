import { InvalidArgumentError } from 'commander';
import { DURATION_SYNTAX, parseDuration } from '../src/index.ts';

// Flag value parsers: each returns the value or throws InvalidArgumentError with a sentence saying
// what the flag accepts, which commander prints on one line after the flag and the value given.

const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/** A whole number in [min, max]. */
export function integer(min: number, max = MAX_COUNT): (text: string) => number {
  return (text) => {
    const value = Number(text.trim());
    // Digits only: Number() would also take 0x10, 1e3 or 0b11.
    if (!/^\s*\d+\s*$/.test(text) || !Number.isInteger(value) || value < min || value > max) {
      const range = max === MAX_COUNT ? `>= ${min}` : `from ${min} to ${max}`;
      throw new InvalidArgumentError(`Expected a whole number ${range}.`);
    }
    return value;
  };
}

/** Calls per second: a number > 0, or `inf` for no limit. */
export function rate(text: string): number {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'inf' || trimmed === 'infinity' || trimmed === '+inf') return Infinity;
  // Plain decimals only: Number() would also take 0x10 or 0b11.
  const value = /^[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (Number.isNaN(value)) throw new InvalidArgumentError("Expected calls per second (a number > 0) or 'inf'.");
  if (value <= 0) throw new InvalidArgumentError("Expected calls per second > 0; use 'inf' for no limit.");
  if (!Number.isFinite(value)) throw new InvalidArgumentError("Expected a finite number of calls per second, or 'inf'.");
  return value;
}

/** A Go duration (`500ms`, `1.5s`, `2m3.5s`, `1h30m`, `500us`; `0` alone), returned in ms. */
export function duration(options: { allowZero: boolean }): (text: string) => number {
  return (text) => {
    const ms = parseDuration(text);
    if (ms === undefined) throw new InvalidArgumentError(`Expected ${DURATION_SYNTAX}.`);
    if (ms < 0 || (ms === 0 && !options.allowZero))
      throw new InvalidArgumentError(`Expected a duration ${options.allowZero ? '>= 0' : '> 0'}.`);
    if (ms > 365 * 24 * 3_600_000) throw new InvalidArgumentError('Expected a duration of at most a year.');
    return ms;
  };
}

/** One of a fixed set of words. */
export function oneOf<T extends string>(choices: readonly T[]): (text: string) => T {
  return (text) => {
    const value = text.trim() as T;
    if (!choices.includes(value)) throw new InvalidArgumentError(`Expected one of: ${choices.join(', ')}.`);
    return value;
  };
}

/**
 * Accepts Go's single-dash long flags (`-articles=5`, `-rate 3`) by turning them into `--articles=5`.
 * Single-letter flags (`-h`), negative numbers and everything after `--` are left alone.
 */
export function normalizeGoFlags(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((arg, index) => ((end === -1 || index < end) && /^-[a-zA-Z][\w-]+(=|$)/.test(arg) ? `-${arg}` : arg));
}
