import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** The mechanisms that know nothing of LLMs or articles, and the folders that do. */
const GENERIC = ['limiter', 'retry', 'breaker', 'middleware', 'validation'];
const DOMAIN = [
  'sources',
  'tasks',
  'pipeline',
  'route',
  'gate',
  'limits',
  'provider',
  'vendors',
  'simulator',
  'sinks',
  'config',
  'bench',
  'server',
  'redis',
  'queue',
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

describe('the layout of src/', () => {
  it('has no folder-level import cycle', async () => {
    const graph = await folderImports();
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const walk = (folder: string, path: string[]): void => {
      if (state.get(folder) === 'done') return;
      if (state.get(folder) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(folder)), folder].join(' → '));
        return;
      }
      state.set(folder, 'visiting');
      for (const next of graph.get(folder) ?? []) walk(next, [...path, folder]);
      state.set(folder, 'done');
    };
    for (const folder of graph.keys()) walk(folder, []);
    expect(cycles).toEqual([]);
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
