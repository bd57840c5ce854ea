import { describe, expect, it } from 'vitest';
import { BREAKER_DEFAULTS, formatDuration, GATE_DEFAULTS, PIPELINE_DEFAULTS, RETRY_DEFAULTS, SIMULATED_DEFAULTS } from '../../src/index.ts';
import { runCli } from './run-cli.ts';

/** Every flag whose default is the library's, with that default as `--help` must print it. */
const LIBRARY_DEFAULTS: Readonly<Record<string, string>> = {
  '--workers': String(PIPELINE_DEFAULTS.workers),
  '--timeout': formatDuration(PIPELINE_DEFAULTS.timeoutMs),
  '--max-attempts': String(RETRY_DEFAULTS.maxAttempts),
  '--min-latency': formatDuration(SIMULATED_DEFAULTS.minLatencyMs),
  '--max-latency': formatDuration(SIMULATED_DEFAULTS.maxLatencyMs),
  '--profile': JSON.stringify(SIMULATED_DEFAULTS.profile),
  '--seed': String(SIMULATED_DEFAULTS.seed),
  '--max-output-tokens': String(GATE_DEFAULTS.maxOutputTokens),
  '--breaker-threshold': String(BREAKER_DEFAULTS.failureThreshold),
  '--breaker-cooldown': formatDuration(BREAKER_DEFAULTS.cooldownMs),
};

/** `--flag` → the default `--help` shows for it. */
function helpDefaults(help: string): Map<string, string> {
  const defaults = new Map<string, string>();
  // Commander wraps long descriptions, so a flag's "(default: …)" may be lines below it.
  for (const [, flag, rest] of help.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)([\s\S]*?)(?=^ {2}-|^\S|$(?![\s\S]))/gm)) {
    const value = /\(default: ([^)]*)\)/.exec(rest!.replace(/\s+/g, ' '))?.[1];
    if (value !== undefined) defaults.set(flag!, value);
  }
  return defaults;
}

describe('the CLI and the library agree on every default', () => {
  it.each([[[]], [['bench']]])('news-processor %j --help shows the library defaults', async (command) => {
    const result = await runCli([...command, '--help']);
    expect(result.code).toBe(0);
    const shown = helpDefaults(result.stdout);
    for (const [flag, value] of Object.entries(LIBRARY_DEFAULTS)) expect(shown.get(flag), flag).toBe(value);
  });
});
