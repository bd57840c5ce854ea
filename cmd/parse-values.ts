import { Help, InvalidArgumentError, type Command, type Option } from 'commander';
import { DURATION_SYNTAX, parseDuration } from '../src/mechanisms.ts';

// Flag value parsers: each returns the value or throws InvalidArgumentError with a sentence saying
// what the flag accepts, which commander prints on one line after the flag and the value given.
// Each also says in a few words what it accepts, which --help shows beside the flag.

const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/** A flag value parser that says what it accepts (`1 to 100`, `> 0`), for --help. */
export type ValueParser<T> = ((text: string) => T) & { readonly accepts: string };

export function accepting<T>(accepts: string, parse: (text: string) => T): ValueParser<T> {
  return Object.assign(parse, { accepts });
}

/** What an option's value parser accepts, or `undefined` for free text (a file, a URL, a name). */
export function acceptedValues(option: Option): string | undefined {
  return (option.parseArg as Partial<ValueParser<unknown>> | undefined)?.accepts;
}

/**
 * Has `command`'s --help show each flag's accepted values before its default
 * (`--workers <n>  articles processed at once (1 to 100000) (default: 5)`), unless its
 * description says them already. Read when help is shown, so options added later count too.
 */
export function showAcceptedValues(command: Command): Command {
  return command.configureHelp({
    optionDescription(option: Option): string {
      const accepts = acceptedValues(option);
      const described =
        accepts === undefined || option.description.includes(accepts)
          ? option
          : Object.create(option, { description: { value: `${option.description} (${accepts})` } });
      return Help.prototype.optionDescription.call(this, described);
    },
  });
}

/** A whole number in [min, max]. */
export function integer(min: number, max = MAX_COUNT): ValueParser<number> {
  const range = max === MAX_COUNT ? `>= ${min}` : `${min} to ${max}`;
  return accepting(range, (text) => {
    const value = Number(text.trim());
    // Decimal digits, with an exponent if it likes (1e3, 2.5e4 when whole): Number() would also take 0x10 or 0b11.
    if (!/^\s*(\d+(\.\d*)?|\.\d+)(e\+?\d+)?\s*$/i.test(text) || !Number.isInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`Expected a whole number ${max === MAX_COUNT ? range : `from ${range}`}.`);
    }
    return value;
  });
}

/** Calls per second: a number > 0, or `inf` for no limit. */
export const rate: ValueParser<number> = accepting("a number > 0, or 'inf' for no limit", (text) => {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'inf' || trimmed === 'infinity' || trimmed === '+inf') return Infinity;
  // Plain decimals only: Number() would also take 0x10 or 0b11.
  const value = /^[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (Number.isNaN(value)) throw new InvalidArgumentError("Expected calls per second (a number > 0) or 'inf'.");
  if (value <= 0) throw new InvalidArgumentError("Expected calls per second > 0; use 'inf' for no limit.");
  if (!Number.isFinite(value)) throw new InvalidArgumentError("Expected a finite number of calls per second, or 'inf'.");
  return value;
});

/** A Go duration (`500ms`, `1.5s`, `2m3.5s`, `1h30m`, `500us`; `0` alone), returned in ms. */
export function duration(options: { allowZero: boolean; allowInf?: boolean }): ValueParser<number> {
  const range = `${options.allowZero ? '>= 0' : '> 0'}${options.allowInf === true ? ", or 'inf' for never" : ''}`;
  return accepting(range, (text) => {
    if (options.allowInf === true && text.trim() === 'inf') return Infinity;
    const ms = parseDuration(text);
    if (ms === undefined) throw new InvalidArgumentError(`Expected ${DURATION_SYNTAX}${options.allowInf === true ? ", or 'inf'" : ''}.`);
    if (ms < 0 || (ms === 0 && !options.allowZero))
      throw new InvalidArgumentError(`Expected a duration ${options.allowZero ? '>= 0' : '> 0'}.`);
    if (ms > 365 * 24 * 3_600_000) throw new InvalidArgumentError('Expected a duration of at most a year.');
    return ms;
  });
}

/** One of a fixed set of words. */
export function oneOf<T extends string>(choices: readonly T[]): ValueParser<T> {
  return accepting(choices.join(', '), (text) => {
    const value = text.trim() as T;
    if (!choices.includes(value)) throw new InvalidArgumentError(`Expected one of: ${choices.join(', ')}.`);
    return value;
  });
}

/**
 * Accepts Go's single-dash long flags (`-articles=5`, `-rate 3`) by turning them into `--articles=5`.
 * Single-letter flags (`-h`), negative numbers and everything after `--` are left alone.
 */
export function normalizeGoFlags(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((arg, index) => ((end === -1 || index < end) && /^-[a-zA-Z][\w-]+(=|$)/.test(arg) ? `-${arg}` : arg));
}
