#!/usr/bin/env node
// The command line: parse flags, validate, call the library, print, exit. No logic of its own.
import { Command, CommanderError, Option } from 'commander';
import pino from 'pino';
import {
  CancelledError,
  JsonlWriter,
  PROFILE_NAMES,
  SimulatedProvider,
  generateArticles,
  isInputError,
  readArticlesJsonl,
  runPipeline,
  type Article,
  type ProfileName,
  type RunSummary,
} from '../src/index.ts';
import { formatAttempt, formatMs, formatResult, formatSummary } from './format.ts';
import { duration, integer, normalizeGoFlags, oneOf, rate } from './parse-values.ts';
import { Terminal } from './terminal.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_INTERRUPTED = 130;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

interface RunFlags {
  articles: number;
  workers: number;
  rate: number;
  burst: number;
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
  output?: string;
  json: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  quiet: boolean;
}

/** A usage or input problem: printed as one line, exit 2. */
class UsageError extends Error {}

const EXAMPLES = `
Examples:
  $ news-processor --articles=5 --workers=5 --rate=3           the Go tool's run
  $ news-processor -articles=20 -rate=2 -burst=1               Go's single-dash spelling works too
  $ news-processor --input fixtures/articles.jsonl --output results.jsonl
  $ news-processor --articles=1000 --rate=50 --profile=production --quiet
  $ news-processor --articles=8 --rate=2 --burst=1 --json | jq .elapsedMs
  $ news-processor --articles=50 --rate=8 --provider-rate=5    send faster than the provider allows: 429s

Exit codes: 0 all succeeded, 1 some article failed, 2 bad usage or input, 130 interrupted (Ctrl-C).`;

function buildProgram(): Command {
  const program = new Command('news-processor')
    .description(
      'Push a batch of articles through rate-limited LLM calls (summarise, then sentiment): a worker pool, ' +
        'a token bucket in front of every call, retries with backoff for 429s and 503s. By default the ' +
        'provider is simulated in-process, so no server or key is needed.',
    )
    .addOption(new Option('--articles <n>', 'number of generated articles').argParser(integer(1, 1e9)).default(5))
    .addOption(new Option('--workers <n>', 'articles processed at once').argParser(integer(1, 100_000)).default(5))
    .addOption(new Option('--rate <calls/s>', "calls per second to the provider, or 'inf'").argParser(rate).default(3))
    .addOption(new Option('--burst <calls>', 'calls that may go at once after a quiet spell').argParser(integer(1, 1e9)).default(3))
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
      new Option('--profile <name>', `simulated failures: ${PROFILE_NAMES.join(', ')} (10% 429, 5% 503, 5% hang for production)`)
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
    .addOption(new Option('--output <file.jsonl>', 'write one result per line as each article ends'))
    .addOption(new Option('--json', 'print only a JSON summary on stdout').default(false))
    .addOption(new Option('--log-level <level>', 'pino log level, logs go to stderr').argParser(oneOf(LOG_LEVELS)).default('error'))
    .addOption(new Option('--quiet', 'no per-call or per-article lines; summary only').default(false))
    .addHelpText('after', EXAMPLES)
    .showSuggestionAfterError(true)
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({
      // Commander puts "Did you mean" on a line of its own; every error here is one line.
      outputError: (text, write) => write(text.replace(/\n\(Did you mean (.*)\?\)/, ' (did you mean $1?)')),
    });
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  let exitCode = EXIT_OK;
  program.action(async (flags: RunFlags) => {
    exitCode = await run(flags, program);
  });
  try {
    await program.parseAsync(normalizeGoFlags(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof UsageError || isInputError(error)) {
      process.stderr.write(`error: ${error.message}\n`);
      return EXIT_USAGE;
    }
    throw error;
  }
  return exitCode;
}

function validate(flags: RunFlags, program: Command): void {
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
  if (flags.output !== undefined && flags.output === flags.input) {
    throw new UsageError('--output must not be the --input file');
  }
  void program;
}

/** Reads the input once up front so a bad line fails the run before any call is spent; returns the article count. */
async function checkInput(path: string, skipInvalid: boolean, terminal: Terminal): Promise<{ count: number; skipped: number }> {
  let count = 0;
  let skipped = 0;
  const onInvalid = ({ path: file, line, reason }: { path: string; line: number; reason: string }) => {
    skipped++;
    if (skipped <= 10) terminal.notice(`warning: skipping ${file}:${line}: ${reason}`);
  };
  for await (const article of readArticlesJsonl(path, { skipInvalid, onInvalid })) {
    void article;
    count++;
  }
  if (skipped > 10) terminal.notice(`warning: skipped ${skipped} invalid lines in all`);
  return { count, skipped };
}

async function run(flags: RunFlags, program: Command): Promise<number> {
  validate(flags, program);
  const terminal = new Terminal();
  const logger = pino({ level: flags.logLevel, base: undefined }, pino.destination({ dest: 2, sync: true }));

  let total = flags.articles;
  let skipped = 0;
  let source: Iterable<Article> | AsyncIterable<Article>;
  if (flags.input === undefined) {
    source = generateArticles(flags.articles, { seed: flags.seed });
  } else {
    ({ count: total, skipped } = await checkInput(flags.input, flags.skipInvalid, terminal));
    source = readArticlesJsonl(flags.input, { skipInvalid: flags.skipInvalid });
  }

  let writer: JsonlWriter | undefined;
  if (flags.output !== undefined) {
    try {
      writer = await JsonlWriter.open(flags.output);
    } catch (error) {
      throw new UsageError(`--output ${flags.output}: cannot write file (${(error as Error).message})`);
    }
  }

  const provider = new SimulatedProvider({
    minLatencyMs: flags.minLatency,
    maxLatencyMs: flags.maxLatency,
    profile: flags.profile,
    seed: flags.seed,
    ...(flags.providerRate === undefined ? {} : { quota: { rate: flags.providerRate, burst: flags.providerBurst ?? 1 } }),
  });

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts > 1) process.exit(EXIT_INTERRUPTED);
    terminal.notice('interrupted: stopping intake, cancelling calls in flight (Ctrl-C again to quit at once)');
    controller.abort(new CancelledError('interrupted (Ctrl-C)'));
  };
  process.on('SIGINT', onSigint);

  const printLines = !flags.json && !flags.quiet;
  let finished = 0;
  let failed = 0;
  let calls = 0;
  const startedMs = performance.now();
  const progressTimer = setInterval(() => {
    const elapsedS = (performance.now() - startedMs) / 1000;
    if (elapsedS < 1) return;
    const etaS = finished > 0 ? ((total - finished) * elapsedS) / finished : Number.NaN;
    terminal.status(
      `${finished}/${total} articles · ${calls} calls · ${(calls / elapsedS).toFixed(1)} calls/s · ${failed} failed` +
        (Number.isFinite(etaS) ? ` · eta ${formatMs(etaS * 1000)}` : ''),
    );
  }, 250);

  let summary: RunSummary;
  try {
    summary = await runPipeline({
      source,
      providers: [{ provider, rate: flags.rate, burst: flags.burst }],
      workers: flags.workers,
      timeoutMs: flags.timeout,
      maxAttempts: flags.maxAttempts,
      logger,
      signal: controller.signal,
      onAttempt: (event) => {
        if (event.called) calls++;
        if (printLines) terminal.line(formatAttempt(event, flags.maxAttempts));
      },
      onResult: async (result) => {
        finished++;
        if (result.status === 'failed') failed++;
        if (printLines) terminal.line(formatResult(result));
        await writer?.write(result);
      },
    });
  } finally {
    clearInterval(progressTimer);
    process.off('SIGINT', onSigint);
    await writer?.close();
    await terminal.close();
  }

  if (flags.json) {
    const json = JSON.stringify({ ...summary, skippedLines: skipped }, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2);
    process.stdout.write(`${json}\n`);
  } else {
    if (printLines) process.stdout.write('\n');
    const lines = formatSummary(summary);
    if (skipped > 0) lines.push(`Skipped input lines: ${skipped}`);
    if (writer !== undefined) lines.push(`Results: ${writer.lines} lines written to ${writer.path}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (summary.interrupted) return EXIT_INTERRUPTED;
  return summary.failed > 0 ? EXIT_FAILED : EXIT_OK;
}

const code = await main(process.argv.slice(2));
// Flush stdout before leaving: process.exit would otherwise cut a piped write short.
process.stdout.write('', () => process.exit(code));
