import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Article } from '../../src/sources/article.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { InputError, type InputIssue } from '../../src/sources/input-error.ts';
import { readArticlesJsonl } from '../../src/sources/jsonl.ts';
import type { ReadArticlesOptions } from '../../src/sources/read-articles.ts';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const fixture = (name: string): string => join(FIXTURES, name);

let tempDir = '';
let tempCount = 0;

beforeAll(async () => {
  tempDir = await mkdtemp(join(tmpdir(), 'news-processor-articles-'));
});

afterAll(async () => {
  await rm(tempDir, { recursive: true, force: true });
});

async function tempFile(text: string): Promise<string> {
  tempCount += 1;
  const path = join(tempDir, `input-${tempCount}.jsonl`);
  await writeFile(path, text);
  return path;
}

/** Reads everything; on failure returns the articles read so far and the error. */
async function readAll(path: string, options?: ReadArticlesOptions): Promise<{ articles: Article[]; error: unknown }> {
  const articles: Article[] = [];
  try {
    for await (const article of readArticlesJsonl(path, options)) articles.push(article);
    return { articles, error: undefined };
  } catch (error) {
    return { articles, error };
  }
}

const line = (fields: Record<string, unknown>): string => JSON.stringify(fields);
const valid = (id: number | string): string => line({ id, title: `Title ${id}`, content: `Body of ${id}.` });

describe('generateArticles()', () => {
  it('generateArticles() - yields exactly count articles with ids "1".."N"', () => {
    expect([...generateArticles(0)]).toEqual([]);
    expect([...generateArticles(1)].map((a) => a.id)).toEqual(['1']);
    const ids = [...generateArticles(1000)].map((a) => a.id);
    expect(ids).toHaveLength(1000);
    expect(ids).toEqual(Array.from({ length: 1000 }, (_, i) => String(i + 1)));
  });

  it('generateArticles() - ids are unique', () => {
    const ids = new Set<string>();
    for (const article of generateArticles(20_000, { seed: 3 })) ids.add(article.id);
    expect(ids.size).toBe(20_000);
  });

  it('generateArticles() - is deterministic for a seed', () => {
    expect([...generateArticles(200, { seed: 42 })]).toEqual([...generateArticles(200, { seed: 42 })]);
    expect([...generateArticles(200)]).toEqual([...generateArticles(200)]);
    const a = [...generateArticles(200, { seed: 1 })].map((x) => x.content);
    const b = [...generateArticles(200, { seed: 2 })].map((x) => x.content);
    expect(a).not.toEqual(b);
  });

  it('generateArticles() - accepts negative and large seeds', () => {
    const negative = [...generateArticles(50, { seed: -7 })];
    const large = [...generateArticles(50, { seed: Number.MAX_SAFE_INTEGER })];
    expect(negative).toEqual([...generateArticles(50, { seed: -7 })]);
    expect(negative.map((x) => x.content)).not.toEqual(large.map((x) => x.content));
  });

  it('generateArticles() - a shorter run is a prefix of a longer one', () => {
    const long = [...generateArticles(500, { seed: 9 })];
    expect([...generateArticles(50, { seed: 9 })]).toEqual(long.slice(0, 50));
  });

  it('generateArticles() - can be iterated again and starts over', () => {
    const source = generateArticles(5, { seed: 11 });
    const first = [...source];
    expect([...source]).toEqual(first);
  });

  it('generateArticles() - is lazy: taking 3 from 1e9 returns promptly', () => {
    const startMs = performance.now();
    const taken: Article[] = [];
    for (const article of generateArticles(1e9)) {
      taken.push(article);
      if (taken.length === 3) break;
    }
    expect(taken.map((a) => a.id)).toEqual(['1', '2', '3']);
    // Generous bound: materialising a billion articles would take minutes or run out of memory.
    expect(performance.now() - startMs).toBeLessThan(1000);
  });

  it('generateArticles() - builds varied articles with a title, 3-6 sentences, url and source', () => {
    const articles = [...generateArticles(1000, { seed: 5 })];
    const sentenceCounts = new Set<number>();
    const topics = new Set<string>();
    for (const article of articles) {
      expect(article.title.length).toBeGreaterThan(10);
      expect(article.title[0]).toBe(article.title[0]!.toUpperCase());
      const sentences = article.content.match(/[.!?](?=\s|$)/g) ?? [];
      expect(sentences.length).toBeGreaterThanOrEqual(3);
      expect(sentences.length).toBeLessThanOrEqual(6);
      sentenceCounts.add(sentences.length);
      expect(article.url).toMatch(new RegExp(`^https://[a-z-]+\\.example\\.com/[a-z]+/${article.id}$`));
      expect(article.source).toBeTruthy();
      topics.add(article.url!.split('/')[3]!);
    }
    expect([...sentenceCounts].sort()).toEqual([3, 4, 5, 6]);
    expect(topics.size).toBeGreaterThanOrEqual(6);
    expect(new Set(articles.map((a) => a.title)).size).toBeGreaterThan(500);
    expect(new Set(articles.map((a) => a.content)).size).toBe(1000);
  });

  it('generateArticles() - never repeats a sentence within an article', () => {
    for (const article of generateArticles(2000, { seed: 8 })) {
      const sentences = article.content.split(/(?<=[.!?]) (?=[A-Z"])/);
      expect(new Set(sentences).size).toBe(sentences.length);
    }
  });

  it('generateArticles() - throws TypeError for a bad count or seed', () => {
    for (const count of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => generateArticles(count)).toThrow(TypeError);
    }
    expect(() => generateArticles('5' as unknown as number)).toThrow('Expected count to be an integer >= 0, got "5"');
    expect(() => generateArticles(-1)).toThrow('Expected count to be an integer >= 0, got -1');
    expect(() => generateArticles(5, { seed: 0.5 })).toThrow('Expected seed to be a safe integer, got 0.5');
  });
});

describe('readArticlesJsonl()', () => {
  it('readArticlesJsonl() - reads the sample fixture', async () => {
    const { articles, error } = await readAll(fixture('articles.jsonl'));
    expect(error).toBeUndefined();
    expect(articles).toHaveLength(30);
    expect(new Set(articles.map((a) => a.id)).size).toBe(30);
    for (const article of articles) {
      expect(typeof article.id).toBe('string');
      expect(article.title).not.toBe('');
      expect(article.content).not.toBe('');
    }
    expect(articles[0]!.id).toBe('101');
    expect(articles[2]).toMatchObject({ id: 'sci-0007' });
    expect(Object.keys(articles[2]!)).toEqual(['id', 'title', 'content', 'fields']);
    expect(articles.some((a) => a.url !== undefined)).toBe(true);
    expect(articles.some((a) => a.source !== undefined && a.url === undefined)).toBe(true);
  });

  it('readArticlesJsonl() - reports file:line for invalid JSON', async () => {
    const path = fixture('bad/invalid-json.jsonl');
    const badLine = (await readFile(path, 'utf8')).split('\n')[2]!;
    let parseMessage = '';
    try {
      JSON.parse(badLine);
    } catch (error) {
      parseMessage = (error as Error).message;
    }
    expect(parseMessage).not.toBe('');

    const { articles, error } = await readAll(path);
    expect(articles.map((a) => a.id)).toEqual(['1', '2']);
    expect(error instanceof InputError).toBe(true);
    expect((error as InputError).message).toBe(`${path}:3: invalid JSON (${parseMessage})`);
    expect(error).toMatchObject({ name: 'InputError', path, line: 3, reason: `invalid JSON (${parseMessage})` });
  });

  it.each([
    ['missing-id.jsonl', 2, 'missing "id"'],
    ['empty-content.jsonl', 2, 'article has no text (empty "content")'],
    ['wrong-type.jsonl', 2, '"title" must be a string, got 42'],
    ['duplicate-ids.jsonl', 4, 'duplicate id "12" (first seen on line 2)'],
    ['not-an-object.jsonl', 2, 'expected a JSON object, got [1,2]'],
  ])('readArticlesJsonl() - reports file:line for bad/%s', async (name, lineNumber, reason) => {
    const path = fixture(`bad/${name}`);
    const { articles, error } = await readAll(path);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(`${path}:${lineNumber}: ${reason}`);
    expect(error).toMatchObject({ path, line: lineNumber, reason });
    expect(articles).toHaveLength(lineNumber - 1);
  });

  it('readArticlesJsonl() - an empty file is valid input with no articles', async () => {
    expect(await readAll(fixture('bad/empty.jsonl'))).toEqual({ articles: [], error: undefined });
  });

  it('readArticlesJsonl() - skipInvalid skips bad lines and reports each one', async () => {
    const path = fixture('bad/mixed.jsonl');
    const issues: InputIssue[] = [];
    const { articles, error } = await readAll(path, {
      skipInvalid: true,
      onInvalid: (issue) => issues.push(issue),
      requiredFields: ['content'],
    });
    expect(error).toBeUndefined();
    expect(articles.map((a) => a.id)).toEqual(['1', '2', '4', '5', '7', '8', '10']);
    // The duplicate keeps the first occurrence.
    expect(articles[1]!.title).toBe('Rangers win the league');
    expect(issues).toEqual([
      { path, line: 3, reason: expect.stringMatching(/^invalid JSON \(.+\)$/) },
      { path, line: 6, reason: 'missing field "content"' },
      { path, line: 9, reason: 'duplicate id "2" (first seen on line 2)' },
    ]);
  });

  it('readArticlesJsonl() - a line without content is an article all the same, unless requiredFields asks for it', async () => {
    const path = fixture('bad/mixed.jsonl');
    const { articles } = await readAll(path, { skipInvalid: true });
    expect(articles.map((a) => a.id)).toEqual(['1', '2', '4', '5', '6', '7', '8', '10']);
    expect(articles[4]).toEqual({ id: '6', title: 'Teachers vote to strike', fields: { id: '6', title: 'Teachers vote to strike' } });
  });

  it('readArticlesJsonl() - requiredFields: nested fields, by dot path; a null value is there', async () => {
    const text = [
      line({ id: 1, meta: { author: 'A. Writer' } }),
      line({ id: 2, meta: {} }),
      line({ id: 3, meta: { author: null } }),
      line({ id: 4 }),
    ].join('\n');
    const issues: InputIssue[] = [];
    const { articles } = await readAll(await tempFile(text), {
      skipInvalid: true,
      onInvalid: (issue) => issues.push(issue),
      requiredFields: ['meta.author'],
    });
    expect(articles.map((a) => a.id)).toEqual(['1', '3']);
    expect(issues.map((issue) => [issue.line, issue.reason])).toEqual([
      [2, 'missing field "meta.author"'],
      [4, 'missing field "meta.author"'],
    ]);
  });

  it('readArticlesJsonl() - without skipInvalid, stops at the first bad line and does not call onInvalid', async () => {
    const path = fixture('bad/mixed.jsonl');
    const issues: InputIssue[] = [];
    const { articles, error } = await readAll(path, { onInvalid: (issue) => issues.push(issue) });
    expect(articles.map((a) => a.id)).toEqual(['1', '2']);
    expect(error).toMatchObject({ path, line: 3 });
    expect(issues).toEqual([]);
  });

  it('readArticlesJsonl() - skipInvalid works without onInvalid', async () => {
    const { articles, error } = await readAll(fixture('bad/mixed.jsonl'), { skipInvalid: true });
    expect(error).toBeUndefined();
    // Line 6, without content, is an article to the reader: only its tasks can say they need the field.
    expect(articles).toHaveLength(8);
  });

  it('readArticlesJsonl() - a missing file fails when iteration starts, with no line', async () => {
    const path = join(tempDir, 'does-not-exist.jsonl');
    const source = readArticlesJsonl(path); // must not throw yet
    const iterator = source[Symbol.asyncIterator]();
    const error = await iterator.next().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(`${path}: cannot read file (ENOENT: no such file or directory)`);
    expect(error).toMatchObject({ path, line: undefined, reason: 'cannot read file (ENOENT: no such file or directory)' });
    expect((error as InputError).cause).toMatchObject({ code: 'ENOENT' });
  });

  it('readArticlesJsonl() - a directory is a file-level error', async () => {
    const { articles, error } = await readAll(tempDir);
    expect(articles).toEqual([]);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(`${tempDir}: cannot read file (EISDIR: illegal operation on a directory)`);
    expect((error as InputError).line).toBeUndefined();
  });

  it('readArticlesJsonl() - a directory is an error even with skipInvalid', async () => {
    const { error } = await readAll(tempDir, { skipInvalid: true });
    expect(error).toBeInstanceOf(InputError);
  });

  it('readArticlesJsonl() - converts numeric ids to strings', async () => {
    const path = await tempFile([valid(7), valid(-3), valid('x-1'), line({ id: 0, content: 'Zero.' })].join('\n'));
    const { articles, error } = await readAll(path);
    expect(error).toBeUndefined();
    expect(articles.map((a) => a.id)).toEqual(['7', '-3', 'x-1', '0']);
  });

  it('readArticlesJsonl() - keeps fields verbatim, defaults a missing title to "", and keeps the whole line in fields', async () => {
    const path = await tempFile(
      [
        line({ id: 'a', content: '  Padded body.  ', url: 'https://example.com/a', source: 'Wire', lang: 'en' }),
        line({ id: 'b', title: null, content: 'Body.', url: null, source: null }),
        line({ id: 'c', title: '', content: 'Body.' }),
      ].join('\n'),
    );
    const { articles, error } = await readAll(path);
    expect(error).toBeUndefined();
    const { fields: _a, ...a } = articles[0]!;
    expect([a, ...articles.slice(1).map(({ fields: _, ...rest }) => rest)]).toEqual([
      { id: 'a', title: '', content: '  Padded body.  ', url: 'https://example.com/a', source: 'Wire' },
      { id: 'b', title: '', content: 'Body.' },
      { id: 'c', title: '', content: 'Body.' },
    ]);
    // The line as it came, the id and title as read: what the tasks' placeholders see, extra fields included.
    expect(articles[0]!.fields).toEqual({
      id: 'a',
      title: '',
      content: '  Padded body.  ',
      url: 'https://example.com/a',
      source: 'Wire',
      lang: 'en',
    });
    expect(Object.keys(articles[1]!)).toEqual(['id', 'title', 'content', 'fields']);
  });

  it.each([
    [line({ id: 1.5, content: 'x' }), '"id" must be a string or a safe integer, got 1.5'],
    [line({ id: 2 ** 53, content: 'x' }), `"id" must be a string or a safe integer, got ${2 ** 53}`],
    [line({ id: true, content: 'x' }), '"id" must be a string or a safe integer, got true'],
    [line({ id: null, content: 'x' }), '"id" must be a string or a safe integer, got null'],
    [line({ id: '', content: 'x' }), '"id" must not be empty'],
    [line({ id: '  ', content: 'x' }), '"id" must not be empty'],
    [line({ id: 1, content: ['x'] }), '"content" must be a string, got ["x"]'],
    [line({ id: 1, content: '' }), 'article has no text (empty "content")'],
    [line({ id: 1, title: {}, content: 'x' }), '"title" must be a string, got {}'],
    [line({ id: 1, content: 'x', url: 5 }), '"url" must be a string, got 5'],
    [line({ id: 1, content: 'x', source: false }), '"source" must be a string, got false'],
    ['"x"', 'expected a JSON object, got "x"'],
    ['null', 'expected a JSON object, got null'],
    ['42', 'expected a JSON object, got 42'],
  ])('readArticlesJsonl() - rejects %s', async (text, reason) => {
    const path = await tempFile(`${valid(100)}\n${text}\n`);
    const { error } = await readAll(path);
    expect((error as InputError).message).toBe(`${path}:2: ${reason}`);
  });

  it('readArticlesJsonl() - skips blank lines but counts them in line numbers', async () => {
    const path = await tempFile(`\n${valid(1)}\n\n   \n\t\n${valid(2)}\n\n{bad\n\n`);
    const { articles, error } = await readAll(path);
    expect(articles.map((a) => a.id)).toEqual(['1', '2']);
    expect(error).toMatchObject({ line: 8 });
  });

  it('readArticlesJsonl() - handles CRLF line endings', async () => {
    const path = await tempFile(`${valid(1)}\r\n\r\n${valid(2)}\r\n${valid(1)}\r\n`);
    const { articles, error } = await readAll(path);
    expect(articles).toMatchObject([
      { id: '1', title: 'Title 1', content: 'Body of 1.' },
      { id: '2', title: 'Title 2', content: 'Body of 2.' },
    ]);
    expect((error as InputError).message).toBe(`${path}:4: duplicate id "1" (first seen on line 1)`);
  });

  it('readArticlesJsonl() - accepts a byte-order mark and a last line without newline', async () => {
    const path = await tempFile(`\uFEFF${valid(1)}\n${valid(2)}`);
    const { articles, error } = await readAll(path);
    expect(error).toBeUndefined();
    expect(articles.map((a) => a.id)).toEqual(['1', '2']);
  });

  it('readArticlesJsonl() - streams a 50,000-line file', async () => {
    const lineCount = 50_000;
    const lines: string[] = [];
    for (let i = 1; i <= lineCount; i += 1) lines.push(valid(i));
    const path = join(tempDir, 'large.jsonl');
    await writeFile(path, `${lines.join('\n')}\n`);
    try {
      let count = 0;
      let lastId = '';
      for await (const article of readArticlesJsonl(path)) {
        count += 1;
        lastId = article.id;
      }
      expect(count).toBe(lineCount);
      expect(lastId).toBe(String(lineCount));
    } finally {
      await rm(path, { force: true });
    }
  });

  it('readArticlesJsonl() - stops cleanly when the consumer breaks early', async () => {
    const taken: string[] = [];
    for await (const article of readArticlesJsonl(fixture('articles.jsonl'))) {
      taken.push(article.id);
      if (taken.length === 2) break;
    }
    expect(taken).toEqual(['101', '102']);
  });

  it('readArticlesJsonl() - throws TypeError at once for bad arguments', () => {
    expect(() => readArticlesJsonl('')).toThrow(new TypeError('Expected source to be a non-empty string, got ""'));
    expect(() => readArticlesJsonl(42 as unknown as string)).toThrow(
      new TypeError('Expected source to be a path or a byte stream, got 42'),
    );
    expect(() => readArticlesJsonl('x.jsonl', { skipInvalid: 'yes' as unknown as boolean })).toThrow(TypeError);
    expect(() => readArticlesJsonl('x.jsonl', { onInvalid: 1 as unknown as () => void })).toThrow(
      new TypeError('Expected onInvalid to be a function, got 1'),
    );
  });
});

describe('InputError', () => {
  it('InputError - formats path:line: reason, or path: reason without a line', () => {
    expect(new InputError({ path: 'a.jsonl', line: 3, reason: 'bad' }).message).toBe('a.jsonl:3: bad');
    expect(new InputError({ path: 'a.jsonl', reason: 'cannot read file (X)' }).message).toBe('a.jsonl: cannot read file (X)');
  });
});

describe('readArticlesJsonl() - checkDuplicates', () => {
  it('with checkDuplicates false keeps no ids and passes repeated ones through', async () => {
    const ids: string[] = [];
    for await (const article of readArticlesJsonl('fixtures/bad/duplicate-ids.jsonl', { checkDuplicates: false })) ids.push(article.id);
    expect(new Set(ids).size).toBeLessThan(ids.length);
  });

  it('throws a TypeError for a non-boolean checkDuplicates', () => {
    expect(() => readArticlesJsonl('x.jsonl', { checkDuplicates: 'no' as never })).toThrow(TypeError);
  });
});
