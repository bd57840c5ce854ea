// Packs the package as it is published: the compiled library and command, README and LICENSE, under
// a manifest that carries no build step (no `prepare`: installing the tarball runs nothing) and no
// development dependencies. The repository's own package.json keeps `prepare`, so that `npm ci` in
// a clone builds `dist/`.
//
//   npm run tarball                         → ./news-processor-<version>.tgz
//   npm run tarball -- --destination DIR    → DIR/news-processor-<version>.tgz
//   (prints the tarball's path on stdout)
import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
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

const args = process.argv.slice(2);
const at = args.indexOf('--destination');
if (args.some((arg, index) => arg !== '--destination' && index !== at + 1) || (at !== -1 && args[at + 1] === undefined)) {
  process.stderr.write('usage: npm run tarball [-- --destination DIR]\n');
  process.exit(2);
}
const destination = resolve(at === -1 ? process.cwd() : args[at + 1]!);

const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
const published = Object.fromEntries(PUBLISHED_FIELDS.filter((field) => field in manifest).map((field) => [field, manifest[field]]));
const stage = await mkdtemp(join(tmpdir(), 'news-processor-stage-'));
try {
  const notBuildInfo = (source: string) => !source.endsWith('.tsbuildinfo');
  await cp(join(ROOT, 'dist', 'src'), join(stage, 'dist', 'src'), { recursive: true, filter: notBuildInfo });
  await cp(join(ROOT, 'dist', 'cmd'), join(stage, 'dist', 'cmd'), { recursive: true, filter: notBuildInfo });
  for (const file of ['README.md', 'LICENSE']) await cp(join(ROOT, file), join(stage, file));
  await writeFile(join(stage, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', destination], { cwd: stage, encoding: 'utf8' }),
  ) as { filename: string }[];
  process.stdout.write(`${join(destination, packed[0]!.filename)}\n`);
} finally {
  await rm(stage, { recursive: true, force: true });
}
