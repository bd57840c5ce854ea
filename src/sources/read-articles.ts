/**
 * What every input format shares: opening a path or taking a byte stream, records checked into
 * articles one at a time, duplicate ids, bad records skipped or thrown, errors naming file and line.
 * A format is only the reader that turns bytes into records (`jsonl.ts`, `json-array.ts`, `csv.ts`).
 */
import { open } from 'node:fs/promises';
import { isMissingPackageError } from '../optional-package.ts';
import { checkBoolean, checkFunction, checkString, expected } from '../validation/checks.ts';
import { fileErrorDetail } from '../validation/file-error.ts';
import type { Article } from './article.ts';
import { articleFromRecord, hasField, type RequiredField } from './article-record.ts';
import { InputError, type InputIssue } from './input-error.ts';
import { LineError } from './lines.ts';

/** A field every article is expected to have because a task's prompt reads it (`{{author}}`). */
export interface ExpectedField {
  /** As the placeholder writes it: `author`, `meta.author`. */
  readonly field: string;
  /** The task whose prompt reads it. */
  readonly task: string;
}

/** How the readers of every format (`readArticlesJsonl`, `readArticlesJson`, `readArticlesCsv`) check what they read. */
export interface ReadArticlesOptions {
  /**
   * Skip bad records (invalid JSON, bad fields, duplicate ids) instead of failing on the first.
   * An unreadable file, and a file whose structure is broken (a JSON array never closed), still throw.
   * @default false
   */
  readonly skipInvalid?: boolean;
  /** Told about each skipped record, in file order. Only called when `skipInvalid` is true. @default none */
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
   * Fields a record must have (dot paths into it: `content`, `meta.author`): one that lacks any is a
   * bad record, `missing field "meta.author"`. What a run's tasks read, for `skipInvalid` to skip
   * the records they could not run on. @default none
   */
  readonly requiredFields?: readonly string[];
  /**
   * Fields the tasks' prompts read, checked once before the first article is yielded: a CSV file's
   * header row must have each as a column, and (unless `skipInvalid`, which skips such records by
   * `requiredFields`) the first article must have each. One missing is an {@link InputError} at
   * that line naming the field and the task: a file that lacks a field outright fails before any
   * call, while an article further on that lacks one is left to fail alone. @default none
   */
  readonly expectedFields?: readonly ExpectedField[];
}

/** One record of an input, at the line it starts on: its value, or why it has none. */
export type InputRecord = { readonly line: number; readonly value: unknown } | { readonly line: number; readonly reason: string };

/**
 * A format: the records of a byte stream, in order. A problem that ends the reading (a structure
 * broken past recovery) throws a {@link LineError}; a bad record is a record with a `reason`.
 */
export type RecordReader = (chunks: AsyncIterable<Uint8Array>, expectedFields: readonly ExpectedField[]) => AsyncIterable<InputRecord>;

/**
 * The articles of `source` (a path, or a byte stream) read with `reader`, checked with `options`.
 * Throws `TypeError` at once for a `source` that is neither a non-empty path nor a byte stream, or a bad option.
 */
export function readArticlesWith(
  reader: RecordReader,
  source: string | AsyncIterable<Uint8Array>,
  options: ReadArticlesOptions,
): AsyncIterable<Article> {
  if (typeof source === 'string') checkString('source', source);
  else if (source === null || typeof source !== 'object' || !(Symbol.asyncIterator in source))
    throw expected('source', 'a path or a byte stream', source);
  const { skipInvalid = false, onInvalid, checkDuplicates = true, name = 'input', requiredFields = [], expectedFields = [] } = options;
  checkBoolean('skipInvalid', skipInvalid);
  if (!Array.isArray(requiredFields) || !requiredFields.every((field) => typeof field === 'string' && field !== '')) {
    throw expected('requiredFields', 'an array of field names', requiredFields);
  }
  if (
    !Array.isArray(expectedFields) ||
    !expectedFields.every(
      (entry: ExpectedField) => typeof entry?.field === 'string' && entry.field !== '' && typeof entry.task === 'string',
    )
  ) {
    throw expected('expectedFields', 'an array of { field, task }', expectedFields);
  }
  checkBoolean('checkDuplicates', checkDuplicates);
  if (onInvalid !== undefined) checkFunction('onInvalid', onInvalid);
  return readArticles(reader, source, {
    path: typeof source === 'string' ? source : name,
    skipInvalid,
    onInvalid,
    checkDuplicates,
    required: requiredFields.map((field) => ({ field, path: field.split('.') })),
    expectedFields,
  });
}

async function* readArticles(
  reader: RecordReader,
  source: string | AsyncIterable<Uint8Array>,
  settings: {
    readonly path: string;
    readonly skipInvalid: boolean;
    readonly onInvalid: ((issue: InputIssue) => void) | undefined;
    readonly checkDuplicates: boolean;
    readonly required: readonly RequiredField[];
    readonly expectedFields: readonly ExpectedField[];
  },
): AsyncGenerator<Article, void, undefined> {
  const { path, skipInvalid, onInvalid, checkDuplicates, required, expectedFields } = settings;
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
  // With skipInvalid a record lacking a field is skipped by `required`: the first article has them all.
  let firstChecked = skipInvalid;
  try {
    for await (const record of reader(chunks, expectedFields)) {
      const { line } = record;
      const parsed = 'reason' in record ? record.reason : articleFromRecord(record.value, required);
      let reason: string | undefined;
      if (typeof parsed === 'string') {
        reason = parsed;
      } else {
        const firstLine = checkDuplicates ? firstLineById.get(parsed.id) : undefined;
        if (firstLine === undefined) {
          if (!firstChecked) {
            firstChecked = true;
            const lacking = expectedFields.find(({ field }) => !hasField(parsed.fields!, field.split('.')));
            if (lacking !== undefined) {
              throw new InputError({
                path,
                line,
                reason: `the first article, ${JSON.stringify(parsed.id)}, has no field "${lacking.field}" that task ${lacking.task}'s prompt reads ({{${lacking.field}}})`,
              });
            }
          }
          if (checkDuplicates) firstLineById.set(parsed.id, line);
          yield parsed;
          continue;
        }
        reason = `duplicate id ${JSON.stringify(parsed.id)} (first seen on line ${firstLine})`;
      }
      if (!skipInvalid) throw new InputError({ path, line, reason });
      onInvalid?.({ path, line, reason });
    }
  } catch (error) {
    if (error instanceof LineError) throw new InputError({ path, line: error.line, reason: error.reason });
    if (isMissingPackageError(error)) throw error;
    // Anything not ours came from reading the file (e.g. EISDIR surfaces on the first read).
    throw error instanceof InputError ? error : unreadable(path, error);
  } finally {
    if (typeof source === 'string') chunks.destroy?.();
  }
}

/** `${path}: cannot read file (CODE: description)`, without Node's `, open '…'` tail. */
function unreadable(path: string, error: unknown): InputError {
  return new InputError({ path, reason: `cannot read file (${fileErrorDetail(error)})` }, { cause: error });
}
