import { createReadStream } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { NANO_USD } from '../quota/budget.ts';
import { LineError, readLines, type Line } from '../sources/lines.ts';
import { OutputError } from './jsonl-writer.ts';

/** A results file that cannot be taken up again: a line in the middle is not a result. */
export class ResultsFileError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'ResultsFileError';

  constructor(
    /** The results file, as given. */
    readonly path: string,
    /** The line that could not be read. */
    readonly line: number,
    /** What is wrong with the line, in a phrase. */
    readonly reason: string,
  ) {
    super(`${path}:${line}: ${reason}`);
  }
}

/** What a results file held of a run that is to be completed. */
export interface KeptResults {
  /** The articles that succeeded, id → their title (to tell a different input from the same one); not those with outputs to redo. */
  readonly succeeded: ReadonlyMap<string, string>;
  /** Lines dropped: those of failed and cancelled articles, and every line of an article but its last. */
  readonly dropped: number;
  /**
   * The outputs to keep of the articles that are to run again — those that did not succeed, and
   * those with outputs to redo (`redo`) — id → task → output, from the article's last line, less
   * the outputs to redo: a resumed run keeps them and runs only the tasks that are missing.
   */
  readonly partial: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** The articles with outputs to redo (`redo`), id → the tasks of those outputs; none without `redo`. */
  readonly redo: ReadonlyMap<string, readonly string[]>;
  /** The last line was cut short (the run was killed mid-write) and was dropped. */
  readonly truncatedLastLine: boolean;
  /**
   * What the file's lines say was spent, in USD: the sum of their `costUsd`, the lines of articles
   * that did not finish included — the calls they made were billed too. 0 without prices.
   */
  readonly spentUsd: number;
}

/** What a line of a results file holds that {@link KeepSucceededOptions.redo} reads. */
export interface ResultLine {
  /** The article's id. */
  readonly id: string;
  /** Its outputs, by task. */
  readonly outputs: Readonly<Record<string, unknown>>;
  /** The tasks' fingerprints it was written with; absent on a line written before they were recorded. */
  readonly fingerprints: Readonly<Record<string, string>> | undefined;
}

/** How {@link keepSucceeded} rewrites a results file. */
export interface KeepSucceededOptions {
  /**
   * Keep the last line of each article that did not succeed too, its `costUsd` the sum of that
   * article's lines — and a success's line the sum of its article's lines too — so that the file
   * keeps each article once and still says all that was spent.
   * @default false (those lines are dropped)
   */
  readonly keepUnfinished?: boolean | undefined;
  /**
   * The tasks to run again for an article's last line, as the tasks now are: those whose task
   * changed since the line was written and the tasks that depend on them (their outputs are not
   * kept), and any task the line has no output of (one added since). A success with any is taken
   * up as unfinished (its line kept as it is until a run writes a newer one). Asked of every line
   * as it is read; the answer for an article's last line is the one that counts.
   * @default none (every output kept)
   */
  readonly redo?: ((line: ResultLine) => readonly string[]) | undefined;
}

/** Characters of kept lines gathered before each write. */
const WRITE_CHUNK_CHARS = 64 * 1024;

/**
 * Rewrites the results file at `path` to hold, of each article, its last line — the newest
 * outputs: a resumed run appends its lines after the earlier ones — when it succeeded (and, with
 * `keepUnfinished`, when it did not), and says which those are: what a resumed run skips, what it
 * runs again and keeps, and what the file says was spent. The lines stay in the order of each
 * article's last. The rewrite is crash-safe — the kept lines go to a temporary file in the same
 * folder, which is flushed to disk and then renamed over the original — so a process killed at any
 * instant leaves either the old file or the new one, each valid, and a further resume completes it.
 * A last line cut short by a kill is dropped (said in `truncatedLastLine`); a bad line anywhere
 * else is a {@link ResultsFileError}. A missing file is an empty one. The file is read twice: once
 * to find each article's last line and what its lines cost, once to copy the lines kept (taking
 * apart again only those whose cost or outputs change).
 */
export async function keepSucceeded(path: string, options: KeepSucceededOptions = {}): Promise<KeptResults> {
  const keepUnfinished = options.keepUnfinished === true;
  const succeeded = new Map<string, string>();
  const partial = new Map<string, Readonly<Record<string, unknown>>>();
  const redo = new Map<string, readonly string[]>();
  const read = await lastLines(path, options.redo);
  if (read === undefined) return { succeeded, dropped: 0, partial, redo, truncatedLastLine: false, spentUsd: 0 };
  const { truncatedLastLine, resultLines } = read;
  // Each article's last line, in the file's order: the second reading walks them in step.
  const last = [...read.last].sort(([, a], [, b]) => a.line - b.line);
  let spentNanoUsd = 0;
  let dropped = resultLines - last.length;
  for (const [, article] of last) {
    spentNanoUsd += article.costNanoUsd;
    if (article.status !== 'succeeded') dropped++;
  }
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(temporary, 'w');
    // Kept lines go out in chunks: a results file of a million lines is not a million writes.
    let pending = '';
    let next = 0;
    for await (const { text, number } of readResultLines(path)) {
      if (next === last.length) break;
      const [id, article] = last[next]!;
      if (article.line !== number) continue;
      next++;
      // Only an earlier line's cost to add, or outputs to keep, take the line apart again.
      const summed = keepUnfinished && article.lines > 1 ? withCost(text, article.costNanoUsd) : text;
      if (article.status === 'succeeded' && article.again.length === 0) succeeded.set(id, article.title);
      else {
        if (article.dropping.length > 0) redo.set(id, article.dropping);
        const outputs = parseResult(text)!.outputs ?? {};
        const left = article.dropping.length === 0 ? outputs : withoutTasks(outputs, article.dropping);
        if (Object.keys(left).length > 0) partial.set(id, left);
        if (!keepUnfinished && article.status !== 'succeeded') continue;
      }
      pending += `${summed}\n`;
      if (pending.length >= WRITE_CHUNK_CHARS) {
        await handle.write(pending);
        pending = '';
      }
    }
    await handle.write(pending);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temporary, path);
    return { succeeded, dropped, partial, redo, truncatedLastLine, spentUsd: spentNanoUsd / NANO_USD };
  } catch (error) {
    throw error instanceof ResultsFileError || error instanceof OutputError ? error : new OutputError(path, error as Error, 'read');
  } finally {
    await handle?.close();
    await rm(temporary, { force: true });
  }
}

/** What the first reading keeps of an article: its last line and what to do with it, and what all its lines cost. */
export interface LastLine {
  /** The last line's number. */
  readonly line: number;
  /** How many lines the article has. */
  readonly lines: number;
  readonly costNanoUsd: number;
  readonly status: string;
  readonly title: string;
  /** What `redo` said of the last line. */
  readonly again: readonly string[];
  /** Of those, the tasks whose outputs the line holds. */
  readonly dropping: readonly string[];
  /** The outputs the line keeps (all but those of `again`), when `again` asks for any: what a resumed run starts the article from. */
  readonly kept?: Readonly<Record<string, unknown>> | undefined;
}

const NONE: readonly string[] = Object.freeze([]);

/** What {@link lastLines} read of a results file. */
export interface ResultsRead {
  /** Each article's last line, by id, in the order of the file's first line of each. */
  readonly last: Map<string, LastLine>;
  /** Result lines read. */
  readonly resultLines: number;
  /** The last line was cut short (a kill mid-write): it is not counted, and ended the reading. */
  readonly truncatedLastLine: boolean;
  /** Its bytes, to cut it off; 0 when there is none. */
  readonly tornBytes: number;
  /** The last line is whole but has no newline after it: a line appended would run on from it. */
  readonly unterminated: boolean;
}

/**
 * The first reading, a line at a time: each article's last line — its number, its status, what
 * `redo` says of it and the outputs it keeps — and what all its lines cost; how many result lines
 * there are, and whether the last line was cut short (it then ends the reading); undefined when
 * there is no file. A line in the middle that is not a result is a {@link ResultsFileError}.
 */
export async function lastLines(path: string, redo: KeepSucceededOptions['redo']): Promise<ResultsRead | undefined> {
  const last = new Map<string, LastLine>();
  let resultLines = 0;
  let unterminated = false;
  try {
    for await (const { text, number, complete } of readResultLines(path)) {
      if (text.trim() === '') continue;
      const result = parseResult(text);
      if (result === undefined) {
        if (!complete) return { last, resultLines, truncatedLastLine: true, tornBytes: Buffer.byteLength(text), unterminated: false };
        throw new ResultsFileError(path, number, 'not a result line (expected a JSON object with "id" and "status")');
      }
      unterminated = !complete;
      resultLines++;
      const { id } = result;
      const outputs = result.outputs ?? {};
      const again = redo?.({ id, outputs, fingerprints: result.fingerprints }) ?? NONE;
      const dropping = again.length === 0 ? NONE : again.filter((task) => Object.hasOwn(outputs, task));
      const before = last.get(id);
      last.set(id, {
        line: number,
        lines: (before?.lines ?? 0) + 1,
        costNanoUsd: (before?.costNanoUsd ?? 0) + toNano(result.costUsd),
        status: result.status,
        title: result.title,
        again,
        dropping,
        ...(again.length > 0 && { kept: dropping.length === 0 ? outputs : withoutTasks(outputs, dropping) }),
      });
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return { last, resultLines, truncatedLastLine: false, tornBytes: 0, unterminated };
}

/** The file's lines; a line that is too long or not UTF-8 is a {@link ResultsFileError}, a file that cannot be read an `OutputError`. */
async function* readResultLines(path: string): AsyncGenerator<Line, void, undefined> {
  try {
    yield* readLines(createReadStream(path));
  } catch (error) {
    if (error instanceof LineError) throw new ResultsFileError(path, error.line, error.reason);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw error;
    // Reading failed (a folder, no permission): said with the file's name.
    throw new OutputError(path, error as Error, 'read');
  }
}

/** `outputs` without those of `tasks`. */
function withoutTasks(outputs: Readonly<Record<string, unknown>>, tasks: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(outputs).filter(([task]) => !tasks.includes(task)));
}

/** A line's cost in whole nano-dollars (as the budget counts), 0 when it says none. */
function toNano(costUsd: number | undefined): number {
  return costUsd === undefined ? 0 : Math.round(costUsd * NANO_USD);
}

/** The line with its `costUsd` set to `costNanoUsd` (verbatim when it already says so). */
function withCost(text: string, costNanoUsd: number): string {
  const value = JSON.parse(text) as Record<string, unknown>;
  if (toNano(value.costUsd as number | undefined) === costNanoUsd) return text;
  value.costUsd = costNanoUsd / NANO_USD;
  return JSON.stringify(value);
}

function parseResult(text: string):
  | {
      id: string;
      status: string;
      title: string;
      costUsd?: number;
      outputs?: Readonly<Record<string, unknown>>;
      fingerprints?: Readonly<Record<string, string>>;
    }
  | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { id, status, title, outputs, costUsd, fingerprints } = (value ?? {}) as Record<string, unknown>;
  if (typeof id !== 'string' || typeof status !== 'string') return undefined;
  const kept = isRecord(outputs) ? outputs : undefined;
  return {
    id,
    status,
    title: typeof title === 'string' ? title : '',
    ...(kept !== undefined && { outputs: kept }),
    ...(isRecord(fingerprints) && { fingerprints: fingerprints as Record<string, string> }),
    ...(typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd >= 0 && { costUsd }),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
