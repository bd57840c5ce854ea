// --batch: a run through the provider's Batch API (runBatch), its saved state and its summary; its flags are in batch-options.ts.
import { existsSync } from 'node:fs';
import { appendFile, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import type { BatchApi } from '../src/batch/batch-api.ts';
import { AnthropicBatchApi } from '../src/batch/anthropic-batch-api.ts';
import { OpenAiBatchApi } from '../src/batch/openai-batch-api.ts';
import { CallGate } from '../src/gate/call-gate.ts';
import { batchFingerprints, runBatch, type BatchRunState } from '../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../src/batch/simulated-batch-api.ts';
import { formatUsd } from '../src/quota/budget.ts';
import { RunEvents } from '../src/pipeline/run-events.ts';
import { lastLines, type KeepSucceededOptions } from '../src/sinks/results-file.ts';
import type { Article } from '../src/sources/article.ts';
import { JsonlWriter } from '../src/sinks/jsonl-writer.ts';
import type { Provider } from '../src/provider/provider.ts';
import { HTTP_PROVIDER_DEFAULTS, type ProviderType } from '../src/vendors/registry.ts';
import type { BatchFlags } from './batch-options.ts';
import type { ClientFlags } from './client-options.ts';
import { formatMs, plural } from './format.ts';
import { batchProgressLine } from './progress.ts';
import { expectedFields, openInput } from './input.ts';
import { priceOf, providerSetups } from './provider-setup.ts';
import { startRunReport, type ReportFlags } from './report-options.ts';
import type { RunFlags } from './run-options.ts';
import { compactResults, countRedone, redoneLine } from './output.ts';
import { redoAgainst, runTasks } from './task-options.ts';
import { STOP_SIGNALS, type StopSignal } from './terminal.ts';
import { UsageError } from './usage-error.ts';

/** Where a batch run's state is kept: beside its results file. */
const statePath = (output: string) => `${output}.batches.json`;

/** Writes the state whole or not at all: a crash mid-write leaves the last one. */
async function saveState(path: string, state: BatchRunState): Promise<void> {
  await writeFile(`${path}.tmp`, `${JSON.stringify(state)}\n`);
  await rename(`${path}.tmp`, path);
}

/** Runs the flags' articles through the Batch API; returns the exit code. */
export async function runBatchCommand(
  flags: RunFlags & Partial<ClientFlags> & BatchFlags & ReportFlags & { readonly rate: number; readonly burst: number },
): Promise<number> {
  const output = flags.output!;
  const provider = flags.provider ?? 'simulated';
  if (provider === 'azure')
    throw new UsageError('--batch runs with --provider=openai, --provider=anthropic or the simulated provider; not azure yet');
  const live = flags.batchFallback === 'live';
  // The live path's limits only where rows may take it: a batch's own calls are the provider's to pace.
  const setups = live ? await providerSetups(flags, flags.rate, flags.burst) : await providerSetups(flags, Infinity, 1);
  const setup = setups.providers[0]!;
  const { tasks } = await runTasks(flags, setups.providers, undefined);
  const api = batchApi(flags, provider, setup.provider, setups.keyVariables);
  if (flags.batchSize !== undefined && api.maxRows !== undefined && flags.batchSize > api.maxRows) {
    throw new UsageError(
      `--batch-size ${flags.batchSize} is more than ${provider}'s Batch API takes in a batch: ${api.maxRows.toLocaleString('en-US')} at most`,
    );
  }
  // Loaded before the first token is taken, as a live run does: a call must leave when its token is granted.
  if (live) await setup.provider.ready?.();
  // The gate a live run calls, with the live run's retries and repairs.
  const fallback = live ? new CallGate({ ...setup, retry: { maxAttempts: flags.maxAttempts }, maxRepairs: flags.maxRepairs }) : undefined;
  // Before anything is read, written or submitted: a report that cannot be written stops the run here.
  const events = new RunEvents();
  const report = await startRunReport(flags, events, { providers: setups.providers }, (text) => process.stderr.write(`${text}\n`));
  const stateFile = statePath(output);
  let resume: BatchRunState | undefined;
  let redo: ReadonlyMap<string, readonly string[]> = new Map();
  let partial: ReadonlyMap<string, Readonly<Record<string, unknown>>> = new Map();
  if (flags.resume) {
    // A run that finished has left no state: its results file alone is taken up (the changed tasks run again).
    if (!existsSync(stateFile) && !existsSync(output))
      throw new UsageError(`--resume: ${stateFile} does not exist: there is no batch run to take up`);
    const taken = await takeUpResults(output, redoAgainst(tasks, batchFingerprints(tasks, api, flags.maxOutputTokens)));
    resume = existsSync(stateFile)
      ? (JSON.parse(await readFile(stateFile, 'utf8')) as BatchRunState)
      : { pending: [], outputs: {}, attempts: {}, ended: [], spentNanoUsd: taken.spentNanoUsd };
    // The simulated provider's batches lived in the process that submitted them: their rows go again.
    if (provider === 'simulated') resume = { ...resume, pending: [] };
    // A process killed after writing a line and before saving the state: the line says the article ended.
    // A success with outputs of changed tasks has not: those run again.
    const ended = new Set([...resume.ended, ...taken.ended]);
    for (const id of taken.partial.keys()) ended.delete(id);
    resume = { ...resume, ended: [...ended] };
    ({ redo, partial } = taken);
  } else if (!flags.overwrite && existsSync(output)) {
    throw new UsageError(`--output ${output} exists: --resume takes it up, --overwrite replaces it`);
  }
  const input = await openInput(flags, (text) => process.stderr.write(`${text}\n`), expectedFields(tasks));
  const writer = await JsonlWriter.open(output, { append: flags.resume });
  const price = priceOf(flags);
  if (flags.maxCost !== undefined && price === undefined) throw new UsageError('--max-cost needs --price-input and --price-output');

  const controller = new AbortController();
  let stoppedBy: StopSignal | undefined;
  const onSignal = (signal: StopSignal) => {
    stoppedBy ??= signal;
    process.stderr.write(`${signal === 'SIGINT' ? 'interrupted' : signal}: stopping the wait; the batches keep running at the provider\n`);
    controller.abort();
  };
  for (const signal of Object.keys(STOP_SIGNALS) as StopSignal[]) process.on(signal, onSignal);
  const talk = !flags.json && !flags.quiet;
  let last: BatchRunState | undefined = resume;
  // Outputs made again because their task (or one it depends on) changed since their line was written, by task.
  const redone = new Map<string, number>();
  // A line each time the counts move, not each poll: a night's run polls a thousand times.
  let said = '';
  try {
    const summary = await runBatch({
      source: withOutputs(input.open(), partial),
      api,
      tasks,
      maxOutputTokens: flags.maxOutputTokens,
      price,
      maxCostUsd: flags.maxCost,
      maxAttempts: flags.maxAttempts,
      batchSize: flags.batchSize,
      holdArticles: flags.batchArticles,
      queueTokens: flags.batchQueueTokens,
      fallback,
      fallbackConcurrency: live ? flags.workers : undefined,
      pollMs: flags.batchPoll,
      resume,
      signal: controller.signal,
      onState: async (state) => {
        last = state;
        await saveState(stateFile, state);
      },
      onResult: (result) => {
        countRedone(redo, result, redone);
        return writer.write(result);
      },
      events,
      onProgress: (progress) => {
        if (!talk || progress.length === 0) return;
        const line = batchProgressLine(progress);
        if (line !== said) process.stderr.write(`${line}\n`);
        said = line;
      },
    });
    await writer.close();
    // The articles run again have a newer line below their earlier one: each is folded into its last.
    if (redo.size > 0) await compactResults(output);
    const reportLine = await report?.finish();
    if (reportLine !== undefined) process.stderr.write(`${reportLine}\n`);
    const pending = last?.pending ?? [];
    if (!summary.interrupted && pending.length === 0 && summary.left === 0 && !summary.unread) await rm(stateFile, { force: true });
    const lines = [
      `Batch run: ${plural(summary.succeeded, 'article')} succeeded, ${summary.failed} failed${summary.left > 0 ? `, ${summary.left} left` : ''}${summary.unread ? ', the rest of the input not read' : ''}`,
      `Batches: ${summary.batches} submitted, ${plural(summary.rows, 'row')}, ${summary.rowsFailed} failed (${summary.rowsExpired} expired), ${summary.rowsRetried} sent again; ${formatMs(summary.waitingMs)} waiting at the provider`,
    ];
    if (summary.batchesRefused > 0)
      lines.push(
        `Queue: ${plural(summary.batchesRefused, 'batch', 'batches')} refused for the provider's queue limit, submitted again later`,
      );
    if (live) lines.push(`Live: ${plural(summary.rowsLive, 'row')} that failed in a batch sent through the live path`);
    if (summary.costUsd !== undefined) lines.push(`Cost: ${formatUsd(summary.costUsd)} at the batch price`);
    if (redone.size > 0) lines.push(redoneLine(redone));
    const redoneFigures = { redone: [...redone.values()].reduce((sum, count) => sum + count, 0), redoneByTask: Object.fromEntries(redone) };
    process.stdout.write(
      flags.json
        ? `${JSON.stringify({ ...summary, ...redoneFigures, output, state: stateFile, signal: stoppedBy })}\n`
        : `${lines.join('\n')}\n`,
    );
    if (summary.interrupted && stoppedBy !== undefined) {
      const ids = pending.map((batch) => batch.batchId).join(', ');
      process.stderr.write(
        provider === 'simulated'
          ? `stopped: the simulated provider's batches end with this process; ${stateFile} keeps what was answered: run again with --resume to finish\n`
          : `stopped: ${plural(pending.length, 'batch', 'batches')} still running at the provider (${ids}), recorded in ${stateFile}: ` +
              `run again with --resume to collect them, or cancel each with POST ${cancelUrl(flags, provider)}\n`,
      );
      return STOP_SIGNALS[stoppedBy];
    }
    if (summary.budgetStopped) {
      process.stderr.write(
        `error: --max-cost cannot cover the next row; ${plural(summary.left, 'article')} left${summary.unread ? ' and the rest of the input not read' : ''}: run again with --resume and a larger --max-cost\n`,
      );
      return 1;
    }
    return summary.failed > 0 ? 1 : 0;
  } finally {
    for (const signal of Object.keys(STOP_SIGNALS) as StopSignal[]) process.off(signal, onSignal);
  }
}

/** The Batch API of the flags' provider: the vendor's through its SDK, or one in this process over the simulation. */
function batchApi(
  flags: Partial<ClientFlags>,
  type: ProviderType,
  provider: Provider,
  keyVariables: ReadonlyMap<string, string>,
): BatchApi {
  if (type === 'simulated') return new SimulatedBatchApi({ provider });
  // providerSetups has read and checked the key already.
  const apiKey = process.env[keyVariables.get(provider.name)!]!.trim();
  const defaults = HTTP_PROVIDER_DEFAULTS[type as 'openai' | 'anthropic'];
  const options = { apiKey, baseUrl: flags.baseUrl ?? defaults.baseUrl!, model: flags.model ?? defaults.model!, name: provider.name };
  return type === 'anthropic' ? new AnthropicBatchApi(options) : new OpenAiBatchApi(options);
}

/** Where a batch is cancelled, `ID` standing for its id. */
function cancelUrl(flags: Partial<ClientFlags>, type: ProviderType): string {
  const base = flags.baseUrl ?? HTTP_PROVIDER_DEFAULTS[type as 'openai' | 'anthropic'].baseUrl;
  return type === 'anthropic' ? `${base}/v1/messages/batches/ID/cancel` : `${base}/batches/ID/cancel`;
}

/**
 * What the results file holds (nothing when there is no file yet): the ids of its lines (their
 * articles ended), what they say was spent, and — of each article's last line, the newest — the
 * successes with outputs to make again (`redo`: their task changed), with the outputs they keep.
 * A failed line stays ended: a dead letter is not sent again. A last line cut short by a kill is
 * cut off: its article has not ended, and the lines appended must start whole.
 */
async function takeUpResults(
  output: string,
  redo: NonNullable<KeepSucceededOptions['redo']>,
): Promise<{
  ended: string[];
  spentNanoUsd: number;
  partial: Map<string, Readonly<Record<string, unknown>>>;
  redo: Map<string, readonly string[]>;
}> {
  const taken = { ended: [] as string[], spentNanoUsd: 0, partial: new Map(), redo: new Map() };
  // Read a line at a time, as a live --resume reads it: a night's results may be millions of lines.
  const read = await lastLines(output, redo);
  if (read === undefined) return taken;
  // The lines appended must start whole: a line a kill cut short is cut off, a whole one ended.
  if (read.tornBytes > 0) await truncate(output, (await stat(output)).size - read.tornBytes);
  else if (read.unterminated) await appendFile(output, '\n');
  for (const [id, line] of read.last) {
    taken.ended.push(id);
    taken.spentNanoUsd += line.costNanoUsd;
    if (line.status !== 'succeeded' || line.kept === undefined) continue;
    taken.partial.set(id, line.kept);
    if (line.dropping.length > 0) taken.redo.set(id, line.dropping);
  }
  return taken;
}

/** The articles, those of `partial` with the outputs they keep (their other tasks run). */
async function* withOutputs(
  source: Iterable<Article> | AsyncIterable<Article>,
  partial: ReadonlyMap<string, Readonly<Record<string, unknown>>>,
): AsyncGenerator<Article> {
  for await (const article of source) {
    const outputs = partial.get(article.id);
    yield outputs === undefined ? article : { ...article, outputs };
  }
}
