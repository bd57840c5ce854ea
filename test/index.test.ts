import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';

describe('src/index.ts', () => {
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
      'isRateLimitError',
      'isServerError',
      'isTimeoutError',
      'retry',
      'createBackoff',
      'runPipeline',
      'generateArticles',
      'readArticlesJsonl',
      'MaxWaitExceededError',
      'CallGate',
    ]) {
      expect(api, name).toHaveProperty(name);
    }
  });

  it('has no side effects when imported: no output, no listeners, no timers keeping the process alive', () => {
    const script =
      "const before = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
      "await import('./src/index.ts');" +
      "const after = process.listenerCount('SIGINT') + process.listenerCount('exit');" +
      "if (after !== before) { console.error('listeners added'); process.exitCode = 3; }";
    const started = performance.now();
    const child = spawnSync('node_modules/.bin/tsx', ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('');
    expect(child.status).toBe(0);
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});
