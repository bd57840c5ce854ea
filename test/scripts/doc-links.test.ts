import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { documentFiles } from '../../scripts/doc-files.ts';
import { brokenLinks, documentAnchors, findLinks, headingSlug } from '../../scripts/doc-links.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** An in-memory project: path → text (folders are the paths' prefixes). */
function project(files: Record<string, string>) {
  return {
    exists: (path: string) => path in files || Object.keys(files).some((file) => file.startsWith(`${path}/`)),
    read: (path: string) => files[path],
  };
}

describe('headingSlug', () => {
  it('makes the anchor GitHub makes: lower case, code and punctuation marks dropped, spaces as hyphens', () => {
    expect(headingSlug('`news-processor serve`')).toBe('news-processor-serve');
    expect(headingSlug('Ctrl-C, SIGTERM, SIGHUP')).toBe('ctrl-c-sigterm-sighup');
    expect(headingSlug('Limits as providers set them')).toBe('limits-as-providers-set-them');
    expect(headingSlug('The `--json` object')).toBe('the---json-object');
    expect(headingSlug('Sweeping settings: `news-processor bench`')).toBe('sweeping-settings-news-processor-bench');
    expect(headingSlug('[Shared quotas](x.md) — Redis')).toBe('shared-quotas--redis');
    expect(headingSlug('Redis (`news-processor/redis`)')).toBe('redis-news-processorredis');
  });
});

describe('documentAnchors', () => {
  it('has one anchor per heading, numbers repeats, reads <a id>, and skips fenced code', () => {
    const text = ['# Title', '## Figures', '```sh', '# not a heading', '```', '## Figures', '<a id="custom"></a>', '### Done ###'].join(
      '\n',
    );
    expect([...documentAnchors(text)]).toEqual(['title', 'figures', 'figures-1', 'custom', 'done']);
  });
});

describe('findLinks', () => {
  it('finds inline links, images and reference definitions, not those quoted as code or in a fence', () => {
    const text = [
      'See [the CLI](docs/cli.md#flags) and ![chart](bench.svg "title").',
      'Code: `[not](a-link.md)`; [web](https://example.com).',
      '```md',
      '[fenced](nope.md)',
      '```',
      '[ref]: docs/library.md',
      'A link whose text [runs over',
      'two lines](docs/bench.md#flags).',
    ].join('\n');
    expect(findLinks(text)).toEqual([
      { line: 1, target: 'docs/cli.md#flags' },
      { line: 1, target: 'bench.svg' },
      { line: 2, target: 'https://example.com' },
      { line: 6, target: 'docs/library.md' },
      { line: 7, target: 'docs/bench.md#flags' },
    ]);
  });
});

describe('brokenLinks', () => {
  const files = project({
    'README.md': '# news-processor\n[CLI](docs/cli.md#exit-codes) [bad](docs/cli.md#exit) [gone](docs/gone.md) [top](#news-processor)',
    'docs/cli.md':
      '# The command line\n## Exit codes\n[back](../README.md#nope) [src](../src/clock.ts#L1) [out](../../x.md) [dir](../src/)',
    'src/clock.ts': '',
  });

  it('names each link whose file or anchor does not exist, by file and line', () => {
    expect(brokenLinks(['README.md', 'docs/cli.md'], files)).toEqual([
      'README.md:2: docs/cli.md#exit: docs/cli.md has no heading #exit',
      'README.md:2: docs/gone.md: no such file (docs/gone.md)',
      'docs/cli.md:3: ../README.md#nope: README.md has no heading #nope',
      'docs/cli.md:3: ../../x.md: points outside the project',
    ]);
  });

  it('finds nothing wrong in the project’s own documents', () => {
    const documents = documentFiles(ROOT);
    expect(documents).toContain('README.md');
    const problems = brokenLinks(documents, {
      exists: (path) => existsSync(join(ROOT, path)),
      read: (path) => (path.endsWith('.md') && existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined),
    });
    expect(problems).toEqual([]);
  });
});

describe("the documents' commands", () => {
  it('read input files the repository ships: every --input in a command names a file in it, so the examples run from a fresh clone', () => {
    const named = documentFiles(ROOT).flatMap((document) =>
      [
        ...readFileSync(join(ROOT, document), 'utf8').matchAll(
          /(?:npm start|npx news-processor|news-processor\.js)[^\n]*?--input[ =]([^\s`]+)/g,
        ),
      ].map((match) => ({ document, path: match[1]! })),
    );
    const files = named.filter(({ path }) => path !== '-');
    expect(files.length).toBeGreaterThan(10);
    expect(files.filter(({ path }) => !existsSync(join(ROOT, path)))).toEqual([]);
  });
});
