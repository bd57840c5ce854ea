/**
 * Articles from a CSV file: a header row naming the fields, then one article per record, read by
 * csv-parse (an optional package) as the bytes come.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { loadOptional } from '../optional-package.ts';
import type { Article } from './article.ts';
import { hasField } from './article-record.ts';
import { LineError, MAX_LINE_BYTES, readLines } from './lines.ts';
import { readArticlesWith, type ExpectedField, type InputRecord, type ReadArticlesOptions } from './read-articles.ts';

/**
 * Streams the articles of a CSV file (RFC 4180) — a path, or a byte stream — one per record, in order.
 *
 * The first row names the fields; each record is the object of those names and its cells (every
 * value a string), checked as a line of {@link readArticlesJsonl} is: an `id` column is needed
 * (a record without one is `missing "id"`, as a JSONL line without one is), `content`, `title`,
 * `url`, `source` are read as there, and every column is the article's `fields`, which the tasks'
 * placeholders read (flat: a column is one field, `{{meta.author}}` finds none). Quoted fields may
 * hold commas, doubled quotes and newlines; an error names the line the record starts on. Blank
 * lines are skipped, CRLF line endings (also inside a quoted field, which becomes LF) and a leading
 * byte-order mark are accepted, and an empty file is valid input with no articles.
 *
 * A record with more or fewer cells than the header is a bad record (`skipInvalid` skips it); a
 * header that is not one (an empty or a repeated name), or a quote never closed or misplaced, ends
 * the reading with an `InputError` even with `skipInvalid`, since the records after it cannot be
 * told apart. A line must be valid UTF-8 and at most {@link MAX_LINE_BYTES} long, a record as
 * long at most: memory holds one record (and the ids seen, for duplicates), never the file.
 *
 * Needs the `csv-parse` package: without it, iteration rejects with a `MissingPackageError`.
 * Throws `TypeError` at once for a `source` that is neither a non-empty path nor a byte stream, or a bad option.
 */
export function readArticlesCsv(source: string | AsyncIterable<Uint8Array>, options: ReadArticlesOptions = {}): AsyncIterable<Article> {
  return readArticlesWith(csvRecords, source, options);
}

/** A record as the parser gives it with `raw` and `info`. */
interface ParsedRecord {
  readonly record: readonly string[];
  readonly raw: string;
  readonly info: { readonly lines: number };
}

async function* csvRecords(
  chunks: AsyncIterable<Uint8Array>,
  expectedFields: readonly ExpectedField[],
): AsyncGenerator<InputRecord, void, undefined> {
  const { parse } = await loadOptional('csv-parse', 'reading CSV input', () => import('csv-parse'));
  const parser = parse({
    bom: true,
    skip_empty_lines: true,
    // Checked below, as a bad record rather than the end of the reading.
    relax_column_count: true,
    max_record_size: MAX_LINE_BYTES,
    // Each record with its raw text and the line it ended on: where it started, for the messages.
    raw: true,
    info: true,
  });
  // Lines read strictly (UTF-8, the line cap) and given to the parser with the newline they had.
  async function* text(): AsyncGenerator<string, void, undefined> {
    for await (const { text, complete } of readLines(chunks, MAX_LINE_BYTES)) yield complete ? `${text}\n` : text;
  }
  const feeding = pipeline(Readable.from(text()), parser);
  // A failure of the feeding reaches the loop below as the parser's own error.
  feeding.catch(() => {});
  let header: readonly string[] | undefined;
  try {
    for await (const { record: cells, raw, info } of parser as AsyncIterable<ParsedRecord>) {
      const line = startLine(info.lines, raw);
      // A whitespace-only line is blank, as in a JSONL file.
      if (cells.length === 1 && cells[0]!.trim() === '') continue;
      if (header === undefined) {
        header = checkHeader(cells, line, expectedFields);
        continue;
      }
      if (cells.length !== header.length) {
        yield { line, reason: `expected ${header.length} fields (the header's), got ${cells.length}` };
        continue;
      }
      const value: Record<string, string> = {};
      for (let i = 0; i < header.length; i++) value[header[i]!] = cells[i]!;
      yield { line, value };
    }
  } catch (error) {
    const { code, lines, raw } = (error ?? {}) as { code?: unknown; lines?: unknown; raw?: unknown };
    if (typeof code !== 'string' || !code.startsWith('CSV_') || typeof lines !== 'number') throw error;
    throw new LineError(startLine(lines, typeof raw === 'string' ? raw : ''), csvProblem(code, (error as Error).message));
  } finally {
    parser.destroy();
  }
}

/** The header's names, checked: each non-empty and said once, and each field the tasks read among them. */
function checkHeader(cells: readonly string[], line: number, expectedFields: readonly ExpectedField[]): readonly string[] {
  const names = cells.map((cell) => cell.trim());
  names.forEach((name, index) => {
    if (name === '') throw new LineError(line, `the header's column ${index + 1} has no name`);
    if (names.indexOf(name) !== index) throw new LineError(line, `the header names "${name}" twice`);
  });
  const columns = Object.fromEntries(names.map((name) => [name, '']));
  for (const { field, task } of expectedFields) {
    if (!hasField(columns, field.split('.'))) {
      throw new LineError(line, `the header has no column "${field}" that task ${task}'s prompt reads ({{${field}}})`);
    }
  }
  return names;
}

/**
 * The line a record starts on: the parser counts the line it ended on, and the raw text holds the
 * newlines of the record itself (after any blank lines before it, and before the one that ends it).
 */
function startLine(endLine: number, raw: string): number {
  const body = raw.replace(/^[\r\n]+/, '').replace(/\r?\n$/, '');
  let newlines = 0;
  for (let at = body.indexOf('\n'); at !== -1; at = body.indexOf('\n', at + 1)) newlines++;
  return Math.max(1, endLine - newlines);
}

/** What a csv-parse error says, without its own `at line N` (the message names the line already). */
function csvProblem(code: string, message: string): string {
  if (code === 'CSV_QUOTE_NOT_CLOSED') return 'invalid CSV (a quoted field is never closed)';
  if (code === 'CSV_MAX_RECORD_SIZE') return `record too long (over ${MAX_LINE_BYTES} characters)`;
  return `invalid CSV (${message.replace(/ (at|on) line \d+.*$/, '').replace(/^[^:]*: /, '')})`;
}
