#!/usr/bin/env node
// The command line: parse flags, validate, call the library, print, exit. No logic of its own.
import { Command, CommanderError, Option } from 'commander';
import type { Logger } from 'pino';
import {
  CancelledError,
  formatDuration,
  isConfigError,
  isInputError,
  isOutputError,
  ResultsFileError,
  runPipeline,
  type OutputError,
  type RunSummary,
} from '../src/index.ts';
import { buildBenchCommand } from './bench.ts';
import { addClientOptions, formatStop, validateClientFlags, type ClientFlags } from './client-options.ts';
import { formatAttempt, formatResult, formatSummary, plural } from './format.ts';
import { openInput } from './input.ts';
import { mismatch, notInInput, openOutput, skipSucceeded, type OutputFlags } from './output.ts';
import { buildServeCommand } from './serve.ts';
import { integer, normalizeGoFlags, rate } from './parse-values.ts';
import { addRedisOptions, redisStopLine, shareLimits, validateRedisFlags, type RedisFlags } from './redis-options.ts';
import {
  UsageError,
  addRunOptions,
  createLogger,
  groupRunOptions,
  oneLineErrors,
  providerSetups,
  validateRunFlags,
  type RunFlags,
} from './run-options.ts';
import { handleSignals, STOP_SIGNALS, Terminal } from './terminal.ts';
import { packageVersion } from './version.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
/** 128 + SIGPIPE, as a C tool ends when its reader closes the pipe. */
const EXIT_STDOUT_CLOSED = 141;

interface MainFlags extends RunFlags, OutputFlags, ClientFlags, RedisFlags {
  rate: number;
  burst: number;
}

const EXAMPLES = `
Examples (from a clone, put \`npm start --\` where \`news-processor\` stands; installed, \`npx news-processor\`):
  $ news-processor --articles=5 --workers=5 --rate=3           the Go original's run
  $ news-processor -articles=10 -rate=5 -burst=1               Go's single-dash spelling works too
  $ news-processor --input fixtures/articles.jsonl --output results.jsonl --overwrite
  $ news-processor --articles=1000 --rate=50 --workers=20 --profile=production --quiet
  $ news-processor --articles=200 --rate=50 --workers=20 --profile=production --call-timeout=1s   retry hung calls
  $ news-processor --articles=4 --rate=2 --burst=1 --json      one JSON object, for scripts
  $ news-processor --articles=50 --rate=8 --provider-rate=5 --max-attempts=5   faster than the provider allows: 429s, retried
  $ news-processor --articles=50 --rate=20 --provider-rate=10 --adaptive        find the provider's rate
  $ news-processor --articles=60 --rate=10 --outage=1s..4s --max-attempts=10 --timeout=20s   ride out an outage
  $ news-processor --config fixtures/providers/two-providers.json --articles=40 --max-attempts=6 --timeout=10s   two providers
  $ news-processor --articles=200 --rate=20 --output run.jsonl --resume     again after Ctrl-C: only what did not succeed
  $ cat fixtures/articles.jsonl | news-processor --input - --rate=10 --quiet     articles from a pipe
  $ news-processor --provider=openai --input articles.jsonl --rate=5 --tpm=200000   OpenAI (key in OPENAI_API_KEY)
  $ news-processor --provider=openai --base-url http://localhost:11434/v1 --model llama3.2 --api-key-env OLLAMA_KEY
  $ news-processor bench --rate=1000,3,2 --burst=3,1,1 --chart bench.svg        compare settings

Durations are Go's: 500ms, 1.5s, 2m3.5s, 1h30m (units ns, us, ms, s, m, h).

Exit codes: 0 all succeeded, 1 some article failed (or --output failed, the shared quota's Redis went
away mid-run, or a provider stayed down past --breaker-give-up), 2 bad usage or input (or --redis
unreachable at start, or a provider refused the key, has no quota left, or answered its first call
404: the run stops), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up
(SIGHUP), 141 stdout closed early (… | head).`;

function buildProgram(onExit: (code: number) => void): Command {
  const program = new Command('news-processor')
    .description(
      'Push a batch of articles through rate-limited LLM calls (summarise, then sentiment): a worker pool, ' +
        'a token bucket in front of every call, retries with backoff for 429s and 5xx. By default the ' +
        'provider is simulated in-process, so no server or key is needed.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .enablePositionalOptions()
    .addCommand(buildBenchCommand(onExit))
    .addCommand(buildServeCommand(onExit));
  addRunOptions(program, [
    new Option('--rate <calls/s>', 'calls per second to the provider').argParser(rate).default(3),
    new Option('--burst <calls>', 'calls that may go at once after a quiet spell').argParser(integer(1, 1e9)).default(3),
  ])
    .addOption(new Option('--output <file.jsonl>', "write one result per line as each article ends; '-' for standard output"))
    .addOption(new Option('--resume', 'take up the --output file of an earlier run: skip what succeeded, run the rest').default(false))
    .addOption(new Option('--overwrite', 'replace an existing --output file').default(false));
  addClientOptions(program);
  addRedisOptions(program);
  oneLineErrors(groupRunOptions(program).addHelpText('after', EXAMPLES));
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
    validateClientFlags(flags, (field) => program.getOptionValueSource(field) === 'cli');
    exitCode = await run(flags);
  });
  try {
    await program.parseAsync(normalizeGoFlags(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof UsageError || error instanceof ResultsFileError || isInputError(error) || isConfigError(error)) {
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
  // The providers and their limits first: a missing key or an unreachable Redis must stop the run
  // before any file is read or written.
  const logger = createLogger(flags);
  const setups = await providerSetups(flags, flags.rate, flags.burst);
  const shared = await shareLimits(flags, setups.providers, setups.quotaKeys, logger);
  try {
    return await runWith(flags, setups, logger, shared?.note);
  } finally {
    await shared?.close();
  }
}

async function runWith(
  flags: MainFlags,
  setups: Awaited<ReturnType<typeof providerSetups>>,
  logger: Logger,
  sharedNote: string | undefined,
): Promise<number> {
  const { providers, routes, keyVariables } = setups;
  const printLines = !flags.json && !flags.quiet;
  const controller = new AbortController();
  const early: string[] = [];
  const input = await openInput(flags, (text) => early.push(text));
  const output = await openOutput(flags, input, (text) => early.push(text));
  const terminal = new Terminal({
    out: output.human,
    printsLines: printLines,
    onClosed: () => controller.abort(new CancelledError('stdout closed')),
  });
  for (const text of early) terminal.notice(text);
  const skipping = output.kept === undefined ? undefined : skipSucceeded(input.open(), output.kept, input.name, flags.output!);
  const total = input.count === undefined ? undefined : input.count - (output.kept?.size ?? 0);

  const stopSignal = handleSignals(
    terminal,
    controller,
    'stopping intake, cancelling calls in flight',
    (signal) => new CancelledError(`interrupted (${signal})`),
  );

  let finished = 0;
  let failed = 0;
  let calls = 0;
  const startedMs = performance.now();
  const progressTimer = setInterval(() => {
    const elapsedMs = performance.now() - startedMs;
    if (elapsedMs < 1000) return;
    terminal.status(progressLine(elapsedMs, finished, total, calls, failed));
  }, 250);

  let summary: RunSummary;
  let outputError: OutputError | undefined;
  const { writer } = output;
  try {
    summary = await runPipeline({
      source: skipping?.source ?? input.open(),
      total,
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
    // The handlers stay until the results are flushed: a slow disk or pipe is exactly when a
    // second Ctrl-C must still quit at once. close() rejects only with the OutputError of a write that failed.
    await writer?.close().catch((error: OutputError) => {
      outputError ??= error;
    });
    await terminal.close();
  }

  // The reader went away (`… | head -1`): the run was stopped like a Ctrl-C. With the results on
  // stdout (--output -) the human output is on stderr, which still has a reader: the summary goes
  // there as after a Ctrl-C; otherwise there is no one to print for.
  const human = output.human;
  const stdoutClosed = terminal.closed;
  if (stdoutClosed && human === process.stdout) return EXIT_STDOUT_CLOSED;
  const resumed = skipping?.resumed() ?? 0;
  if (flags.json) {
    // maxRssBytes: the process's peak resident memory, so a script can check it stays flat.
    const { rate, burst } = summary.providers[0]!;
    const figures = {
      ...summary,
      rate,
      burst,
      resumed,
      skippedLines: input.skipped(),
      maxRssBytes: process.resourceUsage().maxRSS * 1024,
      // What interrupted the run, when a signal did: SIGINT, SIGTERM or SIGHUP.
      signal: stopSignal(),
    };
    human.write(`${JSON.stringify(figures, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2)}\n`);
  } else {
    if (printLines) human.write('\n');
    const lines = formatSummary(summary);
    const signal = stopSignal();
    const stopped = signal ?? (stdoutClosed ? 'stdout closed' : undefined);
    if (stopped !== undefined) lines[lines.length - 1] = lines.at(-1)!.replace('Interrupted:', `Interrupted (${stopped}):`);
    if (resumed > 0) lines.push(`Resumed: ${plural(resumed, 'article')} had succeeded before and were skipped`);
    if (sharedNote !== undefined) lines.push(sharedNote);
    if (input.skipped() > 0) lines.push(`Skipped input lines: ${input.skipped()}`);
    if (writer !== undefined && outputError === undefined && !stdoutClosed) {
      const kept = output.kept?.size ?? 0;
      lines.push(
        `Results: ${plural(writer.lines, 'line')} written to ${writer.path}${kept > 0 ? `, after the ${kept} kept from before` : ''}`,
      );
    }
    human.write(`${lines.join('\n')}\n`);
  }
  if (stdoutClosed) return EXIT_STDOUT_CLOSED;
  if (outputError !== undefined) {
    process.stderr.write(`error: --output ${outputError.message}; the run was stopped\n`);
    return EXIT_FAILED;
  }
  if (summary.stoppedBy?.by === 'source') {
    process.stderr.write(`error: ${summary.stoppedBy.message}; the run was stopped there\n`);
    return EXIT_USAGE;
  }
  if (summary.stoppedBy?.by === 'limits') {
    process.stderr.write(`${redisStopLine(summary.stoppedBy)}\n`);
    return EXIT_FAILED;
  }
  if (summary.stoppedBy?.by === 'provider-down') {
    const { provider, message } = summary.stoppedBy;
    const again = flags.output === undefined || flags.output === '-' ? 'run again' : `run again with --resume to finish the rest`;
    process.stderr.write(
      `error: provider "${provider}" is ${message}; the run was stopped: ${again} once it is back (see --breaker-give-up)\n`,
    );
    return EXIT_FAILED;
  }
  if (summary.stoppedBy?.by === 'provider') {
    process.stderr.write(`${formatStop(summary.stoppedBy, keyVariables.get(summary.stoppedBy.provider!))}\n`);
    return EXIT_USAGE;
  }
  if (skipping !== undefined && !summary.interrupted && skipping.unseen() > 0) {
    process.stderr.write(`error: ${mismatch(flags.output!, input.name, notInInput(skipping.unseen())).message}\n`);
    return EXIT_USAGE;
  }
  const signal = stopSignal();
  if (summary.interrupted && signal !== undefined) return STOP_SIGNALS[signal];
  return summary.failed > 0 ? EXIT_FAILED : EXIT_OK;
}

/** `elapsed 1m02s · 120/400 articles 30% · 240 calls · 19.8 calls/s · 0 failed · eta 15m12s` */
function progressLine(elapsedMs: number, finished: number, total: number | undefined, calls: number, failed: number): string {
  const seconds = (ms: number) => formatDuration(Math.round(ms / 1000) * 1000);
  const fields = [`elapsed ${seconds(elapsedMs)}`];
  if (total === undefined || total === 0) fields.push(plural(finished, 'article'));
  else fields.push(`${finished}/${plural(total, 'article')} ${Math.floor((finished * 100) / total)}%`);
  fields.push(plural(calls, 'call'), `${((calls * 1000) / elapsedMs).toFixed(1)} calls/s`, `${failed} failed`);
  if (total !== undefined && finished > 0 && finished < total) fields.push(`eta ${seconds(((total - finished) * elapsedMs) / finished)}`);
  return fields.join(' · ');
}

const code = await main(process.argv.slice(2));
// Flush stdout before leaving: process.exit would otherwise cut a piped write short.
process.stdout.write('', () => process.exit(code));
