/**
 * Articles from a JSON Lines file: a stream, one article per line, checked as it is read.
 */
import { open } from 'node:fs/promises';
import { checkBoolean, checkFunction, checkString, expected, show } from '../validation/checks.ts';
import { fileErrorDetail } from '../validation/file-error.ts';
import type { Article } from './article.ts';
import { LineError, MAX_LINE_BYTES, readLines } from './lines.ts';

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
   * An unreadable file still throws.
   * @default false
   */
  readonly skipInvalid?: boolean;
  /** Told about each skipped line, in file order. Only called when `skipInvalid` is true. @default none */
  readonly onInvalid?: (issue: InputIssue) => void;
  /**
   * Reject (or skip) a repeated id. It costs memory per article (every id is kept, ~80 bytes
   * each), so a second pass over a file already checked can turn it off.
   * @default true
   */
  readonly checkDuplicates?: boolean;
  /** What to call a stream in messages (`stdin:3: invalid JSON`); a path names itself. @default "input" */
  readonly name?: string;
  /**
   * Fields a line must have (dot paths into it: `content`, `meta.author`): one that lacks any is a
   * bad line, `missing field "meta.author"`. What a run's tasks read, for `skipInvalid` to skip
   * the lines they could not run on. @default none
   */
  readonly requiredFields?: readonly string[];
}

/**
 * Streams the articles of a JSON Lines file — a path, or a byte stream such as standard input or
 * a pipe — one per non-blank line, in order.
 *
 * Each line is a JSON object: `id` (a non-empty string, or a safe integer, which becomes its
 * decimal string), and optionally `content` (a string with some non-whitespace text — what the
 * built-in tasks read), `title`, `url`, `source` (strings; absent or null means none, and a missing
 * title becomes ""). Every field, these and any other, is the article's `fields`, which the tasks'
 * placeholders read. Strings are kept verbatim. Blank and whitespace-only lines
 * are skipped, CRLF line endings and a leading byte-order mark are accepted, and an empty file is
 * valid input with no articles. A line must be valid UTF-8 and at most {@link MAX_LINE_BYTES} long.
 *
 * Reads line by line and never holds the file, but does remember every id seen (ids and line
 * numbers only, not articles) so that a duplicate id is caught: memory grows with the number of
 * ids. A duplicate keeps the first occurrence.
 *
 * A path is opened when iteration starts; if it cannot be read (missing, a directory, no
 * permission) the first `next()` rejects with an {@link InputError} whose `line` is undefined.
 * A bad line rejects with an `InputError` naming the line, unless `skipInvalid` is set. Breaking
 * out of the loop closes the file.
 *
 * Throws `TypeError` at once for a `source` that is neither a non-empty path nor a byte stream, or a bad option.
 */
export function readArticlesJsonl(
  source: string | AsyncIterable<Uint8Array>,
  options: ReadArticlesJsonlOptions = {},
): AsyncIterable<Article> {
  if (typeof source === 'string') checkString('source', source);
  else if (source === null || typeof source !== 'object' || !(Symbol.asyncIterator in source))
    throw expected('source', 'a path or a byte stream', source);
  const { skipInvalid = false, onInvalid, checkDuplicates = true, name = 'input', requiredFields = [] } = options;
  checkBoolean('skipInvalid', skipInvalid);
  if (!Array.isArray(requiredFields) || !requiredFields.every((field) => typeof field === 'string' && field !== '')) {
    throw expected('requiredFields', 'an array of field names', requiredFields);
  }
  checkBoolean('checkDuplicates', checkDuplicates);
  if (onInvalid !== undefined) checkFunction('onInvalid', onInvalid);
  const required = requiredFields.map((field) => ({ field, path: field.split('.') }));
  return readArticles(source, typeof source === 'string' ? source : name, skipInvalid, onInvalid, checkDuplicates, required);
}

async function* readArticles(
  source: string | AsyncIterable<Uint8Array>,
  path: string,
  skipInvalid: boolean,
  onInvalid: ((issue: InputIssue) => void) | undefined,
  checkDuplicates: boolean,
  required: readonly { readonly field: string; readonly path: readonly string[] }[],
): AsyncGenerator<Article, void, undefined> {
  let chunks: AsyncIterable<Uint8Array> & { destroy?: () => void };
  if (typeof source === 'string') {
    try {
      // The stream owns the handle from here (autoClose) and closes it when destroyed.
      chunks = (await open(source, 'r')).createReadStream();
    } catch (error) {
      throw unreadable(path, error);
    }
  } else {
    chunks = source;
  }
  const firstLineById = new Map<string, number>();
  try {
    for await (const { text, number } of readLines(chunks, MAX_LINE_BYTES)) {
      if (text.trim() === '') continue;
      const parsed = parseArticleLine(text, required);
      let reason: string | undefined;
      if (typeof parsed === 'string') {
        reason = parsed;
      } else {
        const firstLine = checkDuplicates ? firstLineById.get(parsed.id) : undefined;
        if (firstLine === undefined) {
          if (checkDuplicates) firstLineById.set(parsed.id, number);
          yield parsed;
          continue;
        }
        reason = `duplicate id ${JSON.stringify(parsed.id)} (first seen on line ${firstLine})`;
      }
      if (!skipInvalid) throw new InputError({ path, line: number, reason });
      onInvalid?.({ path, line: number, reason });
    }
  } catch (error) {
    if (error instanceof LineError) throw new InputError({ path, line: error.line, reason: error.reason });
    // Anything not ours came from reading the file (e.g. EISDIR surfaces on the first read).
    throw isInputError(error) ? error : unreadable(path, error);
  } finally {
    if (typeof source === 'string') chunks.destroy?.();
  }
}

/** The article on one line, or the reason the line is not one. */
function parseArticleLine(
  text: string,
  required: readonly { readonly field: string; readonly path: readonly string[] }[],
): Article | string {
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

  const content = record.content ?? undefined;
  if (content !== undefined && typeof content !== 'string') return `"content" must be a string, got ${show(content)}`;
  if (content?.trim() === '') return 'article has no text (empty "content")';

  const title = record.title ?? '';
  if (typeof title !== 'string') return `"title" must be a string, got ${show(title)}`;

  const url = record.url ?? undefined;
  if (url !== undefined && typeof url !== 'string') return `"url" must be a string, got ${show(url)}`;
  const source = record.source ?? undefined;
  if (source !== undefined && typeof source !== 'string') return `"source" must be a string, got ${show(source)}`;

  for (const { field, path } of required) if (!hasField(record, path)) return `missing field "${field}"`;

  return {
    id,
    title,
    ...(content !== undefined && { content }),
    ...(url !== undefined && { url }),
    ...(source !== undefined && { source }),
    // The line as it came, for the tasks' placeholders; the title as read ("" for none).
    fields: { ...record, id, title },
  };
}

/** Whether `record` has a value (null counts) at `path`. */
function hasField(record: Record<string, unknown>, path: readonly string[]): boolean {
  let value: unknown = record;
  for (const segment of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return false;
    value = (value as Record<string, unknown>)[segment];
  }
  return value !== undefined;
}

/** `${path}: cannot read file (CODE: description)`, without Node's `, open '…'` tail. */
function unreadable(path: string, error: unknown): InputError {
  return new InputError({ path, reason: `cannot read file (${fileErrorDetail(error)})` }, { cause: error });
}
