// `npm run build`: the library compiled by tsc into dist/ (one module per source file, with its
// declarations: what `import 'news-processor'` loads), then the command bundled by esbuild into
// dist/cli/ (what the `news-processor` bin runs).
//
// Why a bundle for the command: Node's ESM loader resolves, reads and links each module on its
// own, and a run of the command loads about a hundred of them before it does anything (~0.25 ms
// each), besides commander, pino and p-limit from node_modules. One file for what a run needs,
// with a chunk apiece for what only some commands load (`serve`, `queue`, `bench`, the report),
// halves what the command costs over Node's own start-up (`npm run bench:startup`). The optional
// peers (SDKs, ioredis, BullMQ, lmdb, OpenTelemetry, vega…) stay outside, loaded when a feature
// asks for them, exactly as from the compiled modules.
//
//   node scripts/build.mjs   (what npm run build, npm start, the tests' global setup and prepack run)
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where the bundled command goes: its entry `news-processor.js` and the chunks it loads when needed. */
const CLI_DIR = join(ROOT, 'dist', 'cli');

/** Compiles the sources with tsc (dist/src, dist/cmd); exits the process with tsc's status on a type error. */
function compile() {
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
}

/** Bundles the compiled command into dist/cli/, the package's own dependencies in, every other package out. */
async function bundle() {
  const { build } = await import('esbuild');
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  // Only what the package depends on goes in; a peer or development package is looked up at run
  // time from node_modules, as the compiled modules do (and is absent where it is not installed).
  const external = [...Object.keys(manifest.peerDependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})].flatMap((name) => [
    name,
    `${name}/*`,
  ]);
  rmSync(CLI_DIR, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { 'news-processor': join(ROOT, 'dist', 'cmd', 'news-processor.js') },
    outdir: CLI_DIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external,
    // The CommonJS packages bundled in (pino, commander) call require() for Node's own modules.
    banner: {
      js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);",
    },
    chunkNames: 'chunks/[name]-[hash]',
    legalComments: 'none',
    logLevel: 'warning',
  });
}

compile();
await bundle();
