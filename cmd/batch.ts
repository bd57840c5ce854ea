// --batch: a run through the provider's Batch API (runBatch), its flags, its saved state and its summary.
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import type { BatchApi } from '../src/batch/batch-api.ts';
import { AnthropicBatchApi } from '../src/batch/anthropic-batch-api.ts';
import { OpenAiBatchApi } from '../src/batch/openai-batch-api.ts';
import { BATCH_DEFAULTS, runBatch, type BatchRunState } from '../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../src/batch/simulated-batch-api.ts';
import { formatUsd } from '../src/quota/budget.ts';
import { formatDuration } from '../src/validation/duration.ts';
import { JsonlWriter } from '../src/sinks/jsonl-writer.ts';
import type { Provider } from '../src/provider/provider.ts';
import { HTTP_PROVIDER_DEFAULTS, type ProviderType } from '../src/vendors/registry.ts';
import type { ClientFlags } from './client-options.ts';
import { formatMs, plural } from './format.ts';
import { expectedFields, openInput } from './input.ts';
import { duration, integer } from './parse-values.ts';
import { providerSetups } from './provider-setup.ts';
import { startRunReport, type ReportFlags } from './report-options.ts';
import type { RunFlags } from './run-options.ts';
import { runTasks } from './task-options.ts';
import { STOP_SIGNALS, type StopSignal } from './terminal.ts';
import { UsageError } from './usage-error.ts';

export interface BatchFlags {
  batch: boolean;
  /** --batch-poll, ms. */
  batchPoll: number;
  batchSize?: number;
  output?: string;
  resume: boolean;
  overwrite: boolean;
}

/**
 * Flags that pace or shape live calls, which a batch run makes none of: given with --batch, they
 * are refused by name rather than ignored.
 */
const LIVE_ONLY: Readonly<Record<string, string>> = {
  workers: '--workers',
  rate: '--rate',
  burst: '--burst',
  timeout: '--timeout',
  callTimeout: '--call-timeout',
  tpm: '--tpm',
  adaptive: '--adaptive',
  syncHeaders: '--sync-headers',
  breakerThreshold: '--breaker-threshold',
  breakerCooldown: '--breaker-cooldown',
  breakerGiveUp: '--breaker-give-up',
  config: '--config',
  dryRun: '--dry-run',
  redis: '--redis',
  budgetKey: '--budget-key',
  dashboard: '--dashboard',
};

/** Adds --batch, --batch-poll and --batch-size. */
export function addBatchOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--batch', "run through the provider's Batch API: half the price, answers within 24h (needs --output)").default(false),
    )
    .addOption(
      new Option('--batch-poll <duration>', 'with --batch: how often the batches are asked how they stand')
        .argParser(duration({ allowZero: false }))
        .default(BATCH_DEFAULTS.pollMs, formatDuration(BATCH_DEFAULTS.pollMs)),
    )
    .addOption(
      new Option(
        '--batch-size <n>',
        `with --batch: rows per batch at most (default ${BATCH_DEFAULTS.batchSize.toLocaleString('en-US')})`,
      ).argParser(integer(1, BATCH_DEFAULTS.batchSize)),
    );
}

/** The --batch flags given without --batch, or the live flags given with it: one line each. */
export function validateBatchFlags(flags: BatchFlags, given: (field: string) => boolean): void {
  if (!flags.batch) {
    for (const [field, flag] of [
      ['batchPoll', '--batch-poll'],
      ['batchSize', '--batch-size'],
    ] as const) {
      if (given(field)) throw new UsageError(`${flag} applies with --batch only`);
    }
    return;
  }
  const live = Object.keys(LIVE_ONLY).filter(given);
  if (live.length > 0) {
    throw new UsageError(
      `${live.map((field) => LIVE_ONLY[field]).join(', ')} mean nothing with --batch (a batch run makes no live calls): leave them out`,
    );
  }
  if (flags.output === undefined || flags.output === '-') {
    throw new UsageError('--batch needs --output FILE: what was submitted is saved beside it, so that a stopped run can --resume');
  }
}

/** Where a batch run's state is kept: beside its results file. */
const statePath = (output: string) => `${output}.batches.json`;

/** Writes the state whole or not at all: a crash mid-write leaves the last one. */
async function saveState(path: string, state: BatchRunState): Promise<void> {
  await writeFile(`${path}.tmp`, `${JSON.stringify(state)}\n`);
  await rename(`${path}.tmp`, path);
}

/** Runs the flags' articles through the Batch API; returns the exit code. */
export async function runBatchCommand(flags: RunFlags & Partial<ClientFlags> & BatchFlags & ReportFlags): Promise<number> {
  const output = flags.output!;
  const provider = flags.provider ?? 'simulated';
  if (provider === 'azure')
    throw new UsageError('--batch runs with --provider=openai, --provider=anthropic or the simulated provider; not azure yet');
  const setups = await providerSetups(flags, Infinity, 1);
  const setup = setups.providers[0]!;
  const { tasks } = await runTasks(flags, setups.providers, undefined);
  const api = batchApi(flags, provider, setup.provider, setups.keyVariables);
  // Before anything is read, written or submitted: a report that cannot be written stops the run here.
  const report = await startRunReport(flags, { providers: setups.providers, tasks, budget: undefined }, (text) =>
    process.stderr.write(`${text}\n`),
  );
  const stateFile = statePath(output);
  let resume: BatchRunState | undefined;
  if (flags.resume) {
    if (!existsSync(stateFile)) throw new UsageError(`--resume: ${stateFile} does not exist: there is no batch run to take up`);
    resume = JSON.parse(await readFile(stateFile, 'utf8')) as BatchRunState;
    // The simulated provider's batches lived in the process that submitted them: their rows go again.
    if (provider === 'simulated') resume = { ...resume, pending: [] };
    // A process killed after writing a line and before saving the state: the line says the article ended.
    resume = { ...resume, ended: [...new Set([...resume.ended, ...(await takeUpResults(output))])] };
  } else if (!flags.overwrite && existsSync(output)) {
    throw new UsageError(`--output ${output} exists: --resume takes it up, --overwrite replaces it`);
  }
  const input = await openInput(flags, (text) => process.stderr.write(`${text}\n`), expectedFields(tasks));
  const writer = await JsonlWriter.open(output, { append: flags.resume });
  const price = flags.priceInput === undefined ? undefined : { inputPerMTok: flags.priceInput, outputPerMTok: flags.priceOutput! };
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
  // A line each time the counts move, not each poll: a night's run polls a thousand times.
  let said = '';
  try {
    const summary = await runBatch({
      source: input.open(),
      api,
      tasks,
      maxOutputTokens: flags.maxOutputTokens,
      price,
      maxCostUsd: flags.maxCost,
      maxAttempts: flags.maxAttempts,
      batchSize: flags.batchSize,
      pollMs: flags.batchPoll,
      resume,
      signal: controller.signal,
      onState: async (state) => {
        last = state;
        await saveState(stateFile, state);
      },
      onResult: (result) => {
        report?.onResult(result);
        return writer.write(result);
      },
      onBatch: report?.onBatch,
      onProgress: (progress) => {
        if (!talk) return;
        const rows = progress.reduce((sum, batch) => sum + batch.total, 0);
        const done = progress.reduce((sum, batch) => sum + batch.completed + batch.failed, 0);
        const failed = progress.reduce((sum, batch) => sum + batch.failed, 0);
        const line = `batches: ${progress.length} in flight (${progress.map((batch) => batch.status).join(', ')}), ${done}/${rows} rows done, ${failed} failed`;
        if (line !== said) process.stderr.write(`${line}\n`);
        said = line;
      },
    });
    await writer.close();
    const reportLine = await report?.end(
      summary.interrupted ? 'interrupted' : summary.budgetStopped ? 'stopped by --max-cost' : 'finished',
    );
    if (reportLine !== undefined) process.stderr.write(`${reportLine}\n`);
    const pending = last?.pending ?? [];
    if (!summary.interrupted && pending.length === 0 && summary.left === 0) await rm(stateFile, { force: true });
    const lines = [
      `Batch run: ${plural(summary.succeeded, 'article')} succeeded, ${summary.failed} failed${summary.left > 0 ? `, ${summary.left} left` : ''}`,
      `Batches: ${summary.batches} submitted, ${plural(summary.rows, 'row')}, ${summary.rowsFailed} failed (${summary.rowsExpired} expired), ${summary.rowsRetried} sent again; ${formatMs(summary.waitingMs)} waiting at the provider`,
    ];
    if (summary.costUsd !== undefined) lines.push(`Cost: ${formatUsd(summary.costUsd)} at the batch price`);
    process.stdout.write(
      flags.json ? `${JSON.stringify({ ...summary, output, state: stateFile, signal: stoppedBy })}\n` : `${lines.join('\n')}\n`,
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
        `error: --max-cost cannot cover the next row; ${summary.left} articles left: run again with --resume and a larger --max-cost\n`,
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
 * The ids of the lines the results file holds (none when there is no file yet). A last line cut
 * short by a kill is cut off: its article has not ended, and the lines appended must start whole.
 */
async function takeUpResults(output: string): Promise<string[]> {
  if (!existsSync(output)) return [];
  let text = await readFile(output, 'utf8');
  if (text !== '' && !text.endsWith('\n')) {
    text = text.slice(0, text.lastIndexOf('\n') + 1);
    await writeFile(output, text);
  }
  return text.split('\n').flatMap((line) => {
    try {
      return [String((JSON.parse(line) as { id: unknown }).id)];
    } catch {
      return [];
    }
  });
}
