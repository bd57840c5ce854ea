/**
 * Articles from a JSON Lines file: a stream, one article per line, checked as it is read.
 */
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { checkBoolean, checkFunction, checkString, show } from '../validation/checks.ts';
import type { Article } from './article.ts';

export interface InputIssue {
  readonly path: string;
  readonly line: number;
  readonly reason: string;
}

/**
 * An input file that cannot be used. The message is `${path}:${line}: ${reason}` for a bad line
 * and `${path}: ${reason}` when the file as a whole is unreadable (`line` undefined); `cause`
 * holds the underlying system error, if any.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  readonly path: string;
  readonly line: number | undefined;
  readonly reason: string;

  constructor(issue: { path: string; line?: number | undefined; reason: string }, options?: ErrorOptions) {
    const { path, line, reason } = issue;
    super(line === undefined ? `${path}: ${reason}` : `${path}:${line}: ${reason}`, options);
    this.path = path;
    this.line = line;
    this.reason = reason;
  }
}

export const isInputError = (error: unknown): error is InputError => error instanceof InputError;

export interface ReadArticlesJsonlOptions {
  /**
   * Skip bad lines (invalid JSON, bad fields, duplicate ids) instead of failing on the first.
   * Default false. An unreadable file still throws.
   */
  readonly skipInvalid?: boolean;
  /** Told about each skipped line, in file order. Only called when `skipInvalid` is true. */
  readonly onInvalid?: (issue: InputIssue) => void;
  /**
   * Reject (or skip) a repeated id. Default true. It costs memory per article (every id is kept,
   * ~80 bytes each), so a second pass over a file already checked can turn it off.
   */
  readonly checkDuplicates?: boolean;
}

/**
 * Streams the articles of a JSON Lines file, one per non-blank line, in file order.
 *
 * Each line is a JSON object: `id` (a non-empty string, or a safe integer, which becomes its
 * decimal string), `content` (a string with some non-whitespace text — the thing the LLM reads),
 * and optionally `title`, `url`, `source` (strings; absent or null means none, and a missing title
 * becomes ""). Other fields are ignored. Strings are kept verbatim. Blank and whitespace-only lines
 * are skipped, CRLF line endings and a leading byte-order mark are accepted, and an empty file is
 * valid input with no articles.
 *
 * Reads line by line and never holds the file, but does remember every id seen (ids and line
 * numbers only, not articles) so that a duplicate id is caught: memory grows with the number of
 * ids. A duplicate keeps the first occurrence.
 *
 * The file is opened when iteration starts; if it cannot be read (missing, a directory, no
 * permission) the first `next()` rejects with an {@link InputError} whose `line` is undefined.
 * A bad line rejects with an `InputError` naming the line, unless `skipInvalid` is set. Breaking
 * out of the loop closes the file.
 *
 * Throws `TypeError` at once for a `path` that is not a non-empty string or a bad option.
 */
export function readArticlesJsonl(path: string, options: ReadArticlesJsonlOptions = {}): AsyncIterable<Article> {
  checkString('path', path);
  const { skipInvalid = false, onInvalid, checkDuplicates = true } = options;
  checkBoolean('skipInvalid', skipInvalid);
  checkBoolean('checkDuplicates', checkDuplicates);
  if (onInvalid !== undefined) checkFunction('onInvalid', onInvalid);
  return readLines(path, skipInvalid, onInvalid, checkDuplicates);
}

async function* readLines(
  path: string,
  skipInvalid: boolean,
  onInvalid: ((issue: InputIssue) => void) | undefined,
  checkDuplicates: boolean,
): AsyncGenerator<Article, void, undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw unreadable(path, error);
  }
  // The stream owns the handle from here (autoClose) and closes it when destroyed.
  const stream = handle.createReadStream({ encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  const firstLineById = new Map<string, number>();
  let lineNumber = 0;
  try {
    for await (const text of lines) {
      lineNumber += 1;
      const line = lineNumber === 1 && text.startsWith('\uFEFF') ? text.slice(1) : text;
      if (line.trim() === '') continue;

      const parsed = parseArticleLine(line);
      let reason: string | undefined;
      if (typeof parsed === 'string') {
        reason = parsed;
      } else {
        const firstLine = checkDuplicates ? firstLineById.get(parsed.id) : undefined;
        if (firstLine === undefined) {
          if (checkDuplicates) firstLineById.set(parsed.id, lineNumber);
          yield parsed;
          continue;
        }
        reason = `duplicate id ${JSON.stringify(parsed.id)} (first seen on line ${firstLine})`;
      }
      if (!skipInvalid) throw new InputError({ path, line: lineNumber, reason });
      onInvalid?.({ path, line: lineNumber, reason });
    }
  } catch (error) {
    // Anything not ours came from reading the file (e.g. EISDIR surfaces on the first read).
    throw isInputError(error) ? error : unreadable(path, error);
  } finally {
    lines.close();
    stream.destroy();
  }
}

/** The article on one line, or the reason the line is not one. */
function parseArticleLine(text: string): Article | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `invalid JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected a JSON object, got ${show(value)}`;
  }
  const record = value as Record<string, unknown>;

  const rawId = record.id;
  let id: string;
  if (rawId === undefined) return 'missing "id"';
  if (typeof rawId === 'string') {
    if (rawId.trim() === '') return '"id" must not be empty';
    id = rawId;
  } else if (typeof rawId === 'number' && Number.isSafeInteger(rawId)) {
    id = String(rawId);
  } else {
    // A fractional or huge number would not round-trip to the id the producer meant.
    return `"id" must be a string or a safe integer, got ${show(rawId)}`;
  }

  const content = record.content;
  if (content === undefined || content === null) return 'article has no text (missing "content")';
  if (typeof content !== 'string') return `"content" must be a string, got ${show(content)}`;
  if (content.trim() === '') return 'article has no text (empty "content")';

  const title = record.title ?? '';
  if (typeof title !== 'string') return `"title" must be a string, got ${show(title)}`;

  const url = record.url ?? undefined;
  if (url !== undefined && typeof url !== 'string') return `"url" must be a string, got ${show(url)}`;
  const source = record.source ?? undefined;
  if (source !== undefined && typeof source !== 'string') return `"source" must be a string, got ${show(source)}`;

  return {
    id,
    title,
    content,
    ...(url !== undefined && { url }),
    ...(source !== undefined && { source }),
  };
}

/** `${path}: cannot read file (CODE: description)`, without Node's `, open '…'` tail. */
function unreadable(path: string, error: unknown): InputError {
  let detail = error instanceof Error ? error.message : String(error);
  const syscall = (error as { syscall?: unknown } | null)?.syscall;
  if (typeof syscall === 'string') {
    const tail = detail.lastIndexOf(`, ${syscall}`);
    if (tail > 0) detail = detail.slice(0, tail);
  }
  return new InputError({ path, reason: `cannot read file (${detail})` }, { cause: error });
}
