import { describe, it, expect } from 'vitest';
import { runCli, type CliResult } from './run-cli.ts';

/** The --json figures, checked to be the only thing on stdout. */
function figures(result: CliResult): any {
  return JSON.parse(result.stdout);
}

function expectOneLineError(result: CliResult, pattern: RegExp): void {
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

describe.concurrent('news-processor --config', () => {
  it('runs several providers, each task on its own, with per-provider figures', async () => {
    const result = await runCli([
      '--config=fixtures/providers/two-providers.json',
      '--articles=12',
      '--workers=6',
      '--max-attempts=8',
      '--timeout=20s',
      '--json',
    ]);
    expect([0, 1]).toContain(result.code);
    const json = figures(result);
    expect(json.succeeded + json.failed).toBe(12);
    expect(json.providers.map((p: any) => p.name)).toEqual(['openai-like', 'anthropic-like']);
    for (const provider of json.providers) {
      // summarize → openai-like, sentiment → anthropic-like: each saw calls, and each counts tokens.
      expect(provider.calls).toBeGreaterThanOrEqual(json.succeeded);
      expect(provider.countsTokens).toBe(true);
      expect(provider.tokensUsed).toBeGreaterThan(0);
    }
    // The anthropic-like provider goes down from 1 s to 3 s behind a 3-failure breaker.
    expect(json.providers[1].serverErrors).toBeGreaterThan(0);
  });

  it.each([
    [
      'bad-rate.json',
      /^error: fixtures\/providers\/bad-rate\.json: providers\[0\]\.limits\[0\]\.rate: expected a number > 0 or "inf", got "fast"$/,
    ],
    [
      'bad-route.json',
      /^error: fixtures\/providers\/bad-route\.json: routes\.sentiment: expected one of the provider names \(a\), got "b"$/,
    ],
    ['unknown-field.json', /^error: fixtures\/providers\/unknown-field\.json: providers\[0\]\.adaptiv: unknown field/],
    ['invalid-json.json', /^error: fixtures\/providers\/invalid-json\.json: invalid JSON/],
    // The path once, as --input says it: not again in Node's ", open '…'" tail.
    ['missing.json', /^error: fixtures\/providers\/missing\.json: cannot read file \(ENOENT: no such file or directory\)$/],
  ])('refuses %s with one line naming the field, exit 2', async (file, pattern) => {
    expectOneLineError(await runCli([`--config=fixtures/providers/${file}`]), pattern);
  });

  it('refuses single-provider flags next to --config', async () => {
    expectOneLineError(
      await runCli(['--config=fixtures/providers/two-providers.json', '--rate=5']),
      /^error: --rate applies without --config/,
    );
    expectOneLineError(
      await runCli(['--config=fixtures/providers/two-providers.json', '--tpm=1000']),
      /^error: --tpm describes a single provider/,
    );
  });
});

describe.concurrent('news-processor: limits as providers set them', () => {
  const quick = ['--min-latency=5ms', '--max-latency=15ms', '--json'];

  it('--adaptive cuts the rate to the provider quota: fewer 429s than the same run without it', async () => {
    const args = ['--articles=40', '--rate=20', '--burst=1', '--provider-rate=10', '--max-attempts=6', ...quick];
    const [fixed, adaptive] = await Promise.all([runCli(args), runCli([...args, '--adaptive'])]);
    const without = figures(fixed);
    const withIt = figures(adaptive);
    expect(withIt.providers[0].rateCuts).toBeGreaterThan(0);
    expect(withIt.providers[0].finalRate).toBeLessThan(20);
    expect(withIt.rateLimited).toBeLessThan(without.rateLimited);
  });

  it('--call-timeout cuts hung calls and retries them: fewer timeouts dead-lettered than the same run without it', async () => {
    // The production profile hangs 5 % of calls; without a call timeout each takes its article's whole --timeout.
    const args = ['--articles=200', '--rate=inf', '--workers=20', '--profile=production', '--min-latency=20ms', '--max-latency=80ms'];
    const [whole, cut] = await Promise.all([
      runCli([...args, '--timeout=600ms', '--json']),
      runCli([...args, '--timeout=600ms', '--call-timeout=150ms', '--json']),
    ]);
    const without = figures(whole);
    const withIt = figures(cut);
    // Without it no timeout is retried: each is a dead letter.
    expect(without.failureReasons.TimeoutError).toBe(without.timeouts);
    expect(without.timeouts).toBeGreaterThan(5);
    // With it most hung calls answer on their next attempt.
    expect(withIt.timeouts).toBeGreaterThan(5);
    expect(withIt.failureReasons.TimeoutError ?? 0).toBeLessThan(without.failureReasons.TimeoutError / 2);
    expect(withIt.succeeded).toBeGreaterThan(without.succeeded);
  });

  it('an outage opens the breaker: articles wait for it rather than spend attempts on it; a provider that stays down stops the run', async () => {
    const args = ['--articles=30', '--rate=20', '--burst=2', '--breaker-threshold=3', '--breaker-cooldown=300ms', ...quick];
    const [short, down] = await Promise.all([
      runCli([...args, '--outage=500ms..1500ms', '--max-attempts=20', '--timeout=20s']),
      runCli([...args, '--outage=500ms..1h', '--breaker-give-up=1s', '--timeout=20s']),
    ]);
    const riding = figures(short);
    expect(short.code, short.stderr).toBe(0);
    expect(riding.providers[0].breakerOpens).toBeGreaterThan(0);
    expect(riding.providers[0].circuitRejections).toBeGreaterThan(0);
    expect(riding.succeeded).toBe(30);

    const stopped = figures(down);
    expect(down.code).toBe(1);
    expect(stopped.stoppedBy).toMatchObject({ by: 'provider-down', provider: 'simulated', type: 'ServerError' });
    expect(stopped.notStarted).toBeGreaterThan(0);
    expect(stopped.succeeded + stopped.failed + stopped.cancelled + stopped.notStarted).toBe(30);
    expect(down.stderr.trim().split('\n').at(-1)).toMatch(
      /^error: provider "simulated" is down for 1\.\d+s, its circuit open and every probe failing \(the last: ServerError: .*\); the run was stopped: run again once it is back \(see --breaker-give-up\)$/,
    );
  });

  it('--tpm counts tokens, and a call larger than the whole limit is a dead letter at once, not a hang', async () => {
    const fits = await runCli(['--articles=5', '--rate=inf', '--tpm=100000', ...quick]);
    expect(fits.code).toBe(0);
    expect(figures(fits).providers[0].tokensUsed).toBeGreaterThan(0);

    // Above --max-output-tokens (256), so the run starts, but below it plus any article's prompt.
    const tooSmall = await runCli(['--articles=3', '--rate=inf', '--tpm=300', ...quick]);
    expect(tooSmall.code).toBe(1);
    const json = figures(tooSmall);
    expect(json.failed).toBe(3);
    expect(json.calls).toBe(0);
    expect(json.failureReasons.LimitTooSmallError).toBe(3);
  });

  it('--headers and --sync-headers run with every header style', async () => {
    for (const style of ['openai', 'anthropic', 'ietf']) {
      const result = await runCli([
        '--articles=5',
        '--rate=10',
        '--provider-rate=10',
        '--provider-burst=3',
        `--headers=${style}`,
        '--sync-headers',
        ...quick,
      ]);
      expect(result.code, result.stderr).toBe(0);
      expect(figures(result).succeeded).toBe(5);
    }
  });
});
