// --batch's flags and their checks: light, loaded with every run; the run itself (batch.ts) is loaded when --batch is given.
import { type Command, Option } from 'commander';
// From their own modules rather than the batch entry, which would bring the batch run into every
// run's start-up: a live run loads its flags, not the run; the vendors' caps from the registry.
import { BATCH_DEFAULTS } from '../src/batch/batch-run-options.ts';
import { formatDuration } from '../src/mechanisms.ts';
import { VENDORS } from '../src/vendors/registry.ts';
import { duration, integer, oneOf } from './parse-values.ts';
import { UsageError } from './usage-error.ts';

/** The vendors with a Batch API, by what help calls them, with their caps. */
const BATCHED = Object.values(VENDORS).flatMap((vendor) =>
  vendor.batch === undefined ? [] : [{ label: vendor.defaults.label, maxRows: vendor.batch.maxRows, maxBytes: vendor.batch.maxBytes }],
);

export interface BatchFlags {
  batch: boolean;
  /** --batch-poll, ms. */
  batchPoll: number;
  batchSize?: number;
  /** --batch-articles: articles in progress at once, at most. */
  batchArticles: number;
  /** --batch-queue-tokens: estimated input tokens enqueued at once, at most. */
  batchQueueTokens?: number;
  /** --batch-fallback: where a row that failed in a batch goes. */
  batchFallback: 'batch' | 'live';
  output?: string;
  resume: boolean;
  overwrite: boolean;
}

/**
 * Flags that pace or shape a live call's way through its gate: with --batch-fallback=live they
 * shape the calls of the rows that fall back (--workers: how many at once); otherwise a batch run
 * makes no live call, and they are refused by name rather than ignored.
 */
const LIVE_PATH: Readonly<Record<string, string>> = {
  workers: '--workers',
  rate: '--rate',
  burst: '--burst',
  callTimeout: '--call-timeout',
  tpm: '--tpm',
  adaptive: '--adaptive',
  syncHeaders: '--sync-headers',
  breakerThreshold: '--breaker-threshold',
  breakerCooldown: '--breaker-cooldown',
};

/** Flags that mean nothing to a batch run, live fallback or not. */
const LIVE_ONLY: Readonly<Record<string, string>> = {
  timeout: '--timeout',
  breakerGiveUp: '--breaker-give-up',
  config: '--config',
  dryRun: '--dry-run',
  redis: '--redis',
  budgetKey: '--budget-key',
  dashboard: '--dashboard',
};

/** Adds --batch and the flags of a batch run. */
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
        `with --batch: rows per batch at most (default: the vendor's cap, ${BATCHED.map(({ label, maxRows }) => `${label}'s ${withCommas(maxRows)}`).join(', ')}); ` +
          `a batch is also cut at the vendor's ${BATCHED.map(({ maxBytes }) => `${maxBytes / 1e6} MB`).join(' / ')}`,
      ).argParser(integer(1, Math.max(...BATCHED.map(({ maxRows }) => maxRows)))),
    )
    .addOption(
      new Option(
        '--batch-articles <n>',
        'with --batch: the most articles in progress at once, more read from the input as earlier ones end: what bounds the memory a run takes; the more, the fewer rounds of batches a large input needs',
      )
        .argParser(integer(1))
        .default(BATCH_DEFAULTS.holdArticles, withCommas(BATCH_DEFAULTS.holdArticles)),
    )
    .addOption(
      new Option(
        '--batch-queue-tokens <n>',
        "with --batch: the most estimated input tokens enqueued at once (the model's enqueued-token limit): later batches wait for earlier ones to end (default: not counted)",
      ).argParser(integer(1)),
    )
    .addOption(
      new Option(
        '--batch-fallback <where>',
        'with --batch: where a row that failed in a batch goes: again in a later batch, or through the live path at the live price',
      )
        .argParser(oneOf(['batch', 'live'] as const))
        .default('batch'),
    );
}

/** The --batch flags given without --batch, or the live flags given with it: one line each. */
export function validateBatchFlags(flags: BatchFlags, given: (field: string) => boolean): void {
  if (!flags.batch) {
    for (const [field, flag] of [
      ['batchPoll', '--batch-poll'],
      ['batchSize', '--batch-size'],
      ['batchArticles', '--batch-articles'],
      ['batchQueueTokens', '--batch-queue-tokens'],
      ['batchFallback', '--batch-fallback'],
    ] as const) {
      if (given(field)) throw new UsageError(`${flag} applies with --batch only`);
    }
    return;
  }
  const live = Object.keys(LIVE_ONLY).filter(given);
  if (live.length > 0) {
    throw new UsageError(
      `${live.map((field) => LIVE_ONLY[field]).join(', ')} ${live.length === 1 ? 'means' : 'mean'} nothing with --batch (a batch run makes no live calls): leave them out`,
    );
  }
  const livePath = Object.keys(LIVE_PATH).filter(given);
  if (livePath.length > 0 && flags.batchFallback !== 'live') {
    throw new UsageError(
      `${livePath.map((field) => LIVE_PATH[field]).join(', ')} ${livePath.length === 1 ? 'shapes' : 'shape'} live calls, which --batch makes only with --batch-fallback=live: leave them out`,
    );
  }
  if (flags.output === undefined || flags.output === '-') {
    throw new UsageError('--batch needs --output FILE: what was submitted is saved beside it, so that a stopped run can --resume');
  }
}

/** `n` with a comma every three digits, as --help shows a default: not toLocaleString, whose first use loads ICU (~10 ms) at every start. */
function withCommas(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
