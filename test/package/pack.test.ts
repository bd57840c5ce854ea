import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONAL_PACKAGES } from '../../src/optional-package.ts';
import { VENDORS } from '../../src/vendors/registry.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

/** Bytes under a folder, as `du` counts file contents (symlinks not followed). */
async function folderBytes(path: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return bytes;
}

/**
 * What `npm pack` packs, on a copy of the repository (the files its build and pack read, and its
 * node_modules linked): the pack swaps package.json for the published one while it runs, which
 * tests running beside this one read.
 */
async function stageRepository(): Promise<string> {
  const stage = await mkdtemp(join(tmpdir(), 'news-processor-repository-'));
  for (const path of [
    'package.json',
    '.npmignore',
    'README.md',
    'LICENSE',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'cmd',
    'scripts',
  ]) {
    await cp(join(ROOT, path), join(stage, path), { recursive: true });
  }
  await symlink(join(ROOT, 'node_modules'), join(stage, 'node_modules'));
  return stage;
}

/**
 * The package as a user gets it: `npm pack` (its prepack builds `dist/` and writes the published
 * manifest), then `npm install` of the tarball into a fresh project that has no TypeScript, no tsx
 * and none of the optional packages.
 */
describe('the packed package, installed into a fresh project', () => {
  let dir: string;
  let stage: string;
  let files: string[];
  let manifest: Record<string, unknown>;
  let install: { status: number | null; stdout: string; stderr: string };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'news-processor-pack-'));
    stage = await stageRepository();
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
        cwd: stage,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    ) as { filename: string }[];
    const tarball = join(dir, packed!.filename);
    files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((path) => path.replace(/^package\//, ''));
    manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, unknown>;
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: dir, encoding: 'utf8' });
  }, 300_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(stage, { recursive: true, force: true });
  });

  it('holds the compiled library and command with their types, README and LICENSE, not the sources, tests or benchmarks', () => {
    for (const path of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/cli/news-processor.js', 'package.json', 'README.md', 'LICENSE']) {
      expect(files).toContain(path);
    }
    for (const entry of ['middleware', 'redis', 'queue', 'batch', 'server', 'bench', 'testing'])
      expect(files).toContain(`dist/src/${entry}/index.js`);
    expect(files.filter((path) => /^(src|cmd|test|bench|fixtures|scripts)\//.test(path))).toEqual([]);
    expect(files.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
  });

  it('carries no build step and no development dependencies: installing it runs nothing and warns of nothing', async () => {
    expect(manifest).not.toHaveProperty('scripts');
    expect(manifest).not.toHaveProperty('devDependencies');
    expect(install.status, install.stderr).toBe(0);
    expect(install.stderr).toBe('');
    expect(install.stdout).not.toMatch(/install-scripts|prepare|warn/i);
    // The repository's own manifest is back once the pack is done.
    expect(await readFile(join(stage, 'package.json'), 'utf8')).toBe(await readFile(join(ROOT, 'package.json'), 'utf8'));
    expect(existsSync(join(stage, 'dist', 'repository-package.json'))).toBe(false);
  });

  it('weighs what the token bucket needs: the optional packages are peers, left out', async () => {
    const optional = Object.keys(manifest.peerDependencies as object);
    expect(optional.sort()).toEqual(
      [...Object.keys(OPTIONAL_PACKAGES), ...new Set(Object.values(VENDORS).map(({ sdkPackage }) => sdkPackage.name))].sort(),
    );
    for (const name of optional) expect(existsSync(join(dir, 'node_modules', name))).toBe(false);
    const bytes = await folderBytes(join(dir, 'node_modules'));
    // A guarantee, not a figure: what one installs for TokenBucket stays under 10 MB (the README gives the figure).
    expect(bytes).toBeLessThan(10 * 1024 * 1024);
  });

  it('imports every entry point with plain node, none of the optional packages installed, and runs a pipeline', () => {
    const script = `
      import { runPipeline, SimulatedProvider, generateArticles, requestLimit } from 'news-processor';
      import { TokenBucket, ManualClock } from 'news-processor/mechanisms';
      import { drive } from 'news-processor/testing';
      import { rateLimit, KeyedLimiter } from 'news-processor/middleware';
      import { RedisLimits } from 'news-processor/redis';
      import { LlmServer } from 'news-processor/server';
      import { runSweep } from 'news-processor/bench';
      for (const name of [drive, rateLimit, KeyedLimiter, RedisLimits, LlmServer, runSweep]) if (typeof name !== 'function') throw new Error('missing');
      const bucket = new TokenBucket({ rate: 1, burst: 2, clock: new ManualClock() });
      const summary = await runPipeline({
        source: generateArticles(3),
        providers: [{ provider: new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), limits: requestLimit(Infinity, 1) }],
      });
      console.log(JSON.stringify({ took: bucket.tryAcquire(2), succeeded: summary.succeeded, calls: summary.calls }));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ took: true, succeeded: 3, calls: 6 });
  });

  it('type-checks a TypeScript consumer against the shipped declarations, and refuses a wrong one', async () => {
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        include: ['consumer.ts'],
      }),
    );
    const consumer = (body: string) =>
      writeFile(
        join(dir, 'consumer.ts'),
        `import { runPipeline, generateArticles, requestLimit, type RunSummary, type ProviderLimits } from 'news-processor';
        import { TokenBucket, ManualClock } from 'news-processor/mechanisms';
        import { ScriptedProvider } from 'news-processor/testing';
        // Entry points whose optional packages are not installed type-check all the same.
        import type { RateLimitOptions } from 'news-processor/middleware';
        import type { LlmServerOptions } from 'news-processor/server';
        import type { BenchChartOptions } from 'news-processor/bench';
        export type Unused = [RateLimitOptions, LlmServerOptions, BenchChartOptions];
        ${body}`,
      );
    await consumer(`
      const clock = new ManualClock();
      const bucket = new TokenBucket({ rate: 3, burst: 1, clock });
      const ok: boolean = bucket.tryAcquire();
      const summary: RunSummary = await runPipeline({
        source: generateArticles(1),
        providers: [{ provider: new ScriptedProvider({ name: 'p', clock }), limits: requestLimit(3, 1) }],
        clock,
      });
      const rate: number = summary.providers[0]!.rate;
      const limits: ProviderLimits | undefined = undefined;
      export { ok, rate, limits };`);
    const good = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' });
    expect(good.stdout + good.stderr).toBe('');
    expect(good.status).toBe(0);

    await consumer(`export const bucket = new TokenBucket({ rate: 'fast', burst: 1 });`);
    const bad = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' });
    expect(bad.stdout).toMatch(/consumer\.ts.*error TS2322/);
  });

  it('says which package a feature needs, in one line, before any call', () => {
    const child = spawnSync('npx', ['news-processor', '--articles=2', '--tpm=100000'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(child.stderr).toBe(
      'error: counting prompt tokens for token limits needs the gpt-tokenizer package: npm install gpt-tokenizer@4.0.0\n',
    );
    expect(child.stdout).toBe('');
    expect(child.status).toBe(2);
  });

  it('runs the installed command with npx', async () => {
    const child = spawnSync('npx', ['news-processor', '--articles=2', '--rate=inf', '--min-latency=0ms', '--max-latency=0ms', '--json'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ articles: 2, succeeded: 2, failed: 0 });
    const manifest = JSON.parse(await readFile(join(dir, 'node_modules', 'news-processor', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    // The command runs compiled JavaScript: no TypeScript loader at run time.
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
  });
});
