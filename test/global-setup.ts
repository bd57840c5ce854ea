import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Builds `dist/` once before any test runs (`npm run build`: the library compiled, the command bundled): the tests that spawn the command or install the
 * packed package run the compiled JavaScript, which must be the sources' of now — also under a bare
 * `npx vitest`, which would otherwise test whatever an earlier build left.
 */
export default function setup(): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}
