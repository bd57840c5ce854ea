#!/usr/bin/env node
// The command line: parse flags, validate, call the library, print, exit. No logic of its own.
import { Command, CommanderError, Option } from 'commander';
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  CancelledError,
  JsonlWriter,
  isConfigError,
  isInputError,
  isOutputError,
  runPipeline,
  type OutputError,
  type RunSummary,
} from '../src/index.ts';
import { buildBenchCommand } from './bench.ts';
import { formatAttempt, formatMs, formatResult, formatSummary } from './format.ts';
import { integer, normalizeGoFlags, rate } from './parse-values.ts';
import { addRedisOptions, redisStopLine, shareLimits, validateRedisFlags, type RedisFlags } from './redis-options.ts';
import {
  UsageError,
  addRunOptions,
  createLogger,
  checkInput,
  oneLineErrors,
  providerSetups,
  validateRunFlags,
  type RunFlags,
} from './run-options.ts';
import { Terminal, handleInterrupts } from './terminal.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_INTERRUPTED = 130;
/** 128 + SIGPIPE, as a C tool ends when its reader closes the pipe. */
const EXIT_STDOUT_CLOSED = 141;
interface MainFlags extends RunFlags, RedisFlags {
  rate: number;
  burst: number;
  output?: string;
}

const EXAMPLES = `
Examples:
  $ news-processor --articles=5 --workers=5 --rate=3           the Go tool's run
  $ news-processor -articles=10 -rate=5 -burst=1               Go's single-dash spelling works too
  $ news-processor --input fixtures/articles.jsonl --output results.jsonl
  $ news-processor --articles=1000 --rate=50 --workers=20 --profile=production --quiet
  $ news-processor --articles=4 --rate=2 --burst=1 --json | jq .elapsedMs
  $ news-processor --articles=50 --rate=8 --provider-rate=5    send faster than the provider allows: 429s
  $ news-processor --articles=50 --rate=20 --provider-rate=10 --adaptive        find the provider's rate
  $ news-processor --articles=60 --rate=10 --outage=1s..4s --max-attempts=10 --timeout=20s   ride out an outage
  $ news-processor --config fixtures/providers/two-providers.json --articles=40   several providers
  $ news-processor bench --rate=1000,3,2 --burst=3,1,1 --chart bench.svg        compare settings

Exit codes: 0 all succeeded, 1 some article failed (or --output failed), 2 bad usage or input, 130 interrupted (Ctrl-C),
141 stdout closed early (… | head).`;

function buildProgram(onExit: (code: number) => void): Command {
  const program = new Command('news-processor')
    .description(
      'Push a batch of articles through rate-limited LLM calls (summarise, then sentiment): a worker pool, ' +
        'a token bucket in front of every call, retries with backoff for 429s and 503s. By default the ' +
        'provider is simulated in-process, so no server or key is needed.',
    )
    .enablePositionalOptions()
    .addCommand(buildBenchCommand(onExit));
  addRunOptions(program, [
    new Option('--rate <calls/s>', "calls per second to the provider, or 'inf'").argParser(rate).default(3),
    new Option('--burst <calls>', 'calls that may go at once after a quiet spell').argParser(integer(1, 1e9)).default(3),
  ]).addOption(new Option('--output <file.jsonl>', 'write one result per line as each article ends'));
  addRedisOptions(program);
  oneLineErrors(program.addHelpText('after', EXAMPLES));
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  let exitCode = EXIT_OK;
  const program = buildProgram((code) => (exitCode = code));
  program.action(async (flags: MainFlags) => {
    for (const option of ['rate', 'burst'] as const) {
      if (flags.config !== undefined && program.getOptionValueSource(option) === 'cli') {
        throw new UsageError(`--${option} applies without --config; with --config set limits per provider in the file`);
      }
    }
    validateRedisFlags(flags, program);
    exitCode = await run(flags);
  });
  try {
    await program.parseAsync(normalizeGoFlags(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof UsageError || isInputError(error) || isConfigError(error)) {
      process.stderr.write(`error: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (isOutputError(error)) {
      process.stderr.write(`error: --output ${error.message}\n`);
      return EXIT_USAGE;
    }
    throw error;
  }
  return exitCode;
}

async function run(flags: MainFlags): Promise<number> {
  validateRunFlags(flags);
  if (flags.output !== undefined && flags.input !== undefined && (await samePath(flags.output, flags.input))) {
    throw new UsageError(`--output ${flags.output} is the --input file: it would be overwritten`);
  }
  const controller = new AbortController();
  const terminal = new Terminal(() => controller.abort(new CancelledError('stdout closed')));
  const logger = createLogger(flags);
  const input = await checkInput(flags, (text) => terminal.notice(text));
  const { count: total, skipped } = input;

  const { providers, routes } = await providerSetups(flags, flags.rate, flags.burst);
  const shared = await shareLimits(flags, providers, logger);
  let writer: JsonlWriter | undefined;
  if (flags.output !== undefined) {
    try {
      writer = await JsonlWriter.open(flags.output);
    } catch (error) {
      throw new UsageError(`--output ${(error as Error).message}`);
    }
  }

  handleInterrupts(
    terminal,
    controller,
    'interrupted: stopping intake, cancelling calls in flight',
    () => new CancelledError('interrupted (Ctrl-C)'),
  );

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
  let outputError: OutputError | undefined;
  try {
    summary = await runPipeline({
      source: input.open(),
      providers,
      routes,
      workers: flags.workers,
      timeoutMs: flags.timeout,
      retry: { maxAttempts: flags.maxAttempts },
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
        if (writer === undefined || outputError !== undefined) return;
        try {
          await writer.write(result);
        } catch (error) {
          if (!isOutputError(error)) throw error;
          // The results cannot be kept: stop as on Ctrl-C rather than spend calls on lost results.
          outputError = error;
          controller.abort(new CancelledError(`results file failed: ${error.message}`));
        }
      },
    });
  } finally {
    clearInterval(progressTimer);
    // The handler stays until the results are flushed: a slow disk or pipe is exactly when a
    // second Ctrl-C must still quit at once.
    // close() rejects only with the OutputError of a write that failed.
    await writer?.close().catch((error: OutputError) => {
      outputError ??= error;
    });
    await terminal.close();
    await shared?.close();
  }

  // The reader went away (`… | head -1`): the run was stopped like a Ctrl-C; there is no one to print for.
  if (terminal.closed) return EXIT_STDOUT_CLOSED;
  if (flags.json) {
    // maxRssBytes: the process's peak resident memory, so a script can check it stays flat.
    const { rate, burst } = summary.providers[0]!;
    const figures = { ...summary, rate, burst, skippedLines: skipped, maxRssBytes: process.resourceUsage().maxRSS * 1024 };
    const json = JSON.stringify(figures, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2);
    process.stdout.write(`${json}\n`);
  } else {
    if (printLines) process.stdout.write('\n');
    const lines = formatSummary(summary);
    if (skipped > 0) lines.push(`Skipped input lines: ${skipped}`);
    if (writer !== undefined && outputError === undefined) lines.push(`Results: ${writer.lines} lines written to ${writer.path}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  const stopLine = redisStopLine(summary);
  if (stopLine !== undefined) process.stderr.write(`${stopLine}\n`);
  if (outputError !== undefined) {
    process.stderr.write(`error: --output ${outputError.message}; the run was stopped\n`);
    return EXIT_FAILED;
  }
  if (summary.interrupted) return EXIT_INTERRUPTED;
  return summary.failed > 0 ? EXIT_FAILED : EXIT_OK;
}

/** Whether two paths name the same file (another spelling, a link), as far as the file system says. */
async function samePath(a: string, b: string): Promise<boolean> {
  const real = async (path: string) => realpath(path).catch(() => resolve(path));
  return (await real(a)) === (await real(b));
}

const code = await main(process.argv.slice(2));
// Flush stdout before leaving: process.exit would otherwise cut a piped write short.
process.stdout.write('', () => process.exit(code));
