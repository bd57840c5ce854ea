// Where the articles of a run come from: generated from the seed, a JSONL file checked in full up
// front, or a stream (standard input, a pipe, a FIFO) checked as it is read.
import { stat } from 'node:fs/promises';
import { generateArticles, readArticlesJsonl, type Article, type InputIssue } from '../src/index.ts';
import { UsageError, type RunFlags } from './run-options.ts';

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
 * either way, saying which.
 */
export async function openInput(flags: RunFlags, warn: (text: string) => void, taskFields: readonly string[] = []): Promise<RunInput> {
  const { input, skipInvalid } = flags;
  // With --skip-invalid, a line that lacks a field the tasks read is skipped like any bad line;
  // without, its article fails (a dead letter naming the field) before any call.
  const requiredFields = skipInvalid ? taskFields : [];
  if (input === undefined) {
    return {
      name: 'generated',
      count: flags.articles,
      skipped: () => 0,
      open: () => generateArticles(flags.articles, { seed: flags.seed }),
      repeatable: true,
    };
  }
  if (input.trim() === '') throw new UsageError("--input needs a file name, or '-' for standard input");
  let skipped = 0;
  const onInvalid = ({ path, line, reason }: InputIssue) => {
    skipped++;
    if (skipped <= NAMED_SKIPS) warn(`warning: skipping ${path}:${line}: ${reason}`);
    else if (skipped === NAMED_SKIPS + 1) warn('warning: skipping more invalid lines; the summary counts them');
  };
  if (input === '-' || STDIN_PATHS.includes(input)) {
    // A person at a terminal would otherwise watch a progress line stuck at 0 articles.
    if (process.stdin.isTTY === true) {
      warn('reading articles from standard input, the terminal: one JSON object per line, Ctrl-D to end (or pipe a file in)');
    }
    return {
      name: input === '-' ? 'stdin' : input,
      count: undefined,
      skipped: () => skipped,
      open: () => readArticlesJsonl(process.stdin, { name: input === '-' ? 'stdin' : input, skipInvalid, onInvalid, requiredFields }),
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
      open: () => readArticlesJsonl(input, { skipInvalid, onInvalid, requiredFields }),
      repeatable: false,
    };
  }
  let count = 0;
  for await (const article of readArticlesJsonl(input, { skipInvalid, onInvalid, requiredFields })) {
    void article;
    count++;
  }
  const checkedSkips = skipped;
  // The file was checked in full, duplicates included: without --skip-invalid there are none, and
  // the run need not keep every id. With it, the same lines are skipped again, quietly.
  return {
    name: input,
    count,
    skipped: () => checkedSkips,
    open: () => readArticlesJsonl(input, { skipInvalid, checkDuplicates: skipInvalid, requiredFields }),
    repeatable: true,
  };
}
