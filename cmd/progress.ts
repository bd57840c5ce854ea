import { formatDuration } from '../src/mechanisms.ts';
import type { PoolMemberChange } from '../src/index.ts';
import { plural } from './format.ts';
import type { Terminal } from './terminal.ts';

/** A pool as the progress line shows it: each member's calls and, when it is not taking them, why. */
interface PoolProgress {
  readonly name: string;
  readonly members: readonly { readonly name: string; calls: number; state: 'up' | 'down' | 'dropped' }[];
}

/** The progress line of a run on a terminal, redrawn four times a second once the run has gone a second. */
export class Progress {
  #finished = 0;
  #failed = 0;
  #calls = 0;
  readonly #pools: readonly PoolProgress[];
  readonly #startedMs = performance.now();
  readonly #timer: NodeJS.Timeout;

  /** `pools`: the run's pools, each member shown with its calls and state. */
  constructor(
    terminal: Terminal,
    total: number | undefined,
    pools: readonly { readonly name: string; readonly members: readonly string[] }[] = [],
  ) {
    this.#pools = pools.map((pool) => ({
      name: pool.name,
      members: pool.members.map((name) => ({ name, calls: 0, state: 'up' as const })),
    }));
    this.#timer = setInterval(() => {
      const elapsedMs = performance.now() - this.#startedMs;
      if (elapsedMs >= 1000) terminal.status(progressLine(elapsedMs, this.#finished, total, this.#calls, this.#failed, this.#pools));
    }, 250);
  }

  attempt(event: { readonly called: boolean; readonly provider: string }): void {
    if (!event.called) return;
    this.#calls++;
    // A provider may be a member of several pools: its calls are shown in each.
    for (const pool of this.#pools) for (const member of pool.members) if (member.name === event.provider) member.calls++;
  }

  /** A member went down, came back, or was dropped. */
  poolChange(change: PoolMemberChange): void {
    const member = this.#pools.find((pool) => pool.name === change.pool)?.members.find((each) => each.name === change.member);
    if (member !== undefined && member.state !== 'dropped') member.state = change.change === 'back' ? 'up' : change.change;
  }

  result(result: { readonly status: string }): void {
    this.#finished++;
    if (result.status === 'failed') this.#failed++;
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
