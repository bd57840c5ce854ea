import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in the package's own package.json: the nearest one above this file, which is
 * `cmd/` in a clone and `dist/cmd/` once built or installed.
 */
export function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)), up = 0; up < 4; up++, dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'news-processor' && manifest.version !== undefined) return manifest.version;
    } catch {
      // Not here: one folder up.
    }
  }
  return 'unknown';
}
