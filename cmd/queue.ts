// The queue commands: a batch spread over any number of worker processes on BullMQ, one shared quota.
//   enqueue · worker · status · collect · retry-failed · drain · obliterate
import { Command, Option } from 'commander';
import type { Logger } from 'pino';
import { CancelledError, RunEvents, SIMULATED_DEFAULTS, type AnswerCache, type ArticleResult, type TaskSet } from '../src/index.ts';
import type { RunPlan } from '../src/plan.ts';
import { formatDuration } from '../src/mechanisms.ts';
import { type ArticleQueue, isQueueNotFoundError, QUEUE_WORKER_DEFAULTS, runQueueWorker, type QueueStatus } from '../src/queue/index.ts';
import { addCacheOptions, openCache, validateCacheFlags, type CacheFlags } from './cache-options.ts';
import { addClientOptions, validateClientFlags, type ClientFlags } from './client-options.ts';
import { formatAttempt, formatMs, formatPoolChange, formatResult, formatSummary, plural } from './format.ts';
import { openInput } from './input.ts';
import { duration, integer, rate } from './parse-values.ts';
import { Progress } from './progress.ts';
import { otelOption, startTelemetry, type OtelFlags } from './otel.ts';
import { addRedisOptions, shareLimits, validateRedisFlags, type RedisFlags } from './redis-options.ts';
import { collectCommand } from './queue-collect.ts';
import {
  addQueueOptions,
  checkQueueFlags,
  EXAMPLES,
  notFoundUsage,
  openQueue,
  openQueueOn,
  pause,
  stillThere,
  type QueueFlags,
} from './queue-options.ts';
import { UsageError } from './usage-error.ts';
import { addRunOptions, inputFormatOption, inputOption, skipInvalidOption, type RunFlags } from './run-options.ts';
import { createLogger } from './logger.ts';
import { groupRunOptions } from './run-help.ts';
import { loadProviderPackages, providerSetups } from './provider-setup.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { validateRunFlags } from './run-validation.ts';
import { checkBudget, checkedPlan, loadTasks, runBudget } from './task-options.ts';
import { addReportOptions, startRunReport, validateReportFlags, type ReportFlags } from './report-options.ts';
import { handleSignals, STOP_SIGNALS, Terminal } from './terminal.ts';

/** The queue subcommands; `onExit` receives each one's exit code. */
export function buildQueueCommands(onExit: (code: number) => void): Command[] {
  return [enqueueCommand(onExit), workerCommand(onExit), statusCommand(onExit), collectCommand(onExit), ...cleanUpCommands(onExit)];
}

interface EnqueueFlags extends QueueFlags, RunFlags {}

function enqueueCommand(onExit: (code: number) => void): Command {
  const command = addQueueOptions(new Command('enqueue'))
    .description('Add one job per article to the queue (the job id is the article id: enqueueing an input twice adds nothing)')
    .addOption(inputOption())
    .addOption(inputFormatOption())
    .addOption(new Option('--articles <n>', 'generate this many articles (as a run does)').argParser(integer(1, 1e9)).default(5))
    .addOption(new Option('--seed <n>', 'seed of the generated articles').argParser(integer(0)).default(SIMULATED_DEFAULTS.seed))
    .addOption(skipInvalidOption())
    .addOption(new Option('--quiet', 'print nothing but errors').default(false))
    .addOption(new Option('--json', 'print the counts as JSON').default(false))
    .addHelpText('after', EXAMPLES);
  oneLineErrors(command);
  command.action(async (flags: EnqueueFlags) => {
    if (flags.skipInvalid && flags.input === undefined) throw new UsageError('--skip-invalid applies to --input files only');
    if (flags.inputFormat !== undefined && flags.input === undefined) throw new UsageError('--input-format applies to --input only');
    // Enqueueing makes the queue, or makes a lost one again.
    const opened = await openQueue(flags, ['made', 'lost', 'unknown']);
    const { queue } = opened;
    try {
      const input = await openInput(flags, (text) => process.stderr.write(`${text}\n`));
      const startedMs = performance.now();
      const interactive = process.stderr.isTTY === true && !flags.quiet;
      const counts = await queue.enqueue(input.open(), {
        onBatch: (added, existing) => {
          if (interactive) process.stderr.write(`\r\x1b[2K${added + existing} articles read · ${added} added`);
        },
      });
      if (interactive) process.stderr.write('\r\x1b[2K');
      if (flags.json) process.stdout.write(`${JSON.stringify({ queue: queue.name, ...counts, skippedLines: input.skipped() })}\n`);
      else if (!flags.quiet) {
        process.stdout.write(
          `Queue ${queue.name}: ${plural(counts.added, 'article')} added, ${counts.existing} already there ` +
            `(${formatMs(performance.now() - startedMs)})${input.skipped() > 0 ? `; ${plural(input.skipped(), 'input line')} skipped` : ''}\n`,
        );
      }
      onExit(0);
    } finally {
      await opened.close();
    }
  });
  return command;
}

interface WorkerFlags extends RunFlags, ClientFlags, RedisFlags, ReportFlags, CacheFlags, OtelFlags {
  queue: string;
  rate: number;
  burst: number;
  exitWhenDrained: boolean;
  grace: number;
  lockDuration: number;
  stalledInterval: number;
  redisGiveUp: number;
}

function workerCommand(onExit: (code: number) => void): Command {
  const command = new Command('worker').description(
    'Take jobs from the queue and run their articles as a run does — the same limits, retries, breaker and budget — ' +
      "with each provider's quota shared through the queue's Redis; as many workers as you like, on any machines",
  );
  addRunOptions(command, [
    new Option('--rate <calls/s>', 'calls per second to the provider, shared by every worker').argParser(rate).default(3),
    new Option('--burst <calls>', 'calls that may go at once after a quiet spell').argParser(integer(1, 1e9)).default(3),
  ]);
  addReportOptions(command);
  addClientOptions(command);
  addRedisOptions(command, { readsEnv: true });
  addCacheOptions(command);
  command
    .addOption(new Option('--queue <name>', 'the queue to take jobs from').makeOptionMandatory())
    .addOption(
      new Option('--exit-when-drained', 'exit once nothing is left on the queue (waiting, delayed or running anywhere)').default(false),
    )
    .addOption(
      new Option('--grace <duration>', 'after SIGINT or SIGTERM: how long the calls under way may finish before their jobs are put back')
        .argParser(duration({ allowZero: true }))
        .default(QUEUE_WORKER_DEFAULTS.graceMs, formatDuration(QUEUE_WORKER_DEFAULTS.graceMs)),
    )
    .addOption(
      new Option('--lock-duration <duration>', "a job's lock, renewed while the worker lives: a killed worker's jobs wait this long")
        .argParser(duration({ allowZero: false }))
        .default(QUEUE_WORKER_DEFAULTS.lockDurationMs, formatDuration(QUEUE_WORKER_DEFAULTS.lockDurationMs)),
    )
    .addOption(
      new Option('--stalled-interval <duration>', 'how often to put back the jobs of workers that died (one script each time)')
        .argParser(duration({ allowZero: false }))
        .default(QUEUE_WORKER_DEFAULTS.stalledIntervalMs, formatDuration(QUEUE_WORKER_DEFAULTS.stalledIntervalMs)),
    )
    .addOption(
      new Option(
        '--redis-give-up <duration>',
        'when Redis stops answering: how long to wait for it, holding the jobs taken, before stopping (exit 1)',
      )
        .argParser(duration({ allowZero: true }))
        .default(QUEUE_WORKER_DEFAULTS.redisGiveUpMs, formatDuration(QUEUE_WORKER_DEFAULTS.redisGiveUpMs)),
    )
    .addOption(otelOption());
  oneLineErrors(groupRunOptions(command)).addHelpText('after', EXAMPLES);
  command.action(async (flags: WorkerFlags) => {
    for (const option of ['articles', 'input', 'skipInvalid']) {
      if (command.getOptionValueSource(option) === 'cli') {
        throw new UsageError(
          `--${option === 'skipInvalid' ? 'skip-invalid' : option} belongs to enqueue: a worker takes its articles from the queue`,
        );
      }
    }
    if (flags.redis === undefined) throw new UsageError('--redis (or REDIS_URL) is needed: the Redis that holds the queue and the quota');
    validateRedisFlags(flags, command);
    validateCacheFlags(flags);
    validateClientFlags(flags, (field) => command.getOptionValueSource(field) === 'cli');
    validateReportFlags(flags, (field) => command.getOptionValueSource(field) === 'cli');
    validateRunFlags(flags);
    onExit(await work(flags));
  });
  return command;
}

async function work(flags: WorkerFlags): Promise<number> {
  const logger = createLogger(flags);
  const setups = await providerSetups(flags, flags.rate, flags.burst);
  const plan = checkedPlan({ ...setups, tasks: await loadTasks(flags) });
  checkBudget(flags, plan);
  await loadProviderPackages(setups.providers);
  checkQueueFlags(flags);
  const telemetry = flags.otel ? await startTelemetry(process.env) : undefined;
  // One connection for the quotas, its settings (cluster, TLS files) for the queue's clients too.
  const shared = (await shareLimits(flags, setups.providers, setups.quotaKeys, logger))!;
  let queue: ArticleQueue | undefined;
  let cache: AnswerCache | undefined;
  try {
    cache = await openCache(flags, logger);
    queue = await openQueueOn(shared.connection, flags);
    const budget = runBudget(flags, { connection: shared.connection, logger });
    const events = new RunEvents();
    if (telemetry !== undefined) events.observe(telemetry.observer);
    return await workOn(queue, flags, { ...setups, plan, tasks: plan.tasks, budget, cache, events }, logger);
  } catch (error) {
    // Gone between the look at start and the worker's own.
    throw isQueueNotFoundError(error) ? notFoundUsage(error) : error;
  } finally {
    await queue?.close();
    await cache?.close();
    await shared.close();
    await telemetry?.shutdown();
  }
}

async function workOn(
  queue: ArticleQueue,
  flags: WorkerFlags,
  setups: Awaited<ReturnType<typeof providerSetups>> & {
    readonly plan: RunPlan;
    readonly tasks: TaskSet;
    readonly budget: ReturnType<typeof runBudget>;
    readonly cache: AnswerCache | undefined;
    readonly events: RunEvents;
  },
  logger: Logger,
): Promise<number> {
  const printLines = !flags.json && !flags.quiet;
  const terminal = new Terminal({ printsLines: printLines });
  const stop = new AbortController();
  const stopSignal = handleSignals(
    terminal,
    stop,
    `taking no more jobs; the calls under way have ${formatDuration(flags.grace)}, then their jobs go back to the queue`,
    (signal) => new CancelledError(`interrupted (${signal})`),
  );
  const { events } = setups;
  const progress = new Progress(terminal, undefined);
  events.observe(progress);
  events.on('poolChange', (change) => terminal.notice(formatPoolChange(change)));
  if (printLines) events.on('attempt', (event) => terminal.line(formatAttempt(event, flags.maxAttempts)));
  const report = await startRunReport(flags, events, setups, (text) => terminal.notice(text));
  if (printLines) terminal.notice(`worker on queue ${queue.name} at ${queue.redis.url}: ${plural(flags.workers, 'article')} at a time`);
  let summary: Awaited<ReturnType<typeof runQueueWorker>>;
  try {
    summary = await runQueueWorker({
      queue,
      providers: setups.providers,
      routes: setups.routes,
      pools: setups.pools,
      tasks: setups.tasks,
      plan: setups.plan,
      budget: setups.budget,
      cache: setups.cache,
      events,
      workers: flags.workers,
      timeoutMs: flags.timeout,
      retry: { maxAttempts: flags.maxAttempts },
      maxRepairs: flags.maxRepairs,
      logger,
      stopSignal: stop.signal,
      exitWhenDrained: flags.exitWhenDrained,
      graceMs: flags.grace,
      lockDurationMs: flags.lockDuration,
      stalledIntervalMs: flags.stalledInterval,
      redisGiveUpMs: flags.redisGiveUp,
      // Said as it happens, whatever --quiet says: the worker is not stuck, it is waiting.
      onRedisChange: ({ available, message }) => terminal.notice(`${available ? 'notice' : 'warning'}: ${message}`),
      onResult: (result: ArticleResult) => {
        if (printLines) terminal.line(formatResult(result));
      },
    });
  } catch (error) {
    await report?.close();
    throw error;
  } finally {
    progress.stop();
    await terminal.close();
  }
  const signal = stopSignal();
  const lost = summary.queueLost !== undefined;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ queue: queue.name, ...summary, signal }, (_, v: unknown) => (v === Infinity ? 'inf' : v), 2)}\n`,
    );
  } else {
    const lines = formatSummary(summary);
    lines.push(
      `Worker: ${plural(summary.articles, 'job')} taken from queue ${queue.name}` +
        (lost
          ? `, the queue lost under it: ${summary.succeeded + summary.failed} finished, ${summary.cancelled} cut short, their results gone with it`
          : (summary.returned > 0 ? `, ${summary.returned} put back unfinished for another worker` : '') +
            (summary.leftLocked > 0 ? `, ${summary.leftLocked} left locked (back to waiting once the lock runs out)` : '')) +
        (signal === undefined ? '' : ` (stopped by ${signal})`),
    );
    const { count, totalMs } = summary.redisOutages;
    if (count > 0) {
      lines.push(
        `Redis: stopped answering ${count === 1 ? 'once' : `${count} times`}, ${formatDuration(Math.max(1, Math.round(totalMs)))} in all; ` +
          'the worker held its jobs meanwhile',
      );
    }
    process.stdout.write(`${printLines ? '\n' : ''}${lines.join('\n')}\n`);
  }
  const reportLine = await report?.finish();
  if (reportLine !== undefined) process.stderr.write(`${reportLine}\n`);
  if (summary.queueLost !== undefined) {
    process.stderr.write(`error: ${queue.notFound(summary.queueLost).message}; the worker stopped: enqueue the input again to run it\n`);
    return 1;
  }
  if (summary.stoppedBy?.by === 'limits') {
    process.stderr.write(
      `error: ${summary.stoppedBy.message}; the worker stopped (see --redis-give-up), ` +
        `its unfinished jobs go back to the queue once their lock runs out: start a worker again once Redis is back ` +
        `(news-processor status --queue ${queue.name} shows what is left)\n`,
    );
    return 1;
  }
  if (summary.stoppedBy !== undefined) {
    process.stderr.write(`error: ${summary.stoppedBy.message}; the worker stopped, its unfinished jobs went back to the queue\n`);
    return summary.stoppedBy.by === 'provider' ? 2 : 1;
  }
  if (signal !== undefined) return STOP_SIGNALS[signal];
  return summary.failed > 0 ? 1 : 0;
}

interface StatusFlags extends QueueFlags {
  json: boolean;
  watch: boolean;
  interval: number;
}

function statusCommand(onExit: (code: number) => void): Command {
  const command = addQueueOptions(new Command('status'))
    .description('How the queue stands: waiting, active, completed, failed, delayed; the rate of the last minute, an ETA, the workers')
    .addOption(new Option('--json', 'print the status as JSON').default(false))
    .addOption(new Option('--watch', 'print it again every --interval until Ctrl-C').default(false))
    .addOption(new Option('--interval <duration>', 'with --watch: how often').argParser(duration({ allowZero: false })).default(1000, '1s'))
    .addHelpText('after', EXAMPLES);
  oneLineErrors(command);
  command.action(async (flags: StatusFlags) => {
    const opened = await openQueue(flags);
    const { queue } = opened;
    try {
      const controller = new AbortController();
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
      do {
        // Watched, it may go: a queue Redis lost would read as all done.
        await stillThere(queue);
        const status = await queue.status();
        process.stdout.write(flags.json ? `${JSON.stringify(status)}\n` : `${formatStatus(status)}\n`);
        if (!flags.watch) break;
        await pause(flags.interval, controller.signal);
      } while (!controller.signal.aborted);
      onExit(0);
    } finally {
      await opened.close();
    }
  });
  return command;
}

/**
 * `Queue batch1: 120 waiting · 10 active · 370 completed · 2 failed · 0 delayed | 9.8/s · eta 13s |
 * 2 workers (a:41 seen 1s ago, b:77 seen 0s ago) | 760 calls, 3 repeated`; jobs stalled, when there
 * are any, after the active ones.
 */
export function formatStatus(status: QueueStatus): string {
  const eta =
    status.etaMs === 0
      ? 'done'
      : status.etaMs === null
        ? `no ETA (${status.workers.length === 0 ? 'no worker connected' : 'nothing finished in the last minute'})`
        : // Whole seconds, never "0s" while anything is left.
          `eta ${formatDuration(Math.max(1, Math.ceil(status.etaMs / 1000)) * 1000)}`;
  const stalled =
    status.stalled > 0 ? ` · ${status.stalled} stalled (their worker is gone: back to waiting at a worker's next stalled check)` : '';
  const workers = status.workers.map(
    ({ name, silentMs }) => `${name} seen ${formatDuration(Math.max(0, Math.round(silentMs / 1000)) * 1000)} ago`,
  );
  return (
    `Queue ${status.name}: ${status.waiting} waiting · ${status.active} active${stalled} · ${status.completed} completed · ` +
    `${status.failed} failed · ${status.delayed} delayed | ${status.finishedPerSecond.toFixed(1)}/s · ${eta} | ` +
    `${plural(status.workers.length, 'worker')}${workers.length > 0 ? ` (${workers.join(', ')})` : ''} | ` +
    `${plural(status.calls, 'call')}, ${status.repeatedCalls} repeated`
  );
}

interface CleanUpFlags extends QueueFlags {
  yes: boolean;
  force: boolean;
}

function cleanUpCommands(onExit: (code: number) => void): Command[] {
  const retry = addQueueOptions(new Command('retry-failed'))
    .description('Put every failed job (dead letter) back on the queue for the workers')
    .addHelpText('after', EXAMPLES);
  retry.action(async (flags: QueueFlags) => {
    const opened = await openQueue(flags);
    const { queue } = opened;
    try {
      const count = await queue.retryFailed();
      process.stdout.write(`Queue ${queue.name}: ${plural(count, 'failed job')} put back\n`);
      onExit(0);
    } finally {
      await opened.close();
    }
  });
  const drain = addQueueOptions(new Command('drain'))
    .description('Remove the jobs not yet started (waiting and delayed); running and finished ones stay')
    .addOption(new Option('--yes', 'confirm: the removed jobs are gone').default(false))
    .addHelpText('after', EXAMPLES);
  drain.action(async (flags: CleanUpFlags) => {
    if (!flags.yes) throw new UsageError('drain removes every waiting job: give --yes to confirm');
    const opened = await openQueue(flags);
    const { queue } = opened;
    try {
      const count = await queue.drain();
      process.stdout.write(`Queue ${queue.name}: ${plural(count, 'job')} removed\n`);
      onExit(0);
    } finally {
      await opened.close();
    }
  });
  const obliterate = addQueueOptions(new Command('obliterate'))
    .description('Remove the queue and everything in it, results included')
    .addOption(new Option('--yes', 'confirm: the queue and its results are gone').default(false))
    .addOption(new Option('--force', 'even while jobs are running').default(false))
    .addHelpText('after', EXAMPLES);
  obliterate.action(async (flags: CleanUpFlags) => {
    if (!flags.yes) throw new UsageError('obliterate removes the queue and its results: give --yes to confirm');
    // A lost queue too: what is left of it is a worker's word that it was lost.
    const opened = await openQueue(flags, ['made', 'lost']);
    const { queue } = opened;
    try {
      await queue.obliterate(flags.force).catch((error: Error) => {
        throw new UsageError(
          `cannot obliterate queue ${queue.name}: ${error.message}${flags.force ? '' : ' (--force to do it while jobs run)'}`,
        );
      });
      process.stdout.write(`Queue ${queue.name}: removed\n`);
      onExit(0);
    } finally {
      await opened.close();
    }
  });
  for (const command of [retry, drain, obliterate]) oneLineErrors(command);
  return [retry, drain, obliterate];
}
