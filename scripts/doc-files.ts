// The project's documents: what `npm run readme` runs and rewrites, and whose links are checked.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The documents under `root`, relative to it with `/`: the front door first, then the reference pages. */
export function documentFiles(root: string): string[] {
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return ['README.md', ...docs, 'bench/README.md', 'fixtures/README.md', 'CONTRIBUTING.md'].filter((path) => existsSync(join(root, path)));
}
