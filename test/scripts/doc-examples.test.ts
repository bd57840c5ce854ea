import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { documentFiles } from '../../scripts/doc-files.ts';
import { findBlocks, unmarkedShellBlocks } from '../../scripts/readme-blocks.ts';

// The documents' shell examples as a user meets them: every block of shell commands in README.md and
// docs/ is run (`sample`, `examples`, `script`) or says why not (`no-run: …`), and the ones that run
// end as their blocks say in a copy of the repository as a clone has it — its tracked files, the
// dependencies installed, built once — through `npm run readme`'s own runner (scripts/readme.ts
// --dry: nothing written back), eight commands at a time: the commands that share a file, a queue,
// a port or a cache in their page's order, the others at once. About two minutes, mostly waiting on the
// examples' rates and latencies (half a minute of CPU); one after another they take eight.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The documents whose shell blocks must be marked: the README and the reference pages. */
const PAGES = documentFiles(ROOT).filter((path) => path === 'README.md' || path.startsWith('docs/'));
/** Commands at a time: most examples wait on rates and latencies, not on the CPU. */
const JOBS = 8;
/** The whole run's limit: its longest command (docs/bench.md's sweep) takes a minute alone. */
const RUN_TIMEOUT_MS = 6 * 60_000;

describe('the shell blocks of README.md and docs/', () => {
  it.each(PAGES)('%s: every block of shell commands is run, or says why not', (page) => {
    const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
    expect(() => findBlocks(lines)).not.toThrow();
    expect(unmarkedShellBlocks(lines).map((line) => `${page}:${line}`)).toEqual([]);
  });

  it("runs the pool example on the providers file it shows: fixtures/pool.json is docs/providers.md's", () => {
    const page = readFileSync(join(ROOT, 'docs/providers.md'), 'utf8');
    const section = page.slice(page.indexOf('## One model, many keys: pools'));
    const shown = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(shown).toBeDefined();
    expect(JSON.parse(readFileSync(join(ROOT, 'fixtures/pool.json'), 'utf8'))).toEqual(JSON.parse(shown!));
  });
});

describe('from a clone', () => {
  const clone = mkdtempSync(join(tmpdir(), 'news-processor-clone-'));
  afterAll(() => rmSync(clone, { recursive: true, force: true }));

  /** A copy of the tracked files as they are now (a clone of the work in progress), node_modules linked, built. */
  function makeClone(): void {
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
    for (const path of tracked) {
      if (path === '' || !existsSync(join(ROOT, path))) continue; // deleted, not yet committed
      mkdirSync(dirname(join(clone, path)), { recursive: true });
      copyFileSync(join(ROOT, path), join(clone, path));
    }
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: clone, stdio: 'ignore' });
  }

  function run(command: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((done, fail) => {
      const child = spawn(command, args, { cwd: clone, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.once('error', fail);
      child.once('close', (code) => done({ code, stdout, stderr }));
    });
  }

  it(
    'runs every example as written, each ending as its block says, and leaves nothing running',
    async () => {
      const startMs = performance.now();
      makeClone();
      // The two ways the documents run the command from a clone; the runner below runs both as the built file.
      const version = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')).version as string;
      const [npx, npmStart] = await Promise.all([
        run('npx', ['news-processor', '--version']),
        run('npm', ['start', '--silent', '--', '--version']),
      ]);
      expect({ code: npx.code, out: npx.stdout.trim() }, npx.stderr).toEqual({ code: 0, out: version });
      expect({ code: npmStart.code, out: npmStart.stdout.trim() }, npmStart.stderr).toEqual({ code: 0, out: version });

      const ran = await run(process.execPath, ['--import', 'tsx', 'scripts/readme.ts', '--dry', `--jobs=${JOBS}`]);
      const seconds = ((performance.now() - startMs) / 1000).toFixed(0);
      // On failure: which commands, and what each said last.
      expect(ran.code, ran.stderr.slice(ran.stderr.lastIndexOf('did not end as the documents say') - 200)).toBe(0);
      expect(ran.stderr).toMatch(/\d+ blocks, every command ended as the documents say/);
      process.stderr.write(`doc examples: every block ran from a clone in ${seconds} s\n`);
    },
    RUN_TIMEOUT_MS,
  );
});
