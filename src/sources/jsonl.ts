/**
 * Articles from a JSON Lines file: a stream, one article per line, checked as it is read.
 */
import type { Article } from './article.ts';
import { MAX_LINE_BYTES, readLines } from './lines.ts';
import { readArticlesWith, type InputRecord, type ReadArticlesOptions } from './read-articles.ts';

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
export function readArticlesJsonl(source: string | AsyncIterable<Uint8Array>, options: ReadArticlesOptions = {}): AsyncIterable<Article> {
  return readArticlesWith(jsonlRecords, source, options);
}

async function* jsonlRecords(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<InputRecord, void, undefined> {
  for await (const { text, number } of readLines(chunks, MAX_LINE_BYTES)) {
    if (text.trim() === '') continue;
    yield parseJson(text, number);
  }
}

/** The value `text` holds, or why it holds none: `invalid JSON (…)`. */
export function parseJson(text: string, line: number): InputRecord {
  try {
    return { line, value: JSON.parse(text) };
  } catch (error) {
    return { line, reason: `invalid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
}
