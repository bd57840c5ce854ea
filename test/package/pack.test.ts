import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

/**
 * The package as a user gets it: `npm pack` (of the `dist/` that `npm test` has just built), then
 * `npm install` of the tarball into a fresh project that has no TypeScript and no tsx.
 */
describe('the packed package, installed into a fresh project', () => {
  let dir: string;
  let files: string[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'news-processor-pack-'));
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' }),
    ) as { filename: string; files: { path: string }[] }[];
    files = packed[0]!.files.map((file) => file.path);
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', `./${packed[0]!.filename}`], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }, 300_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds the compiled library and command with their types, not the sources, tests or benchmarks', () => {
    expect(files).toContain('dist/src/index.js');
    expect(files).toContain('dist/src/index.d.ts');
    expect(files).toContain('dist/src/testing/index.js');
    expect(files).toContain('dist/cmd/news-processor.js');
    expect(files).toContain('package.json');
    expect(files.filter((path) => /^(src|cmd|test|bench|fixtures)\//.test(path))).toEqual([]);
    expect(files.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
  });

  it('imports with plain node and runs a pipeline', () => {
    const script = `
      import { TokenBucket, runPipeline, SimulatedProvider, generateArticles, requestLimit } from 'news-processor';
      import { ManualClock } from 'news-processor/testing';
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
        `import { TokenBucket, runPipeline, generateArticles, requestLimit, type RunSummary, type ProviderLimits } from 'news-processor';
        import { ScriptedProvider, ManualClock } from 'news-processor/testing';
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
