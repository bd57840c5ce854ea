// Where the articles of a run come from: generated from the seed, a JSONL, JSON or CSV file checked
// in full up front, or a stream (standard input, a pipe, a FIFO) checked as it is read.
import { extname } from 'node:path';
import { stat } from 'node:fs/promises';
import {
  generateArticles,
  InputError,
  readArticlesCsv,
  readArticlesJson,
  readArticlesJsonl,
  type Article,
  type ExpectedField,
  type InputIssue,
  type ReadArticlesOptions,
  type TaskSet,
} from '../src/index.ts';
import { UsageError } from './usage-error.ts';
import type { InputFormat, RunFlags } from './run-options.ts';

const READERS: Readonly<
  Record<InputFormat, (source: string | AsyncIterable<Uint8Array>, options: ReadArticlesOptions) => AsyncIterable<Article>>
> = {
  jsonl: readArticlesJsonl,
  json: readArticlesJson,
  csv: readArticlesCsv,
};

/** What a person typing articles at a terminal is told to type. */
const TYPED: Readonly<Record<InputFormat, string>> = {
  jsonl: 'one JSON object per line',
  json: 'one JSON array of objects',
  csv: 'a header row, then one article per line',
};

/** --input-format, or else the file's extension: `.csv`, `.json`; anything else (and standard input) is JSON Lines. */
export function inputFormat(input: string, format: InputFormat | undefined): InputFormat {
  if (format !== undefined) return format;
  const extension = extname(input).toLowerCase();
  return extension === '.csv' ? 'csv' : extension === '.json' ? 'json' : 'jsonl';
}

/** Each field the tasks' prompts read, with the first task that reads it: what the input is checked for before the first call. */
export function expectedFields(tasks: TaskSet): ExpectedField[] {
  const fields = new Map<string, string>();
  for (const task of tasks.tasks) {
    for (const placeholder of task.template.placeholders) {
      if (placeholder.from === 'input' && !fields.has(placeholder.text)) fields.set(placeholder.text, task.name);
    }
  }
  return [...fields].map(([field, task]) => ({ field, task }));
}

/**
 * Names of this process's own standard input. They are read through it rather than opened anew:
 * a program that started us with a socket for stdin (as Node's spawn does) cannot be reopened by name.
 */
const STDIN_PATHS: readonly string[] = ['/dev/stdin', '/dev/fd/0', '/proc/self/fd/0'];

/** How many skipped lines are named one by one before only the count is said. */
const NAMED_SKIPS = 10;

export interface RunInput {
  /** What the input is called in messages: a path, `stdin`, or `generated`. */
  readonly name: string;
  /** Articles the input holds; undefined for a stream, which can be read only once and is not counted ahead. */
  readonly count: number | undefined;
  /** Invalid lines skipped so far (with --skip-invalid). */
  skipped(): number;
  /**
   * The articles, for one run. A file or generated articles can be opened again (a sweep runs them
   * several times); a stream only once.
   */
  open(): Iterable<Article> | AsyncIterable<Article>;
  /** Whether `open()` may be called more than once. */
  readonly repeatable: boolean;
}

/**
 * The input the flags name. A regular file is read once up front, so that a bad line fails the
 * run before any call is spent (`InputError`, exit 2); a stream cannot be read twice, so it is
 * checked as it streams and a bad line stops the run there. `--skip-invalid` skips bad lines
 * either way, saying which; an input whose every line was skipped is an `InputError` too, and so
 * is one that holds no article at all — an upstream export that produced nothing must not pass
 * for a day's work done: a file is refused before anything is touched, a stream at its end.
 * `fields` (the tasks' placeholders) are checked at a CSV header and the first article.
 */
export async function openInput(
  flags: Pick<RunFlags, 'input' | 'inputFormat' | 'skipInvalid' | 'articles' | 'seed'>,
  warn: (text: string) => void,
  fields: readonly ExpectedField[] = [],
): Promise<RunInput> {
  const { input, skipInvalid } = flags;
  // With --skip-invalid, a line that lacks a field the tasks read is skipped like any bad line;
  // without, the first article must have them all (the input lacks the field outright), and a
  // later one that lacks one fails alone, a dead letter naming the field, before any call.
  const options = { skipInvalid, requiredFields: skipInvalid ? fields.map(({ field }) => field) : [], expectedFields: fields };
  if (input === undefined) {
    const [first] = generateArticles(1, { seed: flags.seed });
    const lacking = fields.find(({ field }) => !Object.hasOwn(first!, field));
    if (lacking !== undefined) {
      throw new UsageError(
        `task ${lacking.task}'s prompt reads {{${lacking.field}}}, which generated articles do not have (${Object.keys(first!).join(', ')}): give --input a file that has it`,
      );
    }
    return {
      name: 'generated',
      count: flags.articles,
      skipped: () => 0,
      open: () => generateArticles(flags.articles, { seed: flags.seed }),
      repeatable: true,
    };
  }
  if (input.trim() === '') throw new UsageError("--input needs a file name, or '-' for standard input");
  const format = inputFormat(input, flags.inputFormat);
  const read = READERS[format];
  let skipped = 0;
  const onInvalid = ({ path, line, reason }: InputIssue) => {
    skipped++;
    if (skipped <= NAMED_SKIPS) warn(`warning: skipping ${path}:${line}: ${reason}`);
    else if (skipped === NAMED_SKIPS + 1) warn('warning: skipping more invalid lines; the summary counts them');
  };
  if (input === '-' || STDIN_PATHS.includes(input)) {
    // A person at a terminal would otherwise watch a progress line stuck at 0 articles.
    if (process.stdin.isTTY === true) {
      warn(`reading articles from standard input, the terminal: ${TYPED[format]}, Ctrl-D to end (or pipe a file in)`);
    }
    const name = input === '-' ? 'stdin' : input;
    return {
      name,
      count: undefined,
      skipped: () => skipped,
      open: () => someValid(read(process.stdin, { ...options, name, onInvalid }), name, () => skipped),
      repeatable: false,
    };
  }
  // Only a pipe, a FIFO or a device is read as a stream; a path that cannot be looked at (or a
  // directory) is read as a file, whose reader says why it cannot be read.
  const stream = await stat(input).then(
    (stats) => stats.isFIFO() || stats.isCharacterDevice() || stats.isSocket(),
    () => false,
  );
  if (stream) {
    // A FIFO, /dev/stdin, a process substitution: whatever is read is gone.
    return {
      name: input,
      count: undefined,
      skipped: () => skipped,
      open: () => someValid(read(input, { ...options, onInvalid }), input, () => skipped),
      repeatable: false,
    };
  }
  let count = 0;
  for await (const article of read(input, { ...options, onInvalid })) {
    void article;
    count++;
  }
  if (count === 0) throw skipped > 0 ? noneValid(input, skipped) : new InputError({ path: input, reason: 'holds no article' });
  const checkedSkips = skipped;
  // The file was checked in full, duplicates included: without --skip-invalid there are none, and
  // the run need not keep every id. With it, the same lines are skipped again, quietly.
  return {
    name: input,
    count,
    skipped: () => checkedSkips,
    open: () => read(input, { ...options, checkDuplicates: skipInvalid }),
    repeatable: true,
  };
}

/** The articles of a stream, or an `InputError` at its end when it held none (or every line was skipped): a run of nothing is not a success. */
async function* someValid(articles: AsyncIterable<Article>, name: string, skipped: () => number): AsyncGenerator<Article, void, undefined> {
  let count = 0;
  for await (const article of articles) {
    count++;
    yield article;
  }
  if (count > 0) return;
  throw skipped() > 0 ? noneValid(name, skipped()) : new InputError({ path: name, reason: 'ended before any article was read' });
}

function noneValid(name: string, skipped: number): InputError {
  return new InputError({
    path: name,
    reason: `no valid article read: all ${skipped} ${skipped === 1 ? 'line was' : 'lines were'} invalid and skipped`,
  });
}
