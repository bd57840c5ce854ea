// `npm start` in a clone: the bundled command, built first (`npm run build`: scripts/build.mjs) when a
// source or a compiler setting is newer than the last build, or a part of dist/ is missing. A fresh
// clone's `npm ci` builds nothing (the package has no install-time script), and with dist/ up to
// date the check costs a start a few ms in the same process — no second Node, no TypeScript loaded.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The latest modification under `path` (a file, or a folder walked whole), ms; -Infinity when there is nothing. */
function latestMs(path) {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined) return -Infinity;
  if (!stats.isDirectory()) return stats.mtimeMs;
  let latest = -Infinity;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

const sourcesMs = Math.max(...['src', 'cmd', 'tsconfig.json', 'tsconfig.build.json'].map((path) => latestMs(join(ROOT, path))));
const builtMs = Math.min(...['src', 'cmd', 'cli'].map((part) => latestMs(join(ROOT, 'dist', part))));
if (sourcesMs > builtMs) {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
await import(pathToFileURL(join(ROOT, 'dist', 'cli', 'news-processor.js')).href);
