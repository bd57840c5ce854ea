import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the package entry points', () => {
  it('exports the public API under its documented names', async () => {
    const api = await import('../src/index.ts');
    for (const name of [
      'TokenBucket',
      'ManualClock',
      'systemClock',
      'SimulatedProvider',
      'RateLimitError',
      'ServerError',
      'TimeoutError',
      'retry',
      'createBackoff',
      'runPipeline',
      'generateArticles',
      'readArticlesJsonl',
      'MaxWaitExceededError',
      'CallGate',
      'LocalLimits',
      'requestLimit',
    ]) {
      expect(api, name).toHaveProperty(name);
    }
    const testing = await import('../src/testing/index.ts');
    for (const name of ['ManualClock', 'ScriptedProvider', 'drive']) expect(testing, name).toHaveProperty(name);
  });

  it.each([
    ['news-processor', './dist/src/index.js'],
    ['news-processor/testing', './dist/src/testing/index.js'],
  ])('%s has no side effects when imported: no output, no listeners, no timers keeping the process alive', (_, path) => {
    // The compiled module, with plain node: what a user of the installed package imports.
    const script =
      "const before = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
      `await import('${path}');` +
      "const after = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
      "if (after !== before) { console.error('listeners added'); process.exitCode = 3; }";
    const started = performance.now();
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('');
    expect(child.status).toBe(0);
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});
