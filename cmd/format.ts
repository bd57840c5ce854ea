import type { ArticleResult, CallCounts, PipelineAttemptEvent, Percentiles, RunSummary } from '../src/index.ts';
import type { PoolMemberChange } from '../src/routes.ts';
import { formatUsd } from '../src/mechanisms.ts';

/** `412ms` under a second, `3.216s` above, as the Go pipeline this command ports printed them (docs/cli.md shows them). */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '∞';
  if (ms < 1) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  return `${(ms / 1000).toFixed(3)}s`;
}

/** `1 article`, `2 articles`: a count with its noun, singular for one. */
export function plural(n: number, singular: string, many = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : many}`;
}

export function formatRate(rate: number): string {
  if (rate === Infinity) return 'inf';
  return Number.isInteger(rate) ? String(rate) : String(Number(rate.toPrecision(4)));
}

const OUTCOME_TEXT: Readonly<Record<PipelineAttemptEvent['outcome'], string>> = {
  ok: 'ok',
  'rate-limited': '429 rate limited',
  'server-error': 'server error',
  timeout: 'timed out',
  'network-error': 'network error',
  rejected: 'request rejected',
  unauthorized: 'key refused',
  'quota-exhausted': 'quota exhausted',
  truncated: 'output cut off',
  refused: 'refused to answer',
  malformed: 'malformed output',
  'not-an-api': "not the API's answer",
  'limiter-timeout': 'no token before the deadline',
  'circuit-open': 'circuit open, not called',
  'too-large': 'too large for the limits',
  'over-budget': 'over the budget, not sent',
  aborted: 'cancelled',
  error: 'failed',
};

/** The outcome as a line says it: with the HTTP status or the network error's code when there is one. */
function outcomeText(event: PipelineAttemptEvent): string {
  const text = OUTCOME_TEXT[event.outcome];
  const { status, code } = (event.error ?? {}) as { status?: unknown; code?: unknown };
  if (event.outcome === 'network-error' && typeof code === 'string') return `${text} (${code})`;
  if (typeof status === 'number' && event.outcome !== 'rate-limited' && !/^\d/.test(text)) return `${status} ${text}`;
  return text;
}

/** A pool member going down, coming back or dropped, in one line naming it (never its key). */
export function formatPoolChange(change: PoolMemberChange): string {
  const { pool, member, left } = change;
  const others = left === 0 ? 'no member is left' : `its calls go to the ${left === 1 ? 'other member' : `${left} others`}`;
  switch (change.change) {
    case 'down':
      return `warning: pool "${pool}": member "${member}" is down (its circuit opened); its calls go to the others until it is back`;
    case 'back':
      return `notice: pool "${pool}": member "${member}" is back`;
    case 'dropped':
      return `warning: pool "${pool}": member "${member}" dropped: ${change.error?.message ?? 'refused'}; ${others}`;
  }
}

/** One line per attempt, in the form of the ported Go pipeline's per-call lines, plus the wait and what happens next. */
export function formatAttempt(event: PipelineAttemptEvent, maxAttempts: number): string {
  const head = `worker ${event.workerId + 1} | article ${event.articleId} | ${event.task.padEnd(9)} |`;
  const timing = event.called
    ? ` in ${formatMs(event.latencyMs)} (waited ${formatMs(event.waitMs)})`
    : ` after waiting ${formatMs(event.waitMs)}`;
  // A refusal of the circuit spends no attempt: the same one is made once the circuit lets it.
  const next =
    event.retryInMs === undefined
      ? ''
      : event.outcome === 'circuit-open'
        ? `, attempt ${event.attempt}/${maxAttempts} waits for the circuit (${formatMs(event.retryInMs)} at most)`
        : `, retry ${event.attempt + 1}/${maxAttempts} in ${formatMs(event.retryInMs)}`;
  // A repair asks again with the unfit answer's problems: said apart from the attempts.
  const repair = event.repair > 0 ? ` repair ${event.repair}:` : '';
  return `${head}${repair} ${outcomeText(event)}${timing}${next}`;
}

/**
 * One line per finished article: for the built-in tasks their sentiment and summary, for others
 * each task's output, as compact JSON, cut to fit a line.
 */
export function formatResult(result: ArticleResult): string {
  const line = resultLine(result);
  return result.cached === undefined ? line : `${line} (cached: ${result.cached.join(', ')})`;
}

function resultLine(result: ArticleResult): string {
  if (result.status === 'succeeded') {
    const { summarize, sentiment } = result.outputs as {
      summarize?: { summary?: unknown };
      sentiment?: { sentiment?: unknown; score?: unknown };
    };
    if (typeof summarize?.summary === 'string' && typeof sentiment?.score === 'number') {
      const score = sentiment.score;
      return `✓ article ${result.id} [${String(sentiment.sentiment)} ${score >= 0 ? '+' : ''}${score.toFixed(2)}] ${truncate(summarize.summary, 100)}`;
    }
    const outputs = Object.entries(result.outputs).map(([task, output]) => `${task} ${JSON.stringify(output)}`);
    return `✓ article ${result.id} ${truncate(outputs.join(' · '), 120)}`;
  }
  const mark = result.status === 'cancelled' ? '–' : '✗';
  const where = result.error?.task === undefined ? '' : ` in ${result.error.task}`;
  return `${mark} article ${result.id} ${result.status}${where}: ${result.error?.type}: ${result.error?.message}`;
}

/** What the run had spent before (a resumed run's results file says), in USD: the summary then says "this run" and "in all". */
export interface SummaryContext {
  /** With --resume: what the results file says earlier runs spent, in USD. */
  readonly earlierCostUsd?: number | undefined;
  /** With --resume: what it says earlier runs' calls of unknown fate may have cost, in USD. */
  readonly earlierUnknownUsd?: number | undefined;
}

/** A provider's rate as configured, and where the adaptive rate settled it. */
function formatLimit(p: RunSummary['providers'][number]): string {
  const settled = p.adaptive ? ` (adaptive: settled at ${formatRate(p.finalRate)}/s)` : '';
  return `${formatRate(p.rate)}/s${settled} burst=${p.burst}`;
}

/** The ported Go pipeline's summary line, in form, then the figures it never showed. */
export function formatSummary(summary: RunSummary, context: SummaryContext = {}): string[] {
  const limits =
    summary.providers.length > 1
      ? summary.providers.map((p) => `${p.name} ${formatLimit(p)}`).join(', ')
      : formatLimit(summary.providers[0]!);
  const { notStarted } = summary;
  const articles =
    notStarted !== null && notStarted > 0
      ? `${summary.articles} of ${plural(summary.articles + notStarted, 'article')}`
      : notStarted === null && (summary.interrupted || summary.stoppedBy !== undefined)
        ? `${plural(summary.articles, 'article')} (the rest of the input not read)`
        : plural(summary.articles, 'article');
  const lines = [
    `Rate limit=${limits} | ${articles} | Succeeded:${summary.succeeded} Failed:${summary.failed} | ${formatMs(summary.elapsedMs)}`,
    `Calls: ${summary.calls}${summary.answered === summary.calls ? '' : ` (${summary.answered} answered)`} | Retries: ${summary.retries} | ` +
      // Only unfit answers bring them: shown when there were any.
      (summary.repairs > 0 ? `Repairs: ${summary.repairs} | ` : '') +
      `429s received: ${summary.rateLimited} | ` +
      `5xx: ${summary.serverErrors} | Timeouts: ${summary.timeouts} | ` +
      // The rarer ways a call fails: shown when there were any, as `Not started` is.
      RARE_FAILURES.filter(([field]) => summary[field] > 0)
        .map(([field, label]) => `${label}: ${summary[field]} | `)
        .join('') +
      `Dead letters: ${summary.deadLetters} | Cancelled: ${summary.cancelled}` +
      (notStarted !== null && notStarted > 0 ? ` | Not started: ${notStarted}` : ''),
    formatBound(summary),
  ];
  for (const p of summary.providers) {
    const notable = summary.providers.length > 1 || p.countsTokens || p.breakerOpens > 0 || p.rateCuts > 0 || p.circuitRejections > 0;
    if (!notable) continue;
    const parts = [
      `${callsText(p)} (${p.achievedRate.toFixed(2)}/s)`,
      `429s ${p.rateLimited}`,
      ...rareFailures(p),
      `retries ${p.retries}`,
      `breaker opened ${p.breakerOpens}× (${p.circuitRejections} refused)`,
    ];
    if (p.rateCuts > 0 || p.finalRate !== p.rate)
      parts.push(`rate ${formatRate(p.rate)}/s → ${p.finalRate.toFixed(2)}/s (${p.rateCuts} ${p.rateCuts === 1 ? 'cut' : 'cuts'})`);
    if (p.countsTokens) parts.push(`tokens ${p.tokensUsed}`);
    lines.push(`Provider ${p.name}: ${parts.join(' | ')}`);
  }
  for (const pool of summary.pools ?? []) {
    // What each member served: its calls answered, not those that failed.
    const shares = pool.members.map((name) => {
      const answered = summary.providers.find((p) => p.name === name)?.answered ?? 0;
      const dropped = pool.dropped.some((each) => each.member === name) ? ' dropped' : '';
      return `${name} ${pool.answered === 0 ? 0 : Math.round((answered * 100) / pool.answered)}%${dropped}`;
    });
    const calls = pool.answered === pool.calls ? plural(pool.calls, 'call') : `${plural(pool.calls, 'call')}, ${pool.answered} answered`;
    lines.push(
      `Pool ${pool.name}: ${calls} (${shares.join(', ')}) | combined ${formatRate(pool.rate)}/s burst ${pool.burst}${droppedText(summary, pool)}`,
    );
  }
  for (const t of summary.tasks) {
    const parts = [
      callsText(t),
      `retries ${t.retries}`,
      ...(t.repairs > 0 ? [`repairs ${t.repairs}`] : []),
      `429s ${t.rateLimited}`,
      ...rareFailures(t),
      ...(t.calls === 0 ? [] : [`latency p50 ${formatMs(t.latencyMs.p50)} p95 ${formatMs(t.latencyMs.p95)}`]),
      `tokens ${t.tokensUsed}`,
      ...(t.costUsd === undefined ? [] : [withUnknown(t.costUsd, t.unknownCostUsd, ' + ')]),
    ];
    lines.push(`Task ${t.name}: ${parts.join(' | ')}`);
  }
  if (summary.costUsd !== undefined) {
    const each =
      summary.providers.length > 1
        ? ` (${summary.providers.map((p) => `${p.name} ${p.costUsd === undefined ? 'no price' : withUnknown(p.costUsd, p.unknownCostUsd, ' + ')}`).join(', ')})`
        : '';
    lines.push(`Cost: ${formatCost(summary, context)}${each}`);
  }
  if (summary.cacheHits !== undefined) {
    const saved = summary.cacheSavedUsd === undefined ? '' : `, saving ${formatUsd(summary.cacheSavedUsd)}`;
    lines.push(`Cache: ${plural(summary.cacheHits, 'hit')} (answered without a call)${saved}`);
  }
  if (summary.promptCache !== undefined) {
    const { readTokens, writeTokens } = summary.promptCache;
    lines.push(`Prompt cache: ${plural(readTokens, 'input token')} read, ${writeTokens} written`);
  }
  // With no call made there is nothing to take percentiles of (a resumed run with nothing left).
  if (summary.calls > 0) {
    lines.push(`Call latency: ${formatPercentiles(summary.callLatencyMs)}`);
    lines.push(`Limiter wait: ${formatPercentiles(summary.limiterWaitMs)}`);
  }
  const reasons = Object.entries(summary.failureReasons);
  if (reasons.length > 0) lines.push(`Failure reasons: ${reasons.map(([type, count]) => `${type} ${count}`).join(', ')}`);
  if (summary.interrupted) lines.push('Interrupted: intake stopped; the articles in flight were cancelled.');
  return lines;
}

/** The ways a call fails that most runs never see, each shown only when it happened: with 429s, 5xx and timeouts they add up to the calls not answered. */
const RARE_FAILURES: readonly (readonly [keyof CallCounts, string])[] = [
  ['networkErrors', 'Network errors'],
  ['refused', 'Refused (key, account)'],
  ['unfit', 'Unfit answers'],
  ['cancelledCalls', 'Calls cancelled'],
  ['otherErrors', 'Other failures'],
];

/** `12 calls`, or `12 calls, 9 answered` when some were not: what the columns after it add up to. */
function callsText(counts: CallCounts): string {
  return counts.answered === counts.calls ? plural(counts.calls, 'call') : `${plural(counts.calls, 'call')}, ${counts.answered} answered`;
}

/** The rarer failures of a provider's or a task's calls that happened, as its line says them: `refused 10`. */
function rareFailures(counts: CallCounts): string[] {
  const shown = counts.serverErrors + counts.timeouts > 0 ? [`5xx ${counts.serverErrors}`, `timeouts ${counts.timeouts}`] : [];
  return [
    ...shown,
    ...RARE_FAILURES.filter(([field]) => counts[field] > 0).map(([field, label]) => `${label.toLowerCase()} ${counts[field]}`),
  ];
}

/**
 * One figure of money: what the run spent, and — when it is not all the job spent (a resumed run,
 * a budget other processes share) — what was spent in all, which is what the budget counts. What
 * calls whose fate is unknown may have cost (sent, then a timeout or a connection broken
 * mid-request) is said apart, as "up to $X unknown": perhaps billed, perhaps not.
 */
function formatCost(summary: RunSummary, context: SummaryContext): string {
  const thisRun = summary.costUsd!;
  const unknownThisRun = summary.unknownCostUsd ?? 0;
  const inAll = summary.budget?.spentUsd ?? thisRun + (context.earlierCostUsd ?? 0);
  const unknownInAll = summary.budget?.unknownUsd ?? unknownThisRun + (context.earlierUnknownUsd ?? 0);
  const budget = summary.budget === undefined ? '' : ` of a ${formatUsd(summary.budget.maxUsd)} budget`;
  // Compared in whole nano-dollars, as the budget counts: sums of floats differ in the last bits.
  const same = (a: number, b: number) => Math.round(a * 1e9) === Math.round(b * 1e9);
  if (same(inAll, thisRun) && same(unknownInAll, unknownThisRun)) return `${withUnknown(thisRun, unknownThisRun, ', ')}${budget}`;
  const apart = (unknown: number) => (unknown > 0 ? ` (up to ${formatUsd(unknown)} unknown)` : '');
  return `${formatUsd(thisRun)} this run${apart(unknownThisRun)}, ${formatUsd(inAll)} in all${apart(unknownInAll)}${budget}`;
}

/** `$0.012`, or `$0.012, up to $0.0045 unknown` (`between` before "up to") when calls of unknown fate may have cost more. */
function withUnknown(spentUsd: number, unknownUsd: number | undefined, between: string): string {
  const unknown = unknownUsd === undefined || unknownUsd <= 0 ? '' : `${between}up to ${formatUsd(unknownUsd)} unknown`;
  return `${formatUsd(spentUsd)}${unknown}`;
}

/**
 * The least the run could have taken, which bound held it there, and the efficiency — with what
 * the efficiency does not show (429s, retries, dead letters) beside it.
 */
function formatBound(summary: RunSummary): string {
  const costs = [
    plural(summary.rateLimited, '429'),
    plural(summary.retries, 'retry', 'retries'),
    plural(summary.deadLetters, 'dead letter'),
    plural(summary.wastedCalls, 'wasted call'),
  ].join(', ');
  // A run that met 429s, retried or lost articles says so first: its efficiency measures only the
  // time its calls took against the least they could have, and may be perfect while articles failed.
  const trouble = summary.rateLimited + summary.retries + summary.deadLetters + summary.wastedCalls > 0;
  const [before, after] = trouble ? [`${costs} | `, ''] : ['', ` | ${costs}`];
  if (summary.boundBy === null || summary.efficiency === null)
    return `${before}Least possible: none (no call made) | Efficiency: n/a${after}`;
  let why: string;
  const pool = summary.pools?.find((each) => each.rateFloorMs === summary.rateFloorMs && each.rateFloorMs > 0);
  if (summary.boundBy === 'rate' && pool !== undefined) {
    why =
      `the rate of pool ${pool.name}: (${pool.calls} calls − its members' bursts ${pool.burst}) / their ${formatRate(pool.rate)}/s` +
      `${droppedText(summary, pool)} = ${formatMs(pool.rateFloorMs)}, + last call ${formatMs(pool.lastCallLatencyMs)}`;
  } else if (summary.boundBy === 'rate') {
    const limited = summary.providers.filter((p) => p.rate !== Infinity);
    const p = limited.reduce((a, b) => (b.rateFloorMs + b.lastCallLatencyMs > a.rateFloorMs + a.lastCallLatencyMs ? b : a));
    const whose = summary.providers.length > 1 ? ` of ${p.name}` : '';
    // A rate that moved (the adaptive rate) gave the floor at the rates it allowed over time.
    const atConfiguredMs = (Math.max(0, p.calls - p.burst) * 1000) / p.rate;
    const rate =
      p.rateFloorMs === atConfiguredMs
        ? `${formatRate(p.rate)}/s`
        : `the rates allowed (${formatRate(p.rate)}/s → ${formatRate(p.finalRate)}/s)`;
    why = `the rate${whose}: (${p.calls} calls − burst ${p.burst}) / ${rate} = ${formatMs(p.rateFloorMs)}, + last call ${formatMs(p.lastCallLatencyMs)}`;
  } else if (summary.boundBy === 'latency') {
    why = "latency: the longest article's critical path";
  } else {
    why = `the workers: the articles' critical paths / ${plural(summary.workers, 'worker')}`;
  }
  return `${before}Least possible: ${formatMs(summary.leastElapsedMs)}, bound by ${why} | Efficiency: ${(summary.efficiency * 100).toFixed(1)}%${after}`;
}

/** `, 5/s once key-b was dropped at 120ms`: a pool's rate from each drop on, which bounds the run from then. */
function droppedText(summary: RunSummary, pool: NonNullable<RunSummary['pools']>[number]): string {
  let rate = pool.rate;
  return [...pool.dropped]
    .sort((a, b) => a.atMs - b.atMs)
    .map(({ member, atMs }) => {
      rate -= summary.providers.find((p) => p.name === member)?.rate ?? 0;
      return `, ${formatRate(rate)}/s once ${member} was dropped at ${formatMs(atMs)}`;
    })
    .join('');
}

function formatPercentiles(p: Percentiles): string {
  return `p50 ${formatMs(p.p50)}  p95 ${formatMs(p.p95)}  p99 ${formatMs(p.p99)}  max ${formatMs(p.max)}`;
}

function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}
