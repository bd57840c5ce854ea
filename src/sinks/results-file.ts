import { createReadStream } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { NANO_USD } from '../quota/budget.ts';
import { LineError, readLines, type Line } from '../sources/lines.ts';
import { OutputError } from './jsonl-writer.ts';
import type { KeepSucceededOptions, KeptResults } from './result-store.ts';
import { NONE, TakeUpTally, toNano, type ArticleResults } from './take-up.ts';

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
  const tally = new TakeUpTally(options.keepUnfinished === true);
  const read = await lastLines(path, options.redo);
  if (read === undefined) return tally.kept(false);
  // Each article's last line, in the file's order: the second reading walks them in step.
  const last = [...read.last.values()].sort((a, b) => a.line - b.line);
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(temporary, 'w');
    // Kept lines go out in chunks: a results file of a million lines is not a million writes.
    let pending = '';
    let next = 0;
    for await (const { text, number } of readResultLines(path)) {
      if (next === last.length) break;
      const article = last[next]!;
      if (article.line !== number) continue;
      next++;
      // Only an earlier line's cost to add, or outputs to keep, take the line apart again.
      const { keep, costNanoUsd, unknownNanoUsd } = tally.add(article, () => parseResult(text)!.outputs ?? {});
      if (!keep) continue;
      pending += `${costNanoUsd === undefined ? text : withCost(text, costNanoUsd, unknownNanoUsd ?? 0)}\n`;
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
    return tally.kept(read.truncatedLastLine);
  } catch (error) {
    throw error instanceof ResultsFileError || error instanceof OutputError ? error : new OutputError(path, error as Error, 'read');
  } finally {
    await handle?.close();
    await rm(temporary, { force: true });
  }
}

/** What the first reading keeps of an article: what to do with it, at its last line. */
interface LastLine extends ArticleResults {
  /** The last line's number. */
  readonly line: number;
}

/**
 * The first reading, a line at a time: each article's last line — its number, its status, what
 * `redo` says of it — and what all its lines cost, by id in the order of the file's first line of
 * each; how many result lines there are, and whether the last line was cut short (it then ends the
 * reading); undefined when there is no file. A line in the middle that is not a result is a
 * {@link ResultsFileError}.
 */
async function lastLines(
  path: string,
  redo: KeepSucceededOptions['redo'],
): Promise<{ readonly last: Map<string, LastLine>; readonly truncatedLastLine: boolean } | undefined> {
  const last = new Map<string, LastLine>();
  try {
    for await (const { text, number, complete } of readResultLines(path)) {
      if (text.trim() === '') continue;
      const result = parseResult(text);
      if (result === undefined) {
        if (!complete) return { last, truncatedLastLine: true };
        throw new ResultsFileError(path, number, 'not a result line (expected a JSON object with "id" and "status")');
      }
      const { id } = result;
      const outputs = result.outputs ?? {};
      const again = redo?.({ id, outputs, fingerprints: result.fingerprints }) ?? NONE;
      const before = last.get(id);
      last.set(id, {
        id,
        line: number,
        results: (before?.results ?? 0) + 1,
        costNanoUsd: (before?.costNanoUsd ?? 0) + toNano(result.costUsd),
        unknownNanoUsd: (before?.unknownNanoUsd ?? 0) + toNano(result.unknownCostUsd),
        status: result.status,
        title: result.title,
        again,
        dropping: again.length === 0 ? NONE : again.filter((task) => Object.hasOwn(outputs, task)),
      });
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return { last, truncatedLastLine: false };
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

/** The line with its `costUsd` set to `costNanoUsd` and its `unknownCostUsd` to `unknownNanoUsd` (absent at 0; verbatim when it already says so). */
function withCost(text: string, costNanoUsd: number, unknownNanoUsd: number): string {
  const value = JSON.parse(text) as Record<string, unknown>;
  const unknownNow = toNano(value.unknownCostUsd as number | undefined);
  if (toNano(value.costUsd as number | undefined) === costNanoUsd && unknownNow === unknownNanoUsd) return text;
  value.costUsd = costNanoUsd / NANO_USD;
  if (unknownNanoUsd > 0) value.unknownCostUsd = unknownNanoUsd / NANO_USD;
  else delete value.unknownCostUsd;
  return JSON.stringify(value);
}

function parseResult(text: string):
  | {
      id: string;
      status: string;
      title: string;
      costUsd?: number;
      unknownCostUsd?: number;
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
  const { id, status, title, outputs, costUsd, unknownCostUsd, fingerprints } = (value ?? {}) as Record<string, unknown>;
  if (typeof id !== 'string' || typeof status !== 'string') return undefined;
  const kept = isRecord(outputs) ? outputs : undefined;
  return {
    id,
    status,
    title: typeof title === 'string' ? title : '',
    ...(kept !== undefined && { outputs: kept }),
    ...(isRecord(fingerprints) && { fingerprints: fingerprints as Record<string, string> }),
    ...(typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd >= 0 && { costUsd }),
    ...(typeof unknownCostUsd === 'number' && Number.isFinite(unknownCostUsd) && unknownCostUsd >= 0 && { unknownCostUsd }),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
