import { execFileSync } from 'node:child_process';
import { closeSync, constants, createReadStream, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, makeTempDir, startCli, type CliResult } from './run-cli.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

/** Complete lines in a file so far (0 while it does not exist yet). */
async function completeLines(path: string): Promise<number> {
  try {
    return (await readFile(path, 'utf8')).split('\n').length - 1;
  } catch {
    return 0;
  }
}

/**
 * Quitting at once on a second Ctrl-C may be an exit with code 130, or death by SIGINT (the
 * default action, which a shell reports as 130 too): either is "interrupted".
 */
function expectInterruptedExit(result: CliResult): void {
  expect(result.timedOut, 'the process did not end (killed by the timeout)').toBe(false);
  if (result.code === null) expect(result.signal).toBe('SIGINT');
  else expect(result.code).toBe(130);
}

/** Waits until `ready()` holds, checking every 50 ms; fails after `timeoutMs`. */
async function waitUntil(what: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await ready())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

describe.concurrent('news-processor - Ctrl-C', { timeout: 60_000 }, () => {
  it('SIGINT stops the run: exit 130 soon, a JSON summary, and every started article in the results file', async () => {
    const output = join(temp.dir, 'interrupted.jsonl');
    // A run that would take hours: 100,000 articles at 20 calls/s.
    const run = startCli(['--articles=100000', '--rate=20', '--min-latency=10ms', '--max-latency=50ms', '--output', output, '--json'], {});
    await sleep(1500);
    await waitUntil('some results are written', async () => (await completeLines(output)) >= 2, 15_000);

    const signalledMs = performance.now();
    run.interrupt();
    const result = await run.result;
    const exitAfterMs = performance.now() - signalledMs;

    expect(result.timedOut, 'the run did not stop').toBe(false);
    expect(result.signal).toBeNull();
    expect(result.code).toBe(130);
    expect(exitAfterMs).toBeLessThan(1500);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).toMatch(/^interrupted: stopping intake, cancelling calls in flight \(Ctrl-C again to quit at once\)$/m);

    const summary = JSON.parse(result.stdout) as {
      interrupted: boolean;
      signal: string;
      articles: number;
      succeeded: number;
      failed: number;
      cancelled: number;
      notStarted: number;
    };
    expect(summary.interrupted).toBe(true);
    expect(summary.signal).toBe('SIGINT');
    expect(summary.cancelled).toBeGreaterThanOrEqual(0);
    expect(summary.succeeded).toBeGreaterThan(0);
    expect(summary.succeeded + summary.failed + summary.cancelled).toBe(summary.articles);
    // Every requested article accounted for: started ones in the results, the rest never started.
    expect(summary.articles + summary.notStarted).toBe(100_000);

    const text = await readFile(output, 'utf8');
    expect(text.endsWith('\n'), 'the last line is cut short').toBe(true);
    const results = text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; status: string; error?: { type: string } });
    expect(results).toHaveLength(summary.succeeded + summary.failed + summary.cancelled);
    expect(new Set(results.map((r) => r.id)).size).toBe(results.length);
    const cancelled = results.filter((r) => r.status === 'cancelled');
    expect(cancelled).toHaveLength(summary.cancelled);
    for (const r of cancelled) expect(r.error?.type).toBe('CancelledError');
  });

  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)('%s stops the run like the first Ctrl-C: drained, every result written, the summary, exit %d', async (signal, code) => {
    const output = join(temp.dir, `stopped-by-${signal}.jsonl`);
    const run = startCli(['--articles=5000', '--rate=20', '--min-latency=10ms', '--max-latency=50ms', '--output', output, '--quiet']);
    await waitUntil('some results are written', async () => (await completeLines(output)) >= 2, 15_000);
    run.send(signal);
    const result = await run.result;
    expect(result.timedOut, 'the run did not stop').toBe(false);
    expect(result.signal).toBeNull();
    expect(result.code).toBe(code);
    // A program sent it, not a person at a keyboard: the notice names the signal to send again, not Ctrl-C.
    expect(result.stderr).toMatch(
      new RegExp(`^${signal}: stopping intake, cancelling calls in flight \\(${signal} again to quit at once\\)$`, 'm'),
    );
    const lines = result.stdout.split('\n');
    const written = await completeLines(output);
    expect(lines[0]).toMatch(new RegExp(`^Rate limit=20/s burst=3 \\| ${written} of 5000 articles \\| `));
    expect(result.stdout).toMatch(new RegExp(`^Interrupted \\(${signal}\\): `, 'm'));
    expect(result.stdout).toMatch(new RegExp(`\\| Not started: ${5000 - written}$`, 'm'));
  });

  it('two SIGINTs in a row: exit 130 at once', async () => {
    // The first Ctrl-C cancels the calls in flight and the run ends in a few ms; on a loaded
    // machine it can end before the second signal arrives, and then there is no second one to
    // test. Such a try proves nothing either way, so it is run again (at most three times).
    for (let attempt = 1; ; attempt++) {
      const output = join(temp.dir, `interrupted-twice-${attempt}.jsonl`);
      const run = startCli(
        ['--articles=100000', '--rate=20', '--min-latency=10ms', '--max-latency=50ms', '--output', output, '--json'],
        {},
      );
      await sleep(1500);
      await waitUntil('some results are written', async () => (await completeLines(output)) >= 2, 15_000);

      const signalledMs = performance.now();
      run.interrupt();
      // The second must reach the command as a signal of its own, after it has taken the first.
      await run.waitForStderr(/^interrupted: /m, 5000);
      run.interrupt();
      const result = await run.result;

      expectInterruptedExit(result);
      expect(performance.now() - signalledMs).toBeLessThan(1000);
      expect(result.stderr).not.toMatch(/^\s+at /m);
      // Ended in order by the first signal (exit 130, no "again"): the second came too late to be
      // seen — or was ignored, which three tries in a row tell apart.
      if (!/^SIGINT again: /m.test(result.stderr) && result.code === 130 && attempt < 3) {
        console.log(`try ${attempt}: the run ended before the second SIGINT reached it; trying again`);
        continue;
      }
      expect(result.stderr).toMatch(/^SIGINT again: quitting now/m);
      return;
    }
  });

  it('a second SIGINT quits at once with exit 130, even while the first waits for the results to be written', async () => {
    // The results go into a pipe that the test stops reading: the writer falls behind, the run
    // stalls on it, and the first Ctrl-C cannot finish until the results are written, which is
    // exactly when a user presses Ctrl-C again.
    const fifo = join(temp.dir, 'results.fifo');
    execFileSync('mkfifo', [fifo]);
    const run = startCli([...FAST, '--articles=100000', '--output', fifo, '--json'], { killAfterMs: 8000 });
    const reader = createReadStream(fifo, { highWaterMark: 1024 });
    try {
      await new Promise<void>((resolve, reject) => {
        reader.once('data', () => resolve());
        reader.once('error', reject);
        run.result.then(() => reject(new Error(`the run ended before writing a result; stderr: ${run.stderr()}`)), reject);
      });
      reader.pause();
      await sleep(500);

      const signalledMs = performance.now();
      run.interrupt();
      await run.waitForStderr(/^interrupted: /m, 5000);
      await sleep(200);
      expect(run.child.exitCode, 'the first Ctrl-C should wait for the results to be written').toBeNull();

      const secondMs = performance.now();
      run.interrupt();
      const result = await run.result;
      const exitAfterMs = performance.now() - secondMs;

      expectInterruptedExit(result);
      expect(exitAfterMs).toBeLessThan(1000);
      expect(performance.now() - signalledMs).toBeLessThan(3000);
      expect(result.stderr).not.toMatch(/^\s+at /m);
    } finally {
      // A reader still waiting for a writer to open the pipe would keep this process alive.
      if (reader.pending) closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      reader.destroy();
    }
  });
});
