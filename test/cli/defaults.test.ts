import { describe, expect, it } from 'vitest';
import { BATCH_DEFAULTS } from '../../src/batch/index.ts';
import { GATE_DEFAULTS, PIPELINE_DEFAULTS, SIMULATED_DEFAULTS } from '../../src/index.ts';
import { BREAKER_DEFAULTS, formatDuration, RETRY_DEFAULTS } from '../../src/mechanisms.ts';
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
  '--breaker-give-up': formatDuration(PIPELINE_DEFAULTS.giveUpAfterMs),
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

  it('news-processor --help shows the batch run defaults (bench has no --batch)', async () => {
    const result = await runCli(['--help']);
    expect(helpDefaults(result.stdout).get('--batch-poll')).toBe(formatDuration(BATCH_DEFAULTS.pollMs));
  });
});

/** Each flag in `--help`: its name, whether it takes a value, its description (unwrapped) and its heading. */
function helpFlags(help: string): { flag: string; takesValue: boolean; text: string; heading: string }[] {
  const flags: { flag: string; takesValue: boolean; text: string; heading: string }[] = [];
  let heading = '';
  for (const block of help.split(/\n(?=\S)/)) {
    heading = block.split('\n')[0]!;
    for (const [, flag, value, rest] of block.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)( <[^>]+>)?([\s\S]*?)(?=^ {2}-|(?![\s\S]))/gm)) {
      flags.push({ flag: flag!, takesValue: value !== undefined, text: rest!.replace(/\s+/g, ' ').trim(), heading });
    }
  }
  return flags;
}

/** Flags whose value is free text — a file, a URL, a name, an address — with nothing to range over. */
const FREE_TEXT = new Set([
  '--input',
  '--output',
  '--config',
  '--chart',
  '--model',
  '--base-url',
  '--api-key-env',
  '--api-version',
  '--host',
  '--redis',
  '--quota-key',
  '--redis-prefix',
  '--budget-key',
  '--queue',
  '--redis-ca',
  '--redis-cert',
  '--redis-key',
  '--api-keys',
  '--api-keys-file',
  '--report',
  '--dashboard-host',
  '--cache',
]);
/** What a range or a set of choices looks like in a description. */
const ACCEPTS =
  /\((?:each )?(?:\d+ to \d+|[<>]=? \d+[^)]*|a number > 0[^)]*|start\.\.end[^)]*|[\w-]+(?:, [\w-]+)+)\)|: [\w-]+(?:, [\w-]+)+/;

describe('--help says what every flag accepts', () => {
  it.each([[[]], [['bench']], [['serve']]])('news-processor %j --help: a range or the choices for each value', async (command) => {
    const result = await runCli([...command, '--help']);
    expect(result.code).toBe(0);
    const flags = helpFlags(result.stdout).filter(({ takesValue, flag }) => takesValue && !FREE_TEXT.has(flag));
    expect(flags.length).toBeGreaterThanOrEqual(command[0] === 'serve' ? 9 : 20);
    for (const { flag, text } of flags) expect(text, flag).toMatch(ACCEPTS);
  });

  it.each([[[]], [['bench']]])(
    'news-processor %j --help: every run flag under a heading, --help and --version alone under Options',
    async (command) => {
      const result = await runCli([...command, '--help']);
      for (const { flag, heading } of helpFlags(result.stdout)) {
        if (flag === '--help' || flag === '--version') expect(heading, flag).toBe('Options:');
        else expect(heading, flag).not.toBe('Options:');
      }
    },
  );
});
