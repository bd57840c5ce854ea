import { formatDuration } from '../src/mechanisms.ts';
import type { RunCounts, RunObserver, RunStart } from '../src/index.ts';
import type { BatchProgress } from '../src/batch/index.ts';
import { plural } from './format.ts';
import type { Terminal } from './terminal.ts';

/** A pool as the progress line shows it: each member's calls and, when it is not taking them, why. */
interface PoolProgress {
  readonly name: string;
  readonly members: readonly { readonly name: string; readonly calls: number; readonly state: 'up' | 'down' | 'dropped' }[];
}

/**
 * The progress line of a run on a terminal, redrawn four times a second once the run has gone a
 * second: what the run's tally counts as it stands. Observe the run's events with it.
 */
export class Progress implements RunObserver {
  #tally: RunCounts | undefined;
  readonly #startedMs = performance.now();
  readonly #timer: NodeJS.Timeout;

  constructor(terminal: Terminal, total: number | undefined) {
    this.#timer = setInterval(() => {
      const elapsedMs = performance.now() - this.#startedMs;
      const tally = this.#tally;
      if (elapsedMs < 1000 || tally === undefined) return;
      const { succeeded, failed, cancelled } = tally.articles;
      const pools = tally.pools.map((pool) => ({
        name: pool.name,
        members: pool.members.map((member) => ({
          name: member.name,
          calls: tally.providers.get(member.name)?.calls ?? 0,
          state: member.state,
        })),
      }));
      terminal.status(progressLine(elapsedMs, succeeded + failed + cancelled, total, tally.calls().calls, failed, pools));
    }, 250);
  }

  runStarted(run: RunStart): void {
    this.#tally = run.counts;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * `elapsed 1m02s · 120/400 articles 30% · 240 calls · 19.8 calls/s · 0 failed · eta 15m12s · gpt[key-a 80 key-b 160 azure-east 0 down]`:
 * the pools last, the first fields a narrow terminal drops.
 */
export function progressLine(
  elapsedMs: number,
  finished: number,
  total: number | undefined,
  calls: number,
  failed: number,
  pools: readonly PoolProgress[] = [],
): string {
  const seconds = (ms: number) => formatDuration(Math.round(ms / 1000) * 1000);
  const fields = [`elapsed ${seconds(elapsedMs)}`];
  if (total === undefined || total === 0) fields.push(plural(finished, 'article'));
  else fields.push(`${finished}/${plural(total, 'article')} ${Math.floor((finished * 100) / total)}%`);
  fields.push(plural(calls, 'call'), `${((calls * 1000) / elapsedMs).toFixed(1)} calls/s`, `${failed} failed`);
  if (total !== undefined && finished > 0 && finished < total) fields.push(`eta ${seconds(((total - finished) * elapsedMs) / finished)}`);
  for (const pool of pools) {
    const members = pool.members.map((member) => `${member.name} ${member.calls}${member.state === 'up' ? '' : ` ${member.state}`}`);
    fields.push(`${pool.name}[${members.join(' ')}]`);
  }
  return fields.join(' · ');
}

/**
 * A batch run's poll in a line: the batches still running at the provider and those that have
 * ended there — their results being read back — each with the vendor's words for how they stand,
 * then their rows: `batches: 1 running (in_progress), 2 ended (completed ×2), 150/300 rows done, 0 failed`.
 */
export function batchProgressLine(progress: readonly BatchProgress[]): string {
  const running = progress.filter((batch) => !batch.ended);
  const ended = progress.filter((batch) => batch.ended);
  const parts = [];
  if (running.length > 0) parts.push(`${running.length} running (${statuses(running)})`);
  if (ended.length > 0) parts.push(`${ended.length} ended (${statuses(ended)}), being read back`);
  const rows = progress.reduce((sum, batch) => sum + batch.total, 0);
  const done = progress.reduce((sum, batch) => sum + batch.completed + batch.failed, 0);
  const failed = progress.reduce((sum, batch) => sum + batch.failed, 0);
  return `batches: ${parts.join(', ')}, ${done}/${plural(rows, 'row')} done, ${failed} failed`;
}

/** The statuses of some batches, each once, with how many have it when more than one: `in_progress ×2, finalizing`. */
function statuses(batches: readonly BatchProgress[]): string {
  const counts = new Map<string, number>();
  for (const batch of batches) counts.set(batch.status, (counts.get(batch.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => (count === 1 ? status : `${status} ×${count}`)).join(', ');
}
