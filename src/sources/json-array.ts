/**
 * Articles from a JSON file holding one array of article objects (`[{"id": 1, …}, …]`), streamed:
 * the array is cut into its elements as the bytes come, so that only one element is held at a time.
 */
import type { Article } from './article.ts';
import { LineError, MAX_LINE_BYTES, readLines } from './lines.ts';
import { parseJson } from './jsonl.ts';
import { readArticlesWith, type InputRecord, type ReadArticlesOptions } from './read-articles.ts';

/**
 * Streams the articles of a JSON array file — a path, or a byte stream — one per element, in order.
 * Each element is checked as a line of {@link readArticlesJsonl} is (the same fields, the same
 * messages), and an error names the line the element starts on. An element longer than
 * {@link MAX_LINE_BYTES} is an error, not a memory spike; memory otherwise holds one element (and
 * the ids seen, for duplicates), never the file. An empty array (`[]`) is valid input with no
 * articles; an empty file, text before `[` or after `]`, or an array never closed is an
 * `InputError` that `skipInvalid` does not skip, since no element after it can be trusted.
 *
 * Throws `TypeError` at once for a `source` that is neither a non-empty path nor a byte stream, or a bad option.
 */
export function readArticlesJson(source: string | AsyncIterable<Uint8Array>, options: ReadArticlesOptions = {}): AsyncIterable<Article> {
  return readArticlesWith(jsonArrayRecords, source, options);
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/** The elements of the array, each parsed on its own; the structure around them is checked here. */
async function* jsonArrayRecords(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<InputRecord, void, undefined> {
  // before: until `[`; between: before an element (or the `]` of an empty array); element: inside
  // one; ended: after one, before `,` or `]`; after: past `]`.
  let state = 'before' as 'before' | 'between' | 'element' | 'ended' | 'after';
  let text = '';
  let start = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let elements = 0;
  let lastLine = 0;
  for await (const { text: lineText, number } of readLines(chunks, MAX_LINE_BYTES)) {
    lastLine = number;
    let from = 0;
    for (let i = 0; i < lineText.length; i++) {
      const char = lineText[i]!;
      if (state === 'element') {
        if (inString) {
          if (escaped) escaped = false;
          else if (char === '\\') escaped = true;
          else if (char === '"') inString = false;
          continue;
        }
        if (char === '"') inString = true;
        else if (char === '{' || char === '[') depth++;
        else if ((char === '}' || char === ']') && depth > 0) {
          depth--;
          // An object (or array) closed: the element is whole, whatever follows it.
          if (depth === 0) {
            text += lineText.slice(from, i + 1);
            yield parseJson(text, start);
            state = 'ended';
          }
        } else if ((char === ',' || char === ']') && depth === 0) {
          // The end of an element that is no object (a bare value, a bad record all the same).
          text += lineText.slice(from, i);
          yield parseJson(text, start);
          state = char === ',' ? 'between' : 'after';
        }
        continue;
      }
      if (WHITESPACE.has(char)) continue;
      if (state === 'before') {
        if (char !== '[') throw new LineError(number, `expected a JSON array of articles ([…]), got ${JSON.stringify(char)}`);
        state = 'between';
      } else if (state === 'ended') {
        if (char === ',') state = 'between';
        else if (char === ']') state = 'after';
        else throw new LineError(number, `expected "," or "]" after the article on line ${start}, got ${JSON.stringify(char)}`);
      } else if (state === 'between') {
        if (char === ']' && elements === 0) state = 'after';
        else if (char === ',' || char === ']') throw new LineError(number, `expected an article before ${JSON.stringify(char)}`);
        else {
          state = 'element';
          elements++;
          text = '';
          from = i;
          start = number;
          depth = 0;
          inString = false;
          escaped = false;
          i--;
        }
      } else {
        throw new LineError(number, `unexpected ${JSON.stringify(char)} after the array's closing ]`);
      }
    }
    if (state === 'element') {
      text += `${lineText.slice(from)}\n`;
      if (text.length > MAX_LINE_BYTES) throw new LineError(start, `article too long (over ${MAX_LINE_BYTES} characters)`);
    }
  }
  if (state === 'before') throw new LineError(Math.max(lastLine, 1), 'expected a JSON array of articles ([…]), got an empty file');
  if (state !== 'after') throw new LineError(lastLine, 'the array is never closed with ]');
}
