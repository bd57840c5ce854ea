import { createReadStream } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { NANO_USD } from '../quota/budget.ts';
import { LineError, readLines } from '../sources/lines.ts';
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
  /** The articles that succeeded, id → their title (to tell a different input from the same one). */
  readonly succeeded: ReadonlyMap<string, string>;
  /** Results dropped to be run again: failed and cancelled ones. */
  readonly dropped: number;
  /**
   * Of those, the outputs they had, id → task → output (the last line of an id wins): a resumed
   * run keeps them and runs only the tasks that are missing.
   */
  readonly partial: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** The last line was cut short (the run was killed mid-write) and was dropped. */
  readonly truncatedLastLine: boolean;
  /**
   * What the file's lines say was spent, in USD: the sum of their `costUsd`, the lines of articles
   * that did not finish included — the calls they made were billed too. 0 without prices.
   */
  readonly spentUsd: number;
}

/** How {@link keepSucceeded} rewrites a results file. */
export interface KeepSucceededOptions {
  /**
   * Keep the last line of each article that did not succeed too (moved to the end), its `costUsd`
   * the sum of that article's lines — and a success's line the sum of its article's lines before
   * it — so that the file keeps each article once and still says all that was spent.
   * @default false (those lines are dropped)
   */
  readonly keepUnfinished?: boolean | undefined;
}

/** Characters of kept lines gathered before each write. */
const WRITE_CHUNK_CHARS = 64 * 1024;

/**
 * Rewrites the results file at `path` to hold only the results of articles that succeeded (and,
 * with `keepUnfinished`, the last of each other article's), and says which those are: what a
 * resumed run skips, and what the file says was spent. The rewrite is crash-safe — the kept lines go
 * to a temporary file in the same folder, which is flushed to disk and then renamed over the
 * original — so a process killed at any instant leaves either the old file or the new one, each
 * valid, and a further resume completes it. A last line cut short by a kill is dropped (said in
 * `truncatedLastLine`); a bad line anywhere else is a {@link ResultsFileError}. A missing file is
 * an empty one.
 */
export async function keepSucceeded(path: string, options: KeepSucceededOptions = {}): Promise<KeptResults> {
  const keepUnfinished = options.keepUnfinished === true;
  const succeeded = new Map<string, string>();
  const partial = new Map<string, Readonly<Record<string, unknown>>>();
  // With keepUnfinished: each unfinished article's last line, and what its lines cost in all.
  const unfinished = new Map<string, { text: string; costNanoUsd: number }>();
  let spentNanoUsd = 0;
  let dropped = 0;
  let truncatedLastLine = false;
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(temporary, 'w');
    // Kept lines go out in chunks: a results file of a million lines is not a million writes.
    let pending = '';
    try {
      for await (const { text, number, complete } of readLines(createReadStream(path))) {
        if (text.trim() === '') continue;
        const result = parseResult(text);
        if (result === undefined) {
          if (!complete) {
            truncatedLastLine = true;
            break;
          }
          throw new ResultsFileError(path, number, 'not a result line (expected a JSON object with "id" and "status")');
        }
        const costNanoUsd = toNano(result.costUsd);
        spentNanoUsd += costNanoUsd;
        if (result.status === 'succeeded' && !succeeded.has(result.id)) {
          succeeded.set(result.id, result.title);
          const before = unfinished.get(result.id);
          unfinished.delete(result.id);
          pending += `${before === undefined ? text : withCost(text, before.costNanoUsd + costNanoUsd)}\n`;
          if (pending.length >= WRITE_CHUNK_CHARS) {
            await handle.write(pending);
            pending = '';
          }
        } else {
          dropped++;
          if (keepUnfinished && !succeeded.has(result.id)) {
            unfinished.set(result.id, { text, costNanoUsd: (unfinished.get(result.id)?.costNanoUsd ?? 0) + costNanoUsd });
          }
          if (result.outputs !== undefined && Object.keys(result.outputs).length > 0) partial.set(result.id, result.outputs);
          else partial.delete(result.id);
        }
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { succeeded, dropped, partial, truncatedLastLine, spentUsd: 0 };
      if (error instanceof LineError) throw new ResultsFileError(path, error.line, error.reason);
      if (error instanceof ResultsFileError) throw error;
      // Reading failed (a folder, no permission): said with the file's name.
      throw new OutputError(path, error as Error, 'read');
    }
    for (const { text, costNanoUsd } of unfinished.values()) pending += `${withCost(text, costNanoUsd)}\n`;
    await handle.write(pending);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temporary, path);
    for (const id of succeeded.keys()) partial.delete(id);
    return { succeeded, dropped, partial, truncatedLastLine, spentUsd: spentNanoUsd / NANO_USD };
  } finally {
    await handle?.close();
    await rm(temporary, { force: true });
  }
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

function parseResult(
  text: string,
): { id: string; status: string; title: string; costUsd?: number; outputs?: Readonly<Record<string, unknown>> } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { id, status, title, outputs, costUsd } = (value ?? {}) as Record<string, unknown>;
  if (typeof id !== 'string' || typeof status !== 'string') return undefined;
  const kept =
    outputs !== null && typeof outputs === 'object' && !Array.isArray(outputs) ? (outputs as Record<string, unknown>) : undefined;
  return {
    id,
    status,
    title: typeof title === 'string' ? title : '',
    ...(kept !== undefined && { outputs: kept }),
    ...(typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd >= 0 && { costUsd }),
  };
}
