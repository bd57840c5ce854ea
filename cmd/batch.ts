// --batch: a run through the provider's Batch API (runBatch), its saved state and its summary; its flags are in batch-options.ts.
import { existsSync } from 'node:fs';
import { runBatch, SimulatedBatchApi, takeUpBatch, type BatchApi, type BatchRunState } from '../src/batch/index.ts';
import { RunEvents, type Provider } from '../src/index.ts';
import { CallGate, CallLoop, ProviderRoute } from '../src/routes.ts';
import type { ProviderType } from '../src/vendors/index.ts';
import { formatUsd } from '../src/mechanisms.ts';
import { countRedone, JsonlResultStore, withKeptOutputs } from '../src/sinks/index.ts';
// The registry, not news-processor/vendors: a vendor's Batch API is loaded from it when a run uses
// it (the entry would bring every vendor's into the batch run's chunk).
import { isHttpProviderType, VENDORS } from '../src/vendors/registry.ts';
import type { BatchFlags } from './batch-options.ts';
import type { ClientFlags } from './client-options.ts';
import { formatMs, plural } from './format.ts';
import { batchProgressLine } from './progress.ts';
import { expectedFields, openInput } from './input.ts';
import { priceOf, providerSetups } from './provider-setup.ts';
import { startRunReport, type ReportFlags } from './report-options.ts';
import type { RunFlags } from './run-options.ts';
import { redoneLine } from './output.ts';
import { checkedPlan, loadTasks } from './task-options.ts';
import { STOP_SIGNALS, type StopSignal } from './terminal.ts';
import { UsageError } from './usage-error.ts';

/** Runs the flags' articles through the Batch API; returns the exit code. */
export async function runBatchCommand(
  flags: RunFlags & Partial<ClientFlags> & BatchFlags & ReportFlags & { readonly rate: number; readonly burst: number },
): Promise<number> {
  const output = flags.output!;
  const provider = flags.provider ?? 'simulated';
  if (isHttpProviderType(provider) && VENDORS[provider].batch === undefined)
    throw new UsageError(`--batch: provider type ${provider} has no Batch API`);
  const live = flags.batchFallback === 'live';
  // The live path's limits only where rows may take it: a batch's own calls are the provider's to pace.
  const setups = live ? await providerSetups(flags, flags.rate, flags.burst) : await providerSetups(flags, Infinity, 1);
  const setup = setups.providers[0]!;
  const tasks = await loadTasks(flags);
  const api = await batchApi(flags, provider, setup.provider, setups.keyVariables);
  const batch = { name: api.name, model: api.model, maxOutputTokens: flags.maxOutputTokens };
  const plan = checkedPlan({ providers: setups.providers, tasks, batch });
  if (flags.batchSize !== undefined && api.maxRows !== undefined && flags.batchSize > api.maxRows) {
    throw new UsageError(
      `--batch-size ${flags.batchSize} is more than ${provider}'s Batch API takes in a batch: ${api.maxRows.toLocaleString('en-US')} at most`,
    );
  }
  // Loaded before the first token is taken, as a live run does: a call must leave when its token is granted.
  if (live) await setup.provider.ready?.();
  // The route a live run calls, through a loop with the live run's retries and repairs.
  const fallback = live
    ? new CallLoop({ retry: { maxAttempts: flags.maxAttempts }, maxRepairs: flags.maxRepairs }).caller(
        new ProviderRoute(new CallGate(setup)),
      )
    : undefined;
  // Before anything is read, written or submitted: a report that cannot be written stops the run here.
  const events = new RunEvents();
  const report = await startRunReport(flags, events, { providers: setups.providers }, (text) => process.stderr.write(`${text}\n`));
  const store = JsonlResultStore.at(output);
  let resume: BatchRunState | undefined;
  let redo: ReadonlyMap<string, readonly string[]> = new Map();
  let partial: ReadonlyMap<string, Readonly<Record<string, unknown>>> = new Map();
  if (flags.resume) {
    // A run that finished has left no state: its results file alone is taken up (the changed tasks run again).
    if (!existsSync(store.state.name) && !existsSync(output))
      throw new UsageError(`--resume: ${store.state.name} does not exist: there is no batch run to take up`);
    // The simulated provider's batches lived in the process that submitted them: their rows go again.
    ({ resume, redo, partial } = await takeUpBatch(store, { redo: plan.redo, batchesLost: provider === 'simulated' }));
  } else if (!flags.overwrite && existsSync(output)) {
    throw new UsageError(`--output ${output} exists: --resume takes it up, --overwrite replaces it`);
  }
  const input = await openInput(flags, (text) => process.stderr.write(`${text}\n`), expectedFields(tasks));
  await store.open({ append: flags.resume });
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
      source: withKeptOutputs(input.open(), partial),
      api,
      tasks,
      plan,
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
        await store.state.save(state);
      },
      onResult: (result) => {
        countRedone(redo, result, redone);
        return store.write(result);
      },
      events,
      onProgress: (progress) => {
        if (!talk || progress.length === 0) return;
        const line = batchProgressLine(progress);
        if (line !== said) process.stderr.write(`${line}\n`);
        said = line;
      },
    });
    await store.close();
    // The articles run again have a newer line below their earlier one: each is folded into its last.
    if (redo.size > 0) await store.compact();
    const reportLine = await report?.finish();
    if (reportLine !== undefined) process.stderr.write(`${reportLine}\n`);
    const pending = last?.pending ?? [];
    if (!summary.interrupted && pending.length === 0 && summary.left === 0 && !summary.unread) await store.state.clear();
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
        ? `${JSON.stringify({ ...summary, ...redoneFigures, output, state: store.state.name, signal: stoppedBy })}\n`
        : `${lines.join('\n')}\n`,
    );
    if (summary.interrupted && stoppedBy !== undefined) {
      const ids = pending.map((batch) => batch.batchId).join(', ');
      process.stderr.write(
        provider === 'simulated'
          ? `stopped: the simulated provider's batches end with this process; ${store.state.name} keeps what was answered: run again with --resume to finish\n`
          : `stopped: ${plural(pending.length, 'batch', 'batches')} still running at the provider (${ids}), recorded in ${store.state.name}: ` +
              `run again with --resume to collect them, or cancel each with POST ${cancelUrl(flags, provider)}\n`,
      );
      return STOP_SIGNALS[stoppedBy];
    }
    if (summary.budgetStopped) {
      const stop = summary.budgetStop;
      // Rows still fit, but a round of them would be tiny beside the first, or the budget has cut its rounds short enough.
      const spent = stop === undefined || stop.nextRoundRows === 0;
      const why = spent
        ? '--max-cost cannot cover the next row'
        : `--max-cost: ${formatUsd(stop.leftUsd)} left holds ${plural(stop.nextRoundRows, 'row')} at their worst case, after ${plural(stop.rounds, 'batch', 'batches')} the budget cut short (the first held ${stop.firstRoundRows}): not spent a few rows a batch`;
      process.stderr.write(
        `error: ${why}; ${plural(summary.left, 'article')} left${summary.unread ? ' and the rest of the input not read' : ''}: run again with --resume ${spent ? 'and a larger --max-cost' : 'to spend it in more batches, or a larger --max-cost'}\n`,
      );
      return 1;
    }
    return summary.failed > 0 ? 1 : 0;
  } finally {
    for (const signal of Object.keys(STOP_SIGNALS) as StopSignal[]) process.off(signal, onSignal);
  }
}

/** The Batch API of the flags' provider: its vendor's (loaded now, its SDK on first use), or one in this process over the simulation. */
async function batchApi(
  flags: Partial<ClientFlags>,
  type: ProviderType,
  provider: Provider,
  keyVariables: ReadonlyMap<string, string>,
): Promise<BatchApi> {
  if (!isHttpProviderType(type)) return new SimulatedBatchApi({ provider });
  const { defaults, batch } = VENDORS[type];
  // providerSetups has read and checked the key already; runBatchCommand, that the vendor has a Batch API.
  const apiKey = process.env[keyVariables.get(provider.name)!]!.trim();
  const create = await batch!.load();
  return create({ apiKey, baseUrl: flags.baseUrl ?? defaults.baseUrl!, model: flags.model ?? defaults.model!, name: provider.name });
}

/** Where a batch is cancelled, `ID` standing for its id. */
function cancelUrl(flags: Partial<ClientFlags>, type: ProviderType): string {
  if (!isHttpProviderType(type)) return '';
  const { defaults, batch } = VENDORS[type];
  return batch!.cancelUrl(flags.baseUrl ?? defaults.baseUrl!);
}
