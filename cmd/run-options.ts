// The flags every run takes (the main command and `bench` alike), their checks, and what they build.
import { Option, type Command } from 'commander';
import {
  PROFILE_NAMES,
  SimulatedProvider,
  generateArticles,
  readArticlesJsonl,
  type Article,
  type InputIssue,
  type ProfileName,
} from '../src/index.ts';
import { formatMs } from './format.ts';
import { duration, integer, oneOf, rate } from './parse-values.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Flags shared by every run; `rate` and `burst` are added per command (one value, or a list for bench). */
export interface RunFlags {
  articles: number;
  workers: number;
  timeout: number;
  maxAttempts: number;
  minLatency: number;
  maxLatency: number;
  profile: ProfileName;
  seed: number;
  providerRate?: number;
  providerBurst?: number;
  input?: string;
  skipInvalid: boolean;
  json: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  quiet: boolean;
}

/** A usage or input problem: printed as one line, exit 2. */
export class UsageError extends Error {}

export function addRunOptions(command: Command): Command {
  return command
    .addOption(new Option('--articles <n>', 'number of generated articles').argParser(integer(1, 1e9)).default(5))
    .addOption(new Option('--workers <n>', 'articles processed at once').argParser(integer(1, 100_000)).default(5))
    .addOption(
      new Option('--timeout <duration>', 'per-article budget for limiter waits and calls together')
        .argParser(duration({ allowZero: false }))
        .default(5000, '5s'),
    )
    .addOption(new Option('--max-attempts <n>', 'attempts per call, the first included').argParser(integer(1, 100)).default(3))
    .addOption(
      new Option('--min-latency <duration>', 'simulated provider: shortest answer time')
        .argParser(duration({ allowZero: true }))
        .default(200, '200ms'),
    )
    .addOption(
      new Option('--max-latency <duration>', 'simulated provider: longest answer time')
        .argParser(duration({ allowZero: true }))
        .default(800, '800ms'),
    )
    .addOption(
      new Option('--profile <name>', `simulated failures: ${PROFILE_NAMES.join(', ')} (production: 10% 429, 5% 503, 5% hang)`)
        .argParser(oneOf(PROFILE_NAMES))
        .default('default'),
    )
    .addOption(new Option('--seed <n>', 'seed for the simulated provider and generated articles').argParser(integer(0)).default(1))
    .addOption(new Option('--provider-rate <calls/s>', "simulated provider's own quota; faster clients get 429s").argParser(rate))
    .addOption(
      new Option('--provider-burst <calls>', "burst of the provider's quota (default 1 with --provider-rate)").argParser(integer(1, 1e9)),
    )
    .addOption(new Option('--input <file.jsonl>', 'read articles from JSONL (id, title, content, url?, source?)').conflicts('articles'))
    .addOption(new Option('--skip-invalid', 'with --input: skip and count bad lines instead of stopping').default(false))
    .addOption(new Option('--json', 'print only JSON on stdout').default(false))
    .addOption(new Option('--log-level <level>', 'pino log level, logs go to stderr').argParser(oneOf(LOG_LEVELS)).default('error'))
    .addOption(new Option('--quiet', 'print the summary only').default(false));
}

export function validateRunFlags(flags: RunFlags): void {
  if (flags.minLatency > flags.maxLatency) {
    throw new UsageError(
      `--min-latency (${formatMs(flags.minLatency)}) must not exceed --max-latency (${formatMs(flags.maxLatency)})`,
    );
  }
  if (flags.providerBurst !== undefined && flags.providerRate === undefined) {
    throw new UsageError('--provider-burst needs --provider-rate (the quota it belongs to)');
  }
  if (flags.skipInvalid && flags.input === undefined) {
    throw new UsageError('--skip-invalid applies to --input files only');
  }
}

/** The simulated provider the flags describe. A new one per run, so a seed replays the same run. */
export function createProvider(flags: RunFlags): SimulatedProvider {
  return new SimulatedProvider({
    minLatencyMs: flags.minLatency,
    maxLatencyMs: flags.maxLatency,
    profile: flags.profile,
    seed: flags.seed,
    ...(flags.providerRate === undefined ? {} : { quota: { rate: flags.providerRate, burst: flags.providerBurst ?? 1 } }),
  });
}

export interface CheckedInput {
  /** Articles the run will see. */
  readonly count: number;
  /** Invalid lines skipped (with --skip-invalid). */
  readonly skipped: number;
  /** A fresh source over the articles; call once per run. */
  readonly open: () => Iterable<Article> | AsyncIterable<Article>;
}

/**
 * Reads an --input file once up front, so a bad line fails the run before any call is spent, or
 * describes the generated articles. Bad lines become `InputError`s (exit 2) unless skipped.
 */
export async function checkInput(flags: RunFlags, warn: (text: string) => void): Promise<CheckedInput> {
  const { input, skipInvalid } = flags;
  if (input === undefined) {
    return { count: flags.articles, skipped: 0, open: () => generateArticles(flags.articles, { seed: flags.seed }) };
  }
  let count = 0;
  let skipped = 0;
  const onInvalid = ({ path, line, reason }: InputIssue) => {
    skipped++;
    if (skipped <= 10) warn(`warning: skipping ${path}:${line}: ${reason}`);
  };
  for await (const article of readArticlesJsonl(input, { skipInvalid, onInvalid })) {
    void article;
    count++;
  }
  if (skipped > 10) warn(`warning: skipped ${skipped} invalid lines in all`);
  return { count, skipped, open: () => readArticlesJsonl(input, { skipInvalid }) };
}
