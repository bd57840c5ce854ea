import { formatDuration } from '../src/mechanisms.ts';
import { plural } from './format.ts';
import type { Terminal } from './terminal.ts';

/** The progress line of a run on a terminal, redrawn four times a second once the run has gone a second. */
export class Progress {
  #finished = 0;
  #failed = 0;
  #calls = 0;
  readonly #startedMs = performance.now();
  readonly #timer: NodeJS.Timeout;

  constructor(terminal: Terminal, total: number | undefined) {
    this.#timer = setInterval(() => {
      const elapsedMs = performance.now() - this.#startedMs;
      if (elapsedMs >= 1000) terminal.status(progressLine(elapsedMs, this.#finished, total, this.#calls, this.#failed));
    }, 250);
  }

  attempt(event: { readonly called: boolean }): void {
    if (event.called) this.#calls++;
  }

  result(result: { readonly status: string }): void {
    this.#finished++;
    if (result.status === 'failed') this.#failed++;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** `elapsed 1m02s · 120/400 articles 30% · 240 calls · 19.8 calls/s · 0 failed · eta 15m12s` */
function progressLine(elapsedMs: number, finished: number, total: number | undefined, calls: number, failed: number): string {
  const seconds = (ms: number) => formatDuration(Math.round(ms / 1000) * 1000);
  const fields = [`elapsed ${seconds(elapsedMs)}`];
  if (total === undefined || total === 0) fields.push(plural(finished, 'article'));
  else fields.push(`${finished}/${plural(total, 'article')} ${Math.floor((finished * 100) / total)}%`);
  fields.push(plural(calls, 'call'), `${((calls * 1000) / elapsedMs).toFixed(1)} calls/s`, `${failed} failed`);
  if (total !== undefined && finished > 0 && finished < total) fields.push(`eta ${seconds(((total - finished) * elapsedMs) / finished)}`);
  return fields.join(' · ');
}
