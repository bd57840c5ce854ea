import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Article } from '../../src/sources/article.ts';
import { readArticlesCsv } from '../../src/sources/csv.ts';
import { InputError, type InputIssue } from '../../src/sources/input-error.ts';
import { readArticlesJson } from '../../src/sources/json-array.ts';
import { readArticlesJsonl } from '../../src/sources/jsonl.ts';
import type { ReadArticlesOptions } from '../../src/sources/read-articles.ts';

const fixture = (name: string): string => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));

type Reader = (source: string | AsyncIterable<Uint8Array>, options?: ReadArticlesOptions) => AsyncIterable<Article>;

async function readAll(read: Reader, source: string | AsyncIterable<Uint8Array>, options?: ReadArticlesOptions) {
  const articles: Article[] = [];
  try {
    for await (const article of read(source, options)) articles.push(article);
    return { articles, error: undefined };
  } catch (error) {
    return { articles, error: error as InputError };
  }
}

/** A byte stream of `text` in chunks of `size` bytes: records cut anywhere. */
const chunked = (text: string, size: number): AsyncIterable<Uint8Array> => {
  const bytes = Buffer.from(text);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return Readable.from(chunks);
};

describe('readArticlesCsv()', () => {
  it('reads fixtures/articles.csv: the header names the fields, a quoted field holds a comma, doubled quotes and a newline', async () => {
    const { articles, error } = await readAll(readArticlesCsv, fixture('articles.csv'));
    expect(error).toBeUndefined();
    expect(articles.map((article) => article.id)).toEqual(['201', '202', 'sci-0008', '204']);
    expect(articles[1]).toMatchObject({
      title: 'Riverton factory to close, 800 jobs at risk',
      content:
        'The Calder Steelworks in Riverton will close in the spring.\nUnion leaders called it "a devastating blow", and workers learned of it from a memo pinned to the canteen wall.',
      source: 'Northbridge Herald',
      fields: { author: 'Daniel Osei' },
    });
  });

  it('reads a stream cut anywhere as the file: CRLF endings, a byte-order mark, blank lines', async () => {
    const text = '\uFEFFid,title,content\r\n\r\n1,"a, b","two\r\nlines"\r\n2,c,d';
    for (const size of [1, 3, 7, 100]) {
      const { articles, error } = await readAll(readArticlesCsv, chunked(text, size), { name: 'stdin' });
      expect(error).toBeUndefined();
      expect(articles.map(({ id, title, content }) => ({ id, title, content }))).toEqual([
        { id: '1', title: 'a, b', content: 'two\nlines' },
        { id: '2', title: 'c', content: 'd' },
      ]);
    }
  });

  it('yields the first article before the stream ends: streamed, never the whole input', async () => {
    let written = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('id,content\n');
      for (;;) yield Buffer.from(`${++written},"text of ${written}"\n`);
    }
    for await (const article of readArticlesCsv(endless())) {
      expect(article.id).toBe('1');
      break;
    }
    expect(written).toBeLessThan(100_000);
  });

  it('names the line a bad record starts on; a record of the wrong width is skipped with skipInvalid', async () => {
    const count = await readAll(readArticlesCsv, 'fixtures/bad/field-count.csv');
    expect(count.error).toBeInstanceOf(InputError);
    expect(count.error?.message).toBe("fixtures/bad/field-count.csv:3: expected 3 fields (the header's), got 4");
    const issues: InputIssue[] = [];
    const skipped = await readAll(readArticlesCsv, 'fixtures/bad/field-count.csv', {
      skipInvalid: true,
      onInvalid: (issue) => issues.push(issue),
    });
    expect(skipped.articles.map((article) => article.id)).toEqual(['1']);
    expect(issues).toEqual([{ path: 'fixtures/bad/field-count.csv', line: 3, reason: "expected 3 fields (the header's), got 4" }]);
  });

  it('stops at a quote never closed, naming the line the record starts on, even with skipInvalid', async () => {
    for (const skipInvalid of [false, true]) {
      const { articles, error } = await readAll(readArticlesCsv, 'fixtures/bad/unclosed-quote.csv', { skipInvalid });
      expect(articles).toEqual([]);
      expect(error?.message).toBe('fixtures/bad/unclosed-quote.csv:2: invalid CSV (a quoted field is never closed)');
    }
  });

  it('without an id column: each record is `missing "id"`, as a JSONL line without one', async () => {
    const { error } = await readAll(readArticlesCsv, 'fixtures/bad/no-id-column.csv');
    expect(error?.message).toBe('fixtures/bad/no-id-column.csv:2: missing "id"');
  });

  it('checks the header for the fields the tasks read, before any record, with skipInvalid too', async () => {
    for (const skipInvalid of [false, true]) {
      const { articles, error } = await readAll(readArticlesCsv, fixture('articles.csv'), {
        skipInvalid,
        expectedFields: [
          { field: 'content', task: 'summarize' },
          { field: 'lede', task: 'headline' },
        ],
      });
      expect(articles).toEqual([]);
      expect(error?.message).toMatch(
        /articles\.csv:1: the header has no column "lede" that task headline's prompt reads \(\{\{lede\}\}\)$/,
      );
    }
  });

  it('refuses a header with an empty or repeated name', async () => {
    expect((await readAll(readArticlesCsv, chunked('id,,content\n1,a,b\n', 5), { name: 'in' })).error?.message).toBe(
      "in:1: the header's column 2 has no name",
    );
    expect((await readAll(readArticlesCsv, chunked('id,title,id\n', 5), { name: 'in' })).error?.message).toBe(
      'in:1: the header names "id" twice',
    );
  });

  it('reads an empty file as no articles', async () => {
    expect(await readAll(readArticlesCsv, chunked('', 1))).toEqual({ articles: [], error: undefined });
  });
});

describe('readArticlesJson()', () => {
  it('reads an array of articles, streamed, each element checked as a JSONL line is', async () => {
    const text = '[\n  {"id": 1, "content": "a, ]"},\n  {"id": "x",\n   "content": "b \\" }"}\n]\n';
    for (const size of [1, 4, 1000]) {
      const { articles, error } = await readAll(readArticlesJson, chunked(text, size));
      expect(error).toBeUndefined();
      expect(articles.map(({ id, content }) => ({ id, content }))).toEqual([
        { id: '1', content: 'a, ]' },
        { id: 'x', content: 'b " }' },
      ]);
    }
    expect(await readAll(readArticlesJson, chunked(' [ ] ', 2))).toEqual({ articles: [], error: undefined });
  });

  it('names the line a bad element starts on, and skips it with skipInvalid', async () => {
    const bad = await readAll(readArticlesJson, 'fixtures/bad/invalid-element.json');
    expect(bad.articles.map((article) => article.id)).toEqual(['1']);
    expect(bad.error?.message).toMatch(/^fixtures\/bad\/invalid-element\.json:3: invalid JSON \(.+\)$/);
    const skipped = await readAll(readArticlesJson, 'fixtures/bad/invalid-element.json', { skipInvalid: true });
    expect(skipped.error).toBeUndefined();
    expect(skipped.articles.map((article) => article.id)).toEqual(['1', '3']);
    const duplicate = await readAll(readArticlesJson, chunked('[{"id": 1}, \n{"id": "1"}]', 3), { name: 'in' });
    expect(duplicate.error?.message).toBe('in:2: duplicate id "1" (first seen on line 1)');
  });

  it('stops at a broken structure, naming its line, even with skipInvalid', async () => {
    const cases: [string, string][] = [
      ['', 'in:1: expected a JSON array of articles ([…]), got an empty file'],
      ['{"id": 1}', 'in:1: expected a JSON array of articles ([…]), got "{"'],
      ['[\n{"id": 1}\n{"id": 2}]', 'in:3: expected "," or "]" after the article on line 2, got "{"'],
      ['[{"id": 1},\n]', 'in:2: expected an article before "]"'],
      ['[{"id": 1}\n', 'in:1: the array is never closed with ]'],
      ['[{"id": 1}]\n[', 'in:2: unexpected "[" after the array\'s closing ]'],
    ];
    for (const [text, message] of cases) {
      expect((await readAll(readArticlesJson, chunked(text, 3), { name: 'in', skipInvalid: true })).error?.message, text).toBe(message);
    }
  });
});

describe('expectedFields: the first article', () => {
  it('must have each field a prompt reads: an InputError at its line naming the article, the field and the task', async () => {
    const expectedFields = [{ field: 'author', task: 'credit' }];
    for (const [read, text, line] of [
      [readArticlesJsonl, '\n{"id": 7, "content": "x"}\n{"id": 8, "content": "y", "author": "A"}\n', 2],
      [readArticlesJson, '[\n\n{"id": 7, "content": "x"},\n{"id": 8, "content": "y", "author": "A"}]', 3],
    ] as const) {
      const { articles, error } = await readAll(read, chunked(text, 5), { name: 'in', expectedFields });
      expect(articles).toEqual([]);
      expect(error?.message).toBe(`in:${line}: the first article, "7", has no field "author" that task credit's prompt reads ({{author}})`);
    }
  });

  it('leaves a later article that lacks one to fail alone, and with skipInvalid the lacking records are skipped by requiredFields', async () => {
    const text = '{"id": 1, "author": "A"}\n{"id": 2}\n';
    const later = await readAll(readArticlesJsonl, chunked(text, 4), { expectedFields: [{ field: 'author', task: 'credit' }] });
    expect(later).toEqual({ articles: [expect.objectContaining({ id: '1' }), expect.objectContaining({ id: '2' })], error: undefined });
    const issues: InputIssue[] = [];
    const first = await readAll(readArticlesJsonl, chunked('{"id": 2}\n{"id": 1, "author": "A"}\n', 4), {
      name: 'in',
      skipInvalid: true,
      onInvalid: (issue) => issues.push(issue),
      requiredFields: ['author'],
      expectedFields: [{ field: 'author', task: 'credit' }],
    });
    expect(first.articles.map((article) => article.id)).toEqual(['1']);
    expect(issues).toEqual([{ path: 'in', line: 1, reason: 'missing field "author"' }]);
  });
});
