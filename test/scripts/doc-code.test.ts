// Every JavaScript and TypeScript example in the documents type-checks against the package as
// published: `import … from 'news-processor/…'` resolves through the manifest's `exports` to the
// declarations in `dist/` (which the tests' setup has just built), as a user's code would.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { documentFiles } from '../../scripts/doc-files.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
// Inside the package, so that its name resolves to itself; ignored by git and biome.
const DIR = join(ROOT, '.doc-code');

interface CodeBlock {
  readonly document: string;
  readonly line: number;
  readonly language: 'js' | 'ts';
  readonly code: string;
}

/** The fenced ```js and ```ts blocks of a document, with the line of their opening fence. */
function codeBlocks(document: string, text: string): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const language = /^```(js|ts)\s*$/.exec(lines[i]!)?.[1] as 'js' | 'ts' | undefined;
    if (language === undefined) continue;
    const end = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line));
    if (end < 0) throw new Error(`${document}:${i + 1}: a code block that does not end`);
    blocks.push({ document, line: i + 1, language, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

afterAll(() => {
  rmSync(DIR, { recursive: true, force: true });
});

describe('the code examples of the documents', () => {
  it('finds the js and ts blocks and where they start', () => {
    const text = ['# t', '```js', 'a();', '```', '```sh', 'x', '```', '```ts', 'const b = 1;', '```'].join('\n');
    expect(codeBlocks('d.md', text)).toEqual([
      { document: 'd.md', line: 2, language: 'js', code: 'a();' },
      { document: 'd.md', line: 8, language: 'ts', code: 'const b = 1;' },
    ]);
  });

  it('type-check, each as a module of its own, against the published declarations', () => {
    const blocks = documentFiles(ROOT).flatMap((document) => codeBlocks(document, readFileSync(join(ROOT, document), 'utf8')));
    expect(blocks.length).toBeGreaterThan(10);
    rmSync(DIR, { recursive: true, force: true });
    mkdirSync(DIR);
    const names = new Map<string, CodeBlock>();
    for (const block of blocks) {
      const name = `${block.document.replaceAll('/', '-').replace(/\.md$/, '')}-${block.line}.${block.language === 'js' ? 'mjs' : 'mts'}`;
      names.set(name, block);
      // Each its own module: a block without imports would otherwise share the global scope.
      writeFileSync(join(DIR, name), `${block.code}\nexport {};\n`);
    }
    writeFileSync(
      join(DIR, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          lib: ['es2023', 'dom'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          types: ['node'],
          strict: true,
          noEmit: true,
          allowJs: true,
          checkJs: true,
          skipLibCheck: true,
        },
        include: ['*.mjs', '*.mts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [TSC, '-p', DIR], { cwd: DIR, encoding: 'utf8' });
    // Each error as the document's own line: README.md:177: error TS2304: Cannot find name 'x'.
    const errors = (tsc.stdout + tsc.stderr).replace(/^(\S+?)\((\d+),\d+\)/gm, (all, file: string, line: string) => {
      const block = names.get(file);
      return block === undefined ? all : `${block.document}:${block.line + Number(line)}`;
    });
    expect(errors).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000);
});
