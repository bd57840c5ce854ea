// The manifest a tarball carries, swapped in around `npm pack` and `npm publish`, which pack the
// repository's own folder: `prepack` (after the build) writes package.json with the fields a user
// of the package needs and nothing else — no scripts, so installing the tarball runs nothing; no
// development dependencies — and keeps the repository's manifest aside; `postpack` puts it back.
// Which files go in is .npmignore's business: the compiled library and command, README, LICENSE.
//
//   node --import tsx scripts/pack-manifest.ts publish   (prepack)
//   node --import tsx scripts/pack-manifest.ts restore   (postpack)
//
// A pack that stopped between the two leaves the kept manifest in place, and `publish` puts it
// back first: the published fields are always taken from the repository's own.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const MANIFEST = join(ROOT, 'package.json');
/** Where the repository's manifest waits while a pack runs: dist/, which git ignores and the tarball leaves out. */
const KEPT = join(ROOT, 'dist', 'repository-package.json');
/** The manifest fields a user of the package needs; the rest (scripts, devDependencies) are the repository's. */
const PUBLISHED_FIELDS = [
  'name',
  'version',
  'description',
  'type',
  'license',
  'engines',
  'bin',
  'exports',
  'types',
  'dependencies',
  'peerDependencies',
  'peerDependenciesMeta',
];

async function restore(): Promise<void> {
  if (existsSync(KEPT)) await rename(KEPT, MANIFEST);
}

const [step, ...rest] = process.argv.slice(2);
if (rest.length > 0 || (step !== 'publish' && step !== 'restore')) {
  process.stderr.write('usage: node --import tsx scripts/pack-manifest.ts publish|restore\n');
  process.exit(2);
}
await restore();
if (step === 'publish') {
  const text = await readFile(MANIFEST, 'utf8');
  const manifest = JSON.parse(text) as Record<string, unknown>;
  const published = Object.fromEntries(PUBLISHED_FIELDS.filter((field) => field in manifest).map((field) => [field, manifest[field]]));
  await mkdir(dirname(KEPT), { recursive: true });
  await writeFile(KEPT, text);
  await writeFile(MANIFEST, `${JSON.stringify(published, null, 2)}\n`);
}
