// `news-processor serve` for the benchmarks that call it over HTTP: one way to start it and wait for it.
import { type CliRun, startCli } from '../../test/cli/run-cli.ts';
import { delay } from './delay.ts';

/** A benchmark's server lives this long at most, in ms: past it, it is taken for hung and killed. @default one hour */
const SERVE_LIFETIME_MS = 3_600_000;
/** How long serve may take to say where it listens, in ms: a few processes starting at once on a loaded machine are slow. */
const START_WITHIN_MS = 30_000;

/**
 * `news-processor serve --port=0` with `flags`, the compiled command as users run it (the benchmark
 * builds it first), in a child process of its own; resolves with its URL once its first stdout line
 * says where it listens, rejects with what it said on stderr when it does not.
 */
export async function startServe(
  flags: readonly string[],
  options: { readonly killAfterMs?: number } = {},
): Promise<{ run: CliRun; url: string }> {
  const run = startCli(['serve', '--port=0', ...flags], { killAfterMs: options.killAfterMs ?? SERVE_LIFETIME_MS });
  const deadline = performance.now() + START_WITHIN_MS;
  for (;;) {
    const url = /^listening on (\S+)\n/.exec(run.stdout())?.[1];
    if (url !== undefined) return { run, url };
    if (run.child.exitCode !== null || performance.now() > deadline) {
      run.send('SIGKILL');
      throw new Error(`serve did not start: ${run.stderr()}`);
    }
    await delay(20);
  }
}
