#!/usr/bin/env node
// The command line: parse flags, validate, call the library, print, exit. No logic of its own.
import { addBatchOptions, validateBatchFlags, type BatchFlags } from './batch-options.ts';
import { Command, CommanderError, Option } from 'commander';
import type { Logger } from 'pino';
import {
  CancelledError,
  MissingPackageError,
  runPipeline,
  type AnswerCache,
  type Budget,
  RunEvents,
  type RunStop,
  type RunSummary,
  ConfigError,
  TasksError,
  InputError,
} from '../src/index.ts';
import type { RunPlan } from '../src/plan.ts';
import { countRedone, OutputError, ResultsFileError } from '../src/sinks/index.ts';
import { addCacheOptions, openCache, validateCacheFlags, type CacheFlags } from './cache-options.ts';
import { addClientOptions, formatStop, validateClientFlags, VENDOR_HELP_EXAMPLES, type ClientFlags } from './client-options.ts';
import { dryRun, dryRunOption, validateDryRunFlags, type DryRunFlags } from './dry-run.ts';
import { formatAttempt, formatPoolChange, formatResult, formatSummary, plural } from './format.ts';
import { expectedFields, openInput } from './input.ts';
import { checkBudget, checkedPlan, loadTasks, runBudget } from './task-options.ts';
import { mismatch, notInInput, openOutput, redoneLine, type OutputFlags } from './output.ts';
import { integer, normalizeGoFlags, rate } from './parse-values.ts';
import { addRedisOptions, redisStopLine, shareLimits, validateRedisFlags, type RedisFlags, type SharedLimits } from './redis-options.ts';
import { UsageError } from './usage-error.ts';
import { addRunOptions, type RunFlags } from './run-options.ts';
import { createLogger } from './logger.ts';
import { groupRunOptions } from './run-help.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { headerDialectNotes, loadProviderPackages, providerSetups } from './provider-setup.ts';
import { validateRunFlags } from './run-validation.ts';
import { addReportOptions, startRunReport, validateReportFlags, type ReportFlags } from './report-options.ts';
import { stdoutFailureText, stdoutState, watchStdout } from './stdout.ts';
import { Progress } from './progress.ts';
import { otelOption, startTelemetry, type OtelFlags } from './otel.ts';
import { handleSignals, STOP_SIGNALS, Terminal, type StopSignal } from './terminal.ts';
import { packageVersion } from './version.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
/** 128 + SIGPIPE, as a C tool ends when its reader closes the pipe. */
const EXIT_STDOUT_CLOSED = 141;

interface MainFlags extends RunFlags, OutputFlags, ClientFlags, RedisFlags, DryRunFlags, ReportFlags, CacheFlags, OtelFlags, BatchFlags {
  rate: number;
  burst: number;
}

const EXAMPLES = `
Examples (from a clone, put \`npm start --\` where \`news-processor\` stands, \`npm start --silent --\` when piped: npm's
banner goes to stdout; installed, \`npx news-processor\`):
  $ news-processor --articles=5 --workers=5 --rate=3           the Go original's run
  $ news-processor -articles=10 -rate=5 -burst=1               Go's single-dash spelling works too
  $ news-processor --input fixtures/articles.jsonl --output results.jsonl --overwrite
  $ news-processor --input fixtures/articles.csv --tasks fixtures/tasks.yaml    CSV articles, YAML tasks
  $ news-processor --articles=1000 --rate=50 --workers=20 --profile=production --quiet
  $ news-processor --articles=200 --rate=50 --workers=20 --profile=production --call-timeout=1s   retry hung calls
  $ news-processor --articles=4 --rate=2 --burst=1 --json      one JSON object, for scripts
  $ news-processor --input fixtures/articles.jsonl --price-input=0.4 --price-output=1.6 --dry-run   calls, tokens, cost, least time; no call
  $ news-processor --articles=50 --rate=8 --provider-rate=5 --max-attempts=5   faster than the provider allows: 429s, retried
  $ news-processor --articles=50 --rate=20 --provider-rate=10 --adaptive        find the provider's rate
  $ news-processor --articles=60 --rate=10 --outage=1s..4s --max-attempts=10 --timeout=20s   ride out an outage
  $ news-processor --config fixtures/providers/two-providers.json --articles=40 --max-attempts=6 --timeout=10s   two providers
  $ news-processor --articles=200 --rate=20 --output run.jsonl --resume     again after Ctrl-C: only what did not succeed
  $ cat fixtures/articles.jsonl | news-processor --input - --rate=10 --quiet     articles from a pipe
${VENDOR_HELP_EXAMPLES.map((line) => `  ${line}\n`).join('')}  $ news-processor bench --rate=1000,3,2 --burst=3,1,1 --chart bench.svg        compare settings

Durations are Go's: 500ms, 1.5s, 2m3.5s, 1h30m (units ns, us, ms, s, m, h).

Exit codes: 0 all succeeded, 1 some article failed (or --output or stdout failed, the shared
quota's Redis went away mid-run, a provider stayed down past --breaker-give-up, or --max-cost was
spent), 2 bad usage or input (or --redis unreachable at start, or a provider refused the key, has
no quota left, or answered its first call 404 or with a web page: the run stops), 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP), 141 stdout closed early (… | head). A
run stopped with work left and an --output file says that --resume finishes it.`;

/**
 * Whether `argv` can name a command or ask for the list of them: anything but `--name[=value]`
 * options. A run's flags alone leave the commands' modules (the server, the queue, the sweep)
 * unloaded: a third of the modules the command has.
 */
function mayNameCommand(argv: readonly string[]): boolean {
  return argv.some((arg) => !arg.startsWith('--') || arg === '--' || arg === '--help' || arg.startsWith('--help='));
}

async function buildProgram(argv: readonly string[], onExit: (code: number) => void): Promise<Command> {
  const program = new Command('news-processor')
    .description(
      'Push a batch of articles through rate-limited LLM calls (summarize, then sentiment, or the tasks of --tasks FILE): a worker pool, ' +
        'a token bucket in front of every call, retries with backoff for 429s and 5xx. By default the ' +
        'provider is simulated in-process, so no server or key is needed.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .enablePositionalOptions();
  if (mayNameCommand(argv)) {
    const [{ buildBenchCommand }, { buildServeCommand }, { buildQueueCommands }, { buildProxyCommand }] = await Promise.all([
      import('./bench.ts'),
      import('./serve.ts'),
      import('./queue.ts'),
      import('./proxy.ts'),
    ]);
    program.addCommand(buildBenchCommand(onExit)).addCommand(buildServeCommand(onExit)).addCommand(buildProxyCommand(onExit));
    for (const command of buildQueueCommands(onExit)) program.addCommand(command);
  }
  addRunOptions(program, [
    new Option('--rate <calls/s>', 'calls per second to the provider').argParser(rate).default(3),
    new Option('--burst <calls>', 'calls that may go at once after a quiet spell').argParser(integer(1, 1e9)).default(3),
  ])
    .addOption(new Option('--output <file.jsonl>', "write one result per line as each article ends; '-' for standard output"))
    .addOption(
      new Option(
        '--resume',
        'take up the --output file of an earlier run: skip what succeeded, run the rest and the tasks changed since (with those that depend on them)',
      ).default(false),
    )
    .addOption(new Option('--overwrite', 'replace an existing --output file').default(false))
    .addOption(dryRunOption())
    .addOption(otelOption());
  addBatchOptions(program);
  addReportOptions(program);
  addClientOptions(program);
  addRedisOptions(program);
  addCacheOptions(program);
  oneLineErrors(groupRunOptions(program).addHelpText('after', EXAMPLES));
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  watchStdout();
  let exitCode = EXIT_OK;
  const args = normalizeGoFlags(argv);
  const program = await buildProgram(args, (code) => (exitCode = code));
  program.action(async (flags: MainFlags) => {
    validateBatchFlags(flags, (field) => program.getOptionValueSource(field) === 'cli');
    if (flags.batch) {
      validateClientFlags(flags, (field) => program.getOptionValueSource(field) === 'cli');
      // Loaded when asked for: a live run does not load the batch run's modules.
      exitCode = await (await import('./batch.ts')).runBatchCommand(flags);
      return;
    }
    for (const option of ['rate', 'burst'] as const) {
      if (flags.config !== undefined && program.getOptionValueSource(option) === 'cli') {
        throw new UsageError(`--${option} applies without --config; with --config set limits per provider in the file`);
      }
    }
    validateRedisFlags(flags, program);
    validateCacheFlags(flags);
    validateClientFlags(flags, (field) => program.getOptionValueSource(field) === 'cli');
    validateReportFlags(flags, (field) => program.getOptionValueSource(field) === 'cli');
    exitCode = await run(flags);
  });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code !== 'commander.helpDisplayed' && error.code !== 'commander.version') return EXIT_USAGE;
      await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
      if (stdoutState() !== 'failed') return EXIT_OK;
      process.stderr.write(`error: ${stdoutFailureText()}\n`);
      return EXIT_FAILED;
    }
    if (
      error instanceof UsageError ||
      error instanceof ResultsFileError ||
      error instanceof InputError ||
      error instanceof ConfigError ||
      error instanceof TasksError ||
      error instanceof MissingPackageError
    ) {
      process.stderr.write(`error: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof OutputError) {
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
  validateDryRunFlags(flags);
  const logger = createLogger(flags);
  const setups = await providerSetups(flags, flags.rate, flags.burst, flags.dryRun);
  const plan = checkedPlan({ ...setups, tasks: await loadTasks(flags) });
  // A budget that cannot cover one call is refused before Redis is reached or any file opened.
  checkBudget(flags, plan);
  await loadProviderPackages(setups.providers);
  for (const line of headerDialectNotes(setups.providers)) process.stderr.write(`${line}\n`);
  // Before Redis is reached or any file opened: a dry run touches neither.
  if (flags.dryRun) return dryRun(flags, plan);
  // Before Redis or any file: a missing SDK package is said before anything is touched.
  const telemetry = flags.otel ? await startTelemetry(process.env) : undefined;
  const shared = await shareLimits(flags, setups.providers, setups.quotaKeys, logger);
  let cache: AnswerCache | undefined;
  try {
    cache = await openCache(flags, logger);
    // Made once the results file is read: on --resume, what it says was spent counts against --max-cost.
    const budgetFor = (earlierUsd: number, earlierUnknownUsd: number) =>
      runBudget(flags, shared === undefined ? undefined : { connection: shared.connection, logger }, earlierUsd, earlierUnknownUsd);
    // Tracing follows the run from its first event; the progress line, the report and the lines of each attempt join it in runWith.
    const events = new RunEvents();
    if (telemetry !== undefined) events.observe(telemetry.observer);
    return await runWith(flags, { ...setups, plan, budgetFor, cache, events }, logger, shared);
  } finally {
    await cache?.close();
    await shared?.close();
    // What a run stopped by Ctrl-C or SIGTERM saw is sent too: the run has ended in order by now.
    await telemetry?.shutdown();
  }
}

/** What a finished run leaves for its summary and its exit code. */
interface FinishedRun {
  readonly flags: MainFlags;
  readonly summary: RunSummary;
  /** The results file that failed mid-run, if one did. */
  readonly outputError: OutputError | undefined;
  /** Standard output's reader went away (`… | head -1`), or it could not be written (`> /dev/full`). */
  readonly stdout: 'closed' | 'failed' | undefined;
  /** The signal that stopped the run, if one did. */
  readonly signal: StopSignal | undefined;
  /** With --resume: articles of the results file the input does not hold. */
  readonly unseen: number;
  /** With --resume: what the results file said earlier runs spent, in USD (0 otherwise). */
  readonly earlierCostUsd: number;
  /** With --resume: what it said earlier runs' calls of unknown fate may have cost, in USD (0 otherwise). */
  readonly earlierUnknownUsd: number;
  readonly inputName: string;
  /** Articles that failed lacking a field a task's prompt reads, by field, with the first such task. */
  readonly lacked: ReadonlyMap<string, { readonly task: string; readonly count: number }>;
  /** With --resume: outputs made again because their task (or one it depends on) changed, by task. */
  readonly redone: ReadonlyMap<string, number>;
  /** Where each HTTP provider's key came from: for the line that says how to fix a refused one. */
  readonly keyVariables: ReadonlyMap<string, string>;
}

/** An exit code, and the one line on stderr that says why (when the summary does not say it all). */
interface Ending {
  readonly code: number;
  readonly line?: string | undefined;
}

/** What a stopped run's line ends with: how to finish it (with a results file, `--resume` does). */
function finishHint(flags: MainFlags, when = ''): string {
  return flags.output === undefined || flags.output === '-' ? `run again${when}` : `run again with --resume${when} to finish the rest`;
}

/** How a run the library stopped early ends: each `stoppedBy.by` with its exit code and its line. */
const STOP_ENDINGS: Readonly<Record<RunStop['by'], (stop: RunStop, run: FinishedRun) => Ending>> = {
  source: (stop) => ({ code: EXIT_USAGE, line: `error: ${stop.message}; the run was stopped there` }),
  limits: (stop, { flags }) => ({ code: EXIT_FAILED, line: `${redisStopLine(stop)}: ${finishHint(flags, ' once it is back')}` }),
  'provider-down': ({ provider, message }, { flags }) => ({
    code: EXIT_FAILED,
    line: `error: provider "${provider}" is ${message}; the run was stopped: ${finishHint(flags, ' once it is back')} (see --breaker-give-up)`,
  }),
  provider: (stop, { keyVariables }) => ({ code: EXIT_USAGE, line: formatStop(stop, keyVariables.get(stop.provider!)) }),
  budget: (stop, { flags, summary }) => {
    const notStarted =
      summary.notStarted === null ? 'the rest of the input was not read' : `${plural(summary.notStarted, 'article')} not started`;
    const again =
      flags.output === undefined || flags.output === '-'
        ? 'run again with a larger --max-cost (and --output, to keep what is done)'
        : 'run again with --resume and a larger --max-cost to go on (it caps the whole job: what was spent counts)';
    return { code: EXIT_FAILED, line: `error: ${stop.message}; intake stopped, ${notStarted}: ${again}` };
  },
};

/** The endings in the order they are asked: the first that applies decides the exit code. */
const ENDINGS: readonly ((run: FinishedRun) => Ending | undefined)[] = [
  // `… | head -1` is how a reader says it has seen enough: silent, as a C tool, unless a results
  // file holds a run cut short.
  (run) =>
    run.stdout !== 'closed'
      ? undefined
      : {
          code: EXIT_STDOUT_CLOSED,
          line:
            run.flags.output === undefined || run.flags.output === '-'
              ? undefined
              : `stopped: standard output was closed by its reader; the results so far are in ${run.flags.output}: ${finishHint(run.flags)}`,
        },
  (run) => {
    if (run.stdout !== 'failed') return undefined;
    // Found by the summary, after the last article: nothing was stopped, only the summary lost.
    if (!run.summary.interrupted) return { code: EXIT_FAILED, line: `error: ${stdoutFailureText()}; the summary could not be printed` };
    const file = run.flags.output === undefined || run.flags.output === '-' ? '' : `: ${finishHint(run.flags)}`;
    return { code: EXIT_FAILED, line: `error: ${stdoutFailureText()}; the run was stopped${file}` };
  },
  (run) =>
    run.outputError === undefined
      ? undefined
      : { code: EXIT_FAILED, line: `error: --output ${run.outputError.message}; the run was stopped` },
  (run) => (run.summary.stoppedBy === undefined ? undefined : STOP_ENDINGS[run.summary.stoppedBy.by](run.summary.stoppedBy, run)),
  (run) =>
    run.unseen > 0 && !run.summary.interrupted
      ? { code: EXIT_USAGE, line: `error: ${mismatch(run.flags.output!, run.inputName, notInInput(run.unseen)).message}` }
      : undefined,
  (run) => (run.summary.interrupted && run.signal !== undefined ? { code: STOP_SIGNALS[run.signal] } : undefined),
  (run) => ({ code: run.summary.failed > 0 ? EXIT_FAILED : EXIT_OK }),
];

function ending(run: FinishedRun): Ending {
  for (const ask of ENDINGS) {
    const found = ask(run);
    if (found !== undefined) return found;
  }
  return { code: EXIT_OK };
}

async function runWith(
  flags: MainFlags,
  setups: Awaited<ReturnType<typeof providerSetups>> & {
    readonly plan: RunPlan;
    readonly budgetFor: (earlierUsd: number, earlierUnknownUsd: number) => Budget | undefined;
    readonly cache: AnswerCache | undefined;
    readonly events: RunEvents;
  },
  logger: Logger,
  shared: SharedLimits | undefined,
): Promise<number> {
  const { providers, routes, keyVariables, plan } = setups;
  const { tasks } = plan;
  const printLines = !flags.json && !flags.quiet;
  const controller = new AbortController();
  const early: string[] = [];
  const input = await openInput(flags, (text) => early.push(text), expectedFields(tasks));
  const output = await openOutput(flags, input, (text) => early.push(text), plan.redo);
  const budget = setups.budgetFor(output.earlierCostUsd, output.earlierUnknownUsd);
  const terminal = new Terminal({
    out: output.human,
    printsLines: printLines,
    onClosed: () =>
      controller.abort(new CancelledError(stdoutState() === 'closed' ? 'standard output was closed by its reader' : stdoutFailureText())),
  });
  for (const text of early) terminal.notice(text);
  // Going local is said where the person running it sees it, as it happens (not only in a log line).
  if (shared !== undefined) shared.onFallback = ({ local, message }) => terminal.notice(`${local ? 'warning' : 'notice'}: ${message}`);
  const skipping = output.resumed?.(input.open());
  const total = input.count === undefined ? undefined : input.count - (output.kept?.size ?? 0);

  const stopSignal = handleSignals(
    terminal,
    controller,
    'stopping intake, cancelling calls in flight',
    (signal) => new CancelledError(`interrupted (${signal})`),
  );
  const { events } = setups;
  const progress = new Progress(terminal, total);
  events.observe(progress);
  events.on('poolChange', (change) => terminal.notice(formatPoolChange(change)));
  if (printLines) events.on('attempt', (event) => terminal.line(formatAttempt(event, flags.maxAttempts)));
  const report = await startRunReport(flags, events, { providers, pools: setups.pools }, (text) => terminal.notice(text));

  let summary: RunSummary;
  let outputError: OutputError | undefined;
  const { store } = output;
  // Articles that lacked a field a prompt reads, by field: the summary names them, --quiet too.
  const lacked = new Map<string, { readonly task: string; count: number }>();
  // With --resume: the outputs made again because their task changed, by task.
  const redone = new Map<string, number>();
  try {
    summary = await runPipeline({
      source: skipping?.source ?? input.open(),
      total,
      providers,
      routes,
      pools: setups.pools,
      tasks,
      plan,
      budget,
      cache: setups.cache,
      workers: flags.workers,
      timeoutMs: flags.timeout,
      retry: { maxAttempts: flags.maxAttempts },
      maxRepairs: flags.maxRepairs,
      logger,
      signal: controller.signal,
      events,
      onResult: async (result) => {
        countRedone(output.redo, result, redone);
        const field = result.error?.field;
        if (field !== undefined) {
          const entry = lacked.get(field) ?? { task: result.error!.task ?? '', count: 0 };
          entry.count++;
          lacked.set(field, entry);
        }
        if (printLines) terminal.line(formatResult(result));
        if (store === undefined || outputError !== undefined) return;
        try {
          await store.write(result);
        } catch (error) {
          if (!(error instanceof OutputError)) throw error;
          // The results cannot be kept: stop as on Ctrl-C rather than spend calls on lost results.
          outputError = error;
          controller.abort(new CancelledError(`results file failed: ${error.message}`));
        }
      },
    });
  } catch (error) {
    await report?.close();
    throw error;
  } finally {
    progress.stop();
    // The handlers stay until the results are flushed: a slow disk or pipe is exactly when a
    // second Ctrl-C must still quit at once. close() rejects only with the OutputError of a write that failed.
    await store?.close().catch((error: OutputError) => {
      outputError ??= error;
    });
    if (output.kept !== undefined && outputError === undefined) {
      await store!.compact().catch((error: OutputError) => {
        outputError = error;
      });
    }
    await terminal.close();
  }

  const run: FinishedRun = {
    flags,
    summary,
    outputError,
    stdout: stdoutState(),
    signal: stopSignal(),
    unseen: skipping?.unseen() ?? 0,
    earlierCostUsd: output.earlierCostUsd,
    earlierUnknownUsd: output.earlierUnknownUsd,
    inputName: input.name,
    lacked,
    redone,
    keyVariables,
  };
  // The reader went away (`… | head -1`): the run was stopped like a Ctrl-C. With the results on
  // stdout (--output -) the human output is on stderr, which still has a reader: the summary goes
  // there as after a Ctrl-C; otherwise there is no one to print for.
  if (!(run.stdout !== undefined && output.human === process.stdout)) {
    const resumed = skipping?.resumed() ?? 0;
    output.human.write(
      flags.json
        ? jsonSummary(run, resumed, input.skipped(), shared)
        : humanSummary(run, {
            printLines,
            resumed,
            skippedLines: input.skipped(),
            sharedNote: shared?.note(),
            store,
            kept: output.kept?.size ?? 0,
          }),
    );
    // The summary may be what finds standard output unwritable (`--json > /dev/full`).
    await new Promise<void>((resolve) => output.human.write('', () => resolve()));
  }
  // After the summary: the figures first, the page (a second or two to draw) after them.
  const reportLine = await report?.finish();
  if (reportLine !== undefined) process.stderr.write(`${reportLine}\n`);
  const { code, line } = ending({ ...run, stdout: stdoutState() });
  if (line !== undefined) process.stderr.write(`${line}\n`);
  return code;
}

/** The --json object: the summary, and what only the command knows. */
function jsonSummary(run: FinishedRun, resumed: number, skippedLines: number, shared: SharedLimits | undefined): string {
  const { summary } = run;
  const { rate, burst } = summary.providers[0]!;
  const figures = {
    ...summary,
    rate,
    burst,
    resumed,
    skippedLines,
    // Articles that lacked a field a prompt reads (dead letters), by field.
    missingFields: Object.fromEntries([...run.lacked].map(([field, { count }]) => [field, count])),
    // With --resume: outputs made again because their task (or one it depends on) changed since the line was written.
    redone: [...run.redone.values()].reduce((sum, count) => sum + count, 0),
    redoneByTask: Object.fromEntries(run.redone),
    // With --resume: what the results file said was spent before this run (its lines' costUsd).
    earlierCostUsd: run.earlierCostUsd,
    // With --resume: what it said earlier runs' calls of unknown fate (a timeout, a connection broken mid-request) may have cost.
    earlierUnknownCostUsd: run.earlierUnknownUsd,
    // The process's peak resident memory, so a script can check it stays flat.
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    // What interrupted the run, when a signal did: SIGINT, SIGTERM or SIGHUP.
    signal: run.signal,
    // With --redis-fallback=local: how long, in how many stretches, the run went on without Redis.
    redisFallback: run.flags.fallbackShare === undefined ? undefined : shared?.fallback(),
  };
  return `${JSON.stringify(figures, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2)}\n`;
}

/** The summary for a person: the library's figures, then what this run read, kept and shared. */
function humanSummary(
  run: FinishedRun,
  context: {
    readonly printLines: boolean;
    readonly resumed: number;
    readonly skippedLines: number;
    readonly sharedNote: string | undefined;
    readonly store: { readonly written: number; readonly name: string } | undefined;
    readonly kept: number;
  },
): string {
  const lines = formatSummary(run.summary, { earlierCostUsd: run.earlierCostUsd, earlierUnknownUsd: run.earlierUnknownUsd });
  const stopped = run.signal ?? (run.stdout === undefined ? undefined : `stdout ${run.stdout}`);
  if (stopped !== undefined) lines[lines.length - 1] = lines.at(-1)!.replace('Interrupted:', `Interrupted (${stopped}):`);
  // A signal's stop is said by the summary alone: it says how to finish.
  if (run.summary.interrupted && run.signal !== undefined && context.store !== undefined && run.flags.output !== '-') {
    lines[lines.length - 1] = `${lines.at(-1)!.replace(/\.$/, '')}: ${finishHint(run.flags)}.`;
  }
  if (context.resumed > 0) lines.push(`Resumed: ${plural(context.resumed, 'article')} had succeeded before and were skipped`);
  if (run.redone.size > 0) lines.push(redoneLine(run.redone));
  if (context.sharedNote !== undefined) lines.push(context.sharedNote);
  if (context.skippedLines > 0) lines.push(`Skipped input lines: ${context.skippedLines}`);
  for (const [field, { task, count }] of run.lacked) {
    lines.push(`Missing field "${field}": ${plural(count, 'article')} lacked it (task ${task} reads {{${field}}}), a dead letter each`);
  }
  const { store, kept } = context;
  if (store !== undefined && run.outputError === undefined && run.stdout === undefined) {
    lines.push(
      `Results: ${plural(store.written, 'line')} written to ${store.name}${kept > 0 ? `, after the ${kept} kept from before` : ''}`,
    );
  }
  return `${context.printLines ? '\n' : ''}${lines.join('\n')}\n`;
}

const code = await main(process.argv.slice(2));
// Flush stdout before leaving: process.exit would otherwise cut a piped write short.
process.stdout.write('', () => process.exit(code));
