import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENTRY_POINTS } from '../scripts/api-report.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The names an API report lists with a value at run time (classes, functions, constants), not types alone. */
async function reportedValues(reportName: string): Promise<string[]> {
  const report = await readFile(join(ROOT, 'docs', 'api', `${reportName}.api.md`), 'utf8');
  return [...report.matchAll(/^export (?:abstract )?(?:class|function|const) (\w+)/gm)].map((match) => match[1]!).sort();
}

describe('the package entry points', () => {
  it.each(ENTRY_POINTS)('$name exports at run time exactly the values its API report lists', async (entry) => {
    const module = (await import(join(ROOT, entry.declarations.replace(/\.d\.ts$/, '.js')))) as Record<string, unknown>;
    const values = await reportedValues(entry.name);
    expect(values.length).toBeGreaterThan(0);
    expect(Object.keys(module).sort()).toEqual(values);
    for (const name of values) expect(module[name], name).toBeDefined();
  });

  it('the root answers the quickstart: a provider, a run', async () => {
    const api = await import('../src/index.ts');
    const summary = await api.runPipeline({
      source: api.generateArticles(2),
      providers: [{ provider: new api.SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), limits: api.requestLimit(Infinity, 1) }],
    });
    expect(summary).toMatchObject({ articles: 2, succeeded: 2, calls: 4 });
  });

  // 47 values (of at most 120 names, types included: test/package/api-report.test.ts): a route of one's
  // own — the gate, the call loop, a pool as an object — is news-processor/routes', tracing
  // news-processor/telemetry's.
  it('the root stays lean: at most 50 values, the mechanisms in news-processor/mechanisms, routes in news-processor/routes', async () => {
    const root = await import('../src/index.ts');
    const mechanisms = await import('../src/mechanisms.ts');
    const routes = await import('../src/routes.ts');
    expect(Object.keys(root).length).toBeLessThanOrEqual(50);
    for (const name of ['TokenBucket', 'CircuitBreaker', 'ManualClock', 'createBackoff', 'parseDuration', 'parseRateLimitHeaders']) {
      expect(root, name).not.toHaveProperty(name);
      expect(mechanisms, name).toHaveProperty(name);
    }
    for (const name of ['CallGate', 'CallLoop', 'ProviderRoute', 'RoutePool']) {
      expect(root, name).not.toHaveProperty(name);
      expect(routes, name).toHaveProperty(name);
    }
    const bucket = new mechanisms.TokenBucket({ rate: 1, burst: 2, clock: new mechanisms.ManualClock() });
    expect(bucket.tryAcquire(2)).toBe(true);
  });

  it('no value is exported by two entry points: each name has one home', async () => {
    const homes = new Map<string, string[]>();
    for (const entry of ENTRY_POINTS) {
      const module = (await import(join(ROOT, entry.declarations.replace(/\.d\.ts$/, '.js')))) as Record<string, unknown>;
      for (const name of Object.keys(module)) homes.set(name, [...(homes.get(name) ?? []), entry.name]);
    }
    expect([...homes].filter(([, entries]) => entries.length > 1)).toEqual([]);
    expect(homes.get('ManualClock')).toEqual(['news-processor-mechanisms']);
  });

  it.each(ENTRY_POINTS)(
    '$name has no side effects when imported: no output, no listeners, no timers keeping the process alive',
    (entry) => {
      // The compiled module, with plain node: what a user of the installed package imports.
      const path = `./${entry.declarations.replace(/\.d\.ts$/, '.js')}`;
      const script =
        "const before = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
        `await import('${path}');` +
        "const after = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
        "if (after !== before) { console.error('listeners added'); process.exitCode = 3; }";
      const started = performance.now();
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
      expect(child.stderr).toBe('');
      expect(child.stdout).toBe('');
      expect(child.status).toBe(0);
      // Generous: the process exits by itself (nothing keeps it alive), on a loaded machine too.
      expect(performance.now() - started).toBeLessThan(15_000);
    },
  );
});
