// --dry-run: what a run would do and cost, printed instead of running it — no call, no file written,
// no Redis reached, no key needed.
import { Option } from 'commander';
import { formatUsd } from '../src/mechanisms.ts';
import { estimateRun, type LimitEstimate, type RunEstimate, type RunPlan } from '../src/plan.ts';
import { formatMs, formatRate, plural } from './format.ts';
import { expectedFields, openInput } from './input.ts';
import type { OutputFlags } from './output.ts';
import type { RunFlags } from './run-options.ts';
import { UsageError } from './usage-error.ts';

export interface DryRunFlags {
  dryRun: boolean;
}

export function dryRunOption(): Option {
  return new Option(
    '--dry-run',
    'say what the run would call, take and cost, and the least time it can take; call nothing, write nothing',
  ).default(false);
}

/** Flags a dry run cannot honour: said, rather than a plan that looks like theirs. */
export function validateDryRunFlags(flags: DryRunFlags & OutputFlags): void {
  if (!flags.dryRun) return;
  if (flags.resume) {
    throw new UsageError('--dry-run plans the whole input and reads no results file: drop --resume (the rest of a run costs at most this)');
  }
}

/** Reads the input, works out what the planned run would do, prints it on stdout: the dry run's exit code. */
export async function dryRun(flags: RunFlags & DryRunFlags & { readonly cache?: string | undefined }, planned: RunPlan): Promise<number> {
  if (planned.pools.length > 0) {
    throw new UsageError(
      `--dry-run does not plan pools yet: ${flags.config} has ${planned.pools.map((pool) => `"${pool.name}"`).join(', ')}`,
    );
  }
  const input = await openInput(flags, (text) => process.stderr.write(`${text}\n`), expectedFields(planned.tasks));
  const plan = await estimateRun(planned, input.open());
  const skippedLines = input.skipped();
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ dryRun: true, input: input.name, skippedLines, ...plan, maxCostUsd: flags.maxCost, ...(flags.cache !== undefined && { cache: flags.cache, cacheLookedUp: false }) }, (_, value: unknown) => (value === Infinity ? 'inf' : value), 2)}\n`
      : `${formatPlan(plan, input.name, flags.maxCost, flags.cache).join('\n')}\n`,
  );
  return 0;
}

/** The plan for a person: what is counted, and how each figure was had. */
export function formatPlan(plan: RunEstimate, inputName: string, maxCostUsd: number | undefined, cache?: string): string[] {
  const lines = ['Dry run: no call made, nothing written.'];
  const perArticle = plan.tasks.length;
  const lacking = plan.lacking > 0 ? ` (${plan.lacking} lacking a field its prompts read: they would fail before any call)` : '';
  lines.push(
    `Articles: ${plan.articles} (${inputName})${lacking} | Calls: ${plan.calls}, ${perArticle} per article ` +
      '(one attempt each: retries would add to it)',
  );
  for (const task of plan.tasks) {
    const cost = task.expectedUsd === undefined ? '' : ` | ~${formatUsd(task.expectedUsd)}, at most ${formatUsd(task.worstUsd!)}`;
    lines.push(
      `Task ${task.name} (${task.provider}): ${plural(task.calls, 'call')} | prompt tokens ${task.inputTokens} | ` +
        `output tokens ~${task.typicalOutputTokens}, at most ${task.maxOutputTokens}${cost}`,
    );
  }
  lines.push(
    `Tokens: prompts ${plan.inputTokens} (counted as the gate reserves them under a token limit) | answers ~${plan.typicalOutputTokens} ` +
      `(the simulated answer to each prompt), at most ${plan.maxOutputTokens} (every call's output cap)`,
  );
  if (plan.expectedUsd === undefined) lines.push('Cost: no price given (--price-input and --price-output, USD per million tokens)');
  else {
    const budget =
      maxCostUsd === undefined
        ? ''
        : plan.worstUsd! <= maxCostUsd
          ? ` | --max-cost ${formatUsd(maxCostUsd)} covers the worst case`
          : ` | --max-cost ${formatUsd(maxCostUsd)} is short of the worst case: the run may stop for a --resume`;
    lines.push(
      `Cost: ~${formatUsd(plan.expectedUsd)} expected (prompts and the answers above), ${formatUsd(plan.worstUsd!)} at worst ` +
        `(what --max-cost holds: every prompt's bytes and framing as tokens, every answer at its cap)${budget}`,
    );
  }
  const several = plan.providers.length > 1;
  if (plan.boundBy === null) lines.push('Least time at the limits: none (no limit bounds these calls)');
  else {
    const provider = plan.providers.find((candidate) => candidate.name === plan.boundBy!.provider)!;
    const limit = provider.limits.find((candidate) => candidate.kind === plan.boundBy!.kind)!;
    lines.push(
      `Least time at the limits: ${formatMs(plan.leastElapsedMs)}, bound by ${several ? `${provider.name}'s ` : ''}${floor(limit)}`,
    );
  }
  for (const provider of plan.providers) {
    if (!several && provider.limits.length === 1) continue;
    lines.push(`Provider ${provider.name}: ${plural(provider.calls, 'call')} | ${provider.limits.map(floor).join(' | ')}`);
  }
  // The cache is not opened (nothing reached, nothing written): what it holds is not subtracted.
  if (cache !== undefined)
    lines.push(
      `Cache: ${cache} not looked up: the calls, tokens and cost above are the most the run makes; each answer it finds there costs nothing and takes nothing from the limits`,
    );
  return lines;
}

/** `requests: (10 − burst 3) / 3/s = 2.333s` */
function floor(limit: LimitEstimate): string {
  if (limit.rate === Infinity) return `${limit.kind}: no limit`;
  const amount = limit.kind === 'requests' ? limit.amount : `~${limit.amount}`;
  return `${limit.kind}: (${amount} − burst ${limit.burst}) / ${formatRate(limit.rate)}/s = ${formatMs(limit.floorMs)}`;
}
