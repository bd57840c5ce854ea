// The checks of a run's flags taken together: each a one-line UsageError before anything is read or called.
import { formatDuration } from '../src/mechanisms.ts';
import { callsHttpApi, type ClientFlags } from './client-options.ts';
import { formatMs } from './format.ts';
import type { RunFlags } from './run-options.ts';
import { UsageError } from './usage-error.ts';

/** Throws a UsageError unless --min-latency is at most --max-latency. */
export function checkLatencyRange(flags: { readonly minLatency: number; readonly maxLatency: number }): void {
  if (flags.minLatency > flags.maxLatency) {
    throw new UsageError(`--min-latency (${formatMs(flags.minLatency)}) must not exceed --max-latency (${formatMs(flags.maxLatency)})`);
  }
}

export function validateRunFlags(flags: RunFlags & Partial<ClientFlags>): void {
  if (flags.config?.trim() === '') throw new UsageError('--config needs a file name');
  checkLatencyRange(flags);
  if (flags.callTimeout !== Infinity && flags.callTimeout >= flags.timeout) {
    throw new UsageError(
      `--call-timeout (${formatDuration(flags.callTimeout)}) must be shorter than --timeout (${formatDuration(flags.timeout)}): ` +
        "an attempt never has more than what is left of the article's budget",
    );
  }
  if (flags.providerBurst !== undefined && flags.providerRate === undefined) {
    throw new UsageError('--provider-burst needs --provider-rate (the quota it belongs to)');
  }
  if (flags.config !== undefined) {
    for (const flag of ['providerRate', 'providerBurst', 'headers', 'outage', 'tpm', 'adaptive', 'syncHeaders'] as const) {
      if (flags[flag] !== undefined && flags[flag] !== false) {
        const name = flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
        throw new UsageError(`--${name} describes a single provider; with --config set it per provider in the file`);
      }
    }
  }
  if (flags.syncHeaders && flags.headers === undefined && flags.config === undefined && !callsHttpApi(flags)) {
    throw new UsageError('--sync-headers needs --headers: without it the simulated provider sends no rate-limit headers');
  }
  if (flags.tasks?.trim() === '') throw new UsageError('--tasks needs a file name');
  if ((flags.priceInput === undefined) !== (flags.priceOutput === undefined)) {
    throw new UsageError('--price-input and --price-output go together: a call costs its input and its output tokens');
  }
  if (flags.config !== undefined && flags.priceInput !== undefined) {
    throw new UsageError('--price-input describes a single provider; with --config set "price" per provider in the file');
  }
  for (const [flag, value] of [
    ['--price-cached-input', flags.priceCachedInput],
    ['--price-cache-write', flags.priceCacheWrite],
  ] as const) {
    if (value === undefined) continue;
    if (flags.config !== undefined)
      throw new UsageError(`${flag} describes a single provider; with --config set "price" per provider in the file`);
    if (flags.priceInput === undefined)
      throw new UsageError(`${flag} needs --price-input and --price-output: it is part of the provider's price`);
  }
  if (flags.maxCost !== undefined && flags.config === undefined && flags.priceInput === undefined) {
    throw new UsageError('--max-cost needs a price to count in: give --price-input and --price-output (USD per million tokens)');
  }
  if (flags.inputFormat !== undefined && flags.input === undefined) throw new UsageError('--input-format applies to --input only');
  if (flags.skipInvalid && flags.input === undefined) {
    throw new UsageError('--skip-invalid applies to --input files only');
  }
}
