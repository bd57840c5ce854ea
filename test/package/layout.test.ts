import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const CMD = fileURLToPath(new URL('../../cmd/', import.meta.url));

/** The most lines a source file of src/ or cmd/ may have. */
const MAX_FILE_LINES = 600;

/** The mechanisms that know nothing of LLMs or articles, and the folders that do. */
const GENERIC = ['limiter', 'retry', 'breaker', 'middleware', 'validation'];
const DOMAIN = [
  'sources',
  'tasks',
  'pipeline',
  'batch',
  'route',
  'gate',
  'quota',
  'cache',
  'provider',
  'vendors',
  'simulator',
  'sinks',
  'config',
  'bench',
  'server',
  'redis',
  'queue',
  'report',
  'telemetry',
  'testing',
];

/** Each folder of src/ (a top-level file counts as a folder of its own), and the folders it imports from. */
async function folderImports(): Promise<Map<string, Set<string>>> {
  const folders = new Map<string, Set<string>>();
  const folderOf = (file: string) => relative(SRC, file).split('/')[0]!;
  const visit = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await visit(path);
      else if (entry.name.endsWith('.ts')) {
        const from = folderOf(path);
        const targets = folders.get(from) ?? new Set<string>();
        folders.set(from, targets);
        for (const [, specifier] of (await readFile(path, 'utf8')).matchAll(/from '(\.[^']+)'/g)) {
          const to = folderOf(resolve(dirname(path), specifier!));
          if (to !== from) targets.add(to);
        }
      }
    }
  };
  await visit(SRC);
  return folders;
}

/** Each .ts file of `roots`, and the files it imports: static imports, type-only ones and `import()` alike. */
async function fileImports(roots: readonly string[]): Promise<Map<string, Set<string>>> {
  const files = new Map<string, Set<string>>();
  const visit = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await visit(path);
      else if (entry.name.endsWith('.ts')) {
        const targets = new Set<string>();
        for (const [, specifier] of (await readFile(path, 'utf8')).matchAll(/(?:from|import\() '(\.[^']+)'/g)) {
          targets.add(relative(resolve(SRC, '..'), resolve(dirname(path), specifier!)));
        }
        files.set(relative(resolve(SRC, '..'), path), targets);
      }
    }
  };
  for (const root of roots) await visit(root);
  return files;
}

/** Every cycle a depth-first walk of `graph` meets, each as `a → b → a`. */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const walk = (node: string, path: string[]): void => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'visiting') {
      cycles.push([...path.slice(path.indexOf(node)), node].join(' → '));
      return;
    }
    state.set(node, 'visiting');
    for (const next of graph.get(node) ?? []) walk(next, [...path, node]);
    state.set(node, 'done');
  };
  for (const node of graph.keys()) walk(node, []);
  return cycles;
}

describe('the layout of src/', () => {
  it('has no folder-level import cycle', async () => {
    expect(cyclesOf(await folderImports())).toEqual([]);
  });

  it('has no source file over 600 lines in src/ and cmd/: a file that long does several jobs', async () => {
    const root = resolve(SRC, '..');
    const long: string[] = [];
    for (const file of (await fileImports([SRC, CMD])).keys()) {
      const text = await readFile(join(root, file), 'utf8');
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      if (lines > MAX_FILE_LINES) long.push(`${file}: ${lines} lines`);
    }
    expect(long).toEqual([]);
  });

  it('has no file-level import cycle in src/ and cmd/, type-only imports included', async () => {
    const graph = await fileImports([SRC, CMD]);
    expect(graph.get('cmd/news-processor.ts')).toContain('cmd/run-options.ts');
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('finds a file-level cycle when there is one', () => {
    const graph = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['c.ts'])],
      ['c.ts', new Set(['a.ts'])],
    ]);
    expect(cyclesOf(graph)).toEqual(['a.ts → b.ts → c.ts → a.ts']);
  });

  it('keeps the generic mechanisms free of LLM and article code', async () => {
    const graph = await folderImports();
    const leaks = GENERIC.flatMap((folder) =>
      [...(graph.get(folder) ?? [])].filter((to) => DOMAIN.includes(to)).map((to) => `${folder} → ${to}`),
    );
    expect(leaks).toEqual([]);
    expect([...graph.keys()].sort()).toEqual(expect.arrayContaining([...GENERIC, ...DOMAIN.filter((folder) => folder !== 'testing')]));
  });
});
