import type { WriteStream } from 'node:tty';
import { onStdoutFailure, stdoutState, watchStdout } from './stdout.ts';

export interface TerminalOptions {
  /** Where the human lines go. Default standard output (standard error when the results take stdout). */
  readonly out?: NodeJS.WriteStream;
  /**
   * Called once if standard output fails: its reader went away (`… | head -1`) or it cannot be
   * written (`> /dev/full`). Later lines to it are dropped instead of crashing.
   */
  readonly onClosed?: () => void;
  /** Whether lines will be printed while the run goes (not --quiet or --json): a progress line must then not interleave with them. */
  readonly printsLines: boolean;
}

/**
 * Writes the human lines in batches (one write per ~50 ms or 64 KiB, not one per call: a
 * 100k-article run prints 200k lines) and keeps a one-line progress display on a stderr terminal
 * out of their way.
 *
 * The progress line is drawn only where it cannot garble anything: stderr is a terminal, and the
 * lines printed meanwhile go to a terminal too (where they are written around it) or to stderr
 * itself, or there are none. Lines piped to `tee` or `less` would land on the same screen
 * without the progress line being cleared first, so then it is not drawn.
 */
export class Terminal {
  readonly #out: NodeJS.WriteStream;
  readonly #err: NodeJS.WriteStream = process.stderr;
  readonly #progress: boolean;
  #buffer = '';
  #flushTimer: NodeJS.Timeout | undefined;
  #status = '';

  constructor(options: TerminalOptions) {
    this.#out = options.out ?? process.stdout;
    const tty = (stream: NodeJS.WriteStream) => (stream as WriteStream).isTTY === true;
    this.#progress = tty(this.#err) && (!options.printsLines || this.#out === this.#err || tty(this.#out));
    watchStdout();
    onStdoutFailure(() => options.onClosed?.());
  }

  /** Whether standard output failed: its reader went away, or it cannot be written. */
  get closed(): boolean {
    return stdoutState() !== undefined;
  }

  /** Whether a progress line is drawn. */
  get interactive(): boolean {
    return this.#progress;
  }

  line(text: string): void {
    this.#buffer += `${text}\n`;
    if (this.#buffer.length >= 65_536) this.flush();
    else this.#flushTimer ??= setTimeout(() => this.flush(), 50);
  }

  flush(): void {
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#buffer === '') return;
    if (this.closed && this.#out === process.stdout) {
      this.#buffer = '';
      return;
    }
    const status = this.#status;
    if (status !== '') this.status('');
    this.#out.write(this.#buffer);
    this.#buffer = '';
    if (status !== '') this.status(status);
  }

  /**
   * Replaces the progress line on stderr ('' clears it); a no-op where it is not drawn. A line
   * wider than the terminal loses whole ` · `-separated fields from the end, never half a figure.
   */
  status(text: string): void {
    if (!this.#progress) return;
    const columns = (this.#err as WriteStream).columns;
    const width = columns !== undefined && columns > 0 ? columns : 80;
    const fields = text.split(' · ');
    while (fields.length > 1 && fields.join(' · ').length > width - 1) fields.pop();
    const shown = fields.join(' · ').slice(0, width - 1);
    this.#err.write(`\r\x1b[2K${shown}`);
    this.#status = shown;
  }

  /** Writes a stderr line (an error or notice) without tearing the progress line. */
  notice(text: string): void {
    this.flush();
    const status = this.#status;
    if (status !== '') this.status('');
    this.#err.write(`${text}\n`);
    if (status !== '') this.status(status);
  }

  /** Flushes everything and waits until the human output's stream has taken it. */
  async close(): Promise<void> {
    this.flush();
    this.status('');
    if (this.closed && this.#out === process.stdout) return;
    await new Promise<void>((resolve) => this.#out.write('', () => resolve()));
  }
}

/** What stops a run from outside, and the exit code it leaves (128 + the signal's number). */
export const STOP_SIGNALS = Object.freeze({ SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const);
export type StopSignal = keyof typeof STOP_SIGNALS;

/**
 * Signal handling for a run: the first SIGINT (Ctrl-C), SIGTERM (docker stop, a CI cancel,
 * systemd) or SIGHUP (the terminal went away) aborts `controller` with `reason(signal)` and says
 * `notice`; a second one says it is quitting and ends the process at once. Stays installed until
 * the process exits, so a second Ctrl-C works while results are still being flushed. Returns the
 * first signal received, when asked.
 */
export function handleSignals(
  terminal: Terminal,
  controller: AbortController,
  notice: string,
  reason: (signal: StopSignal) => unknown,
): () => StopSignal | undefined {
  let first: StopSignal | undefined;
  for (const signal of Object.keys(STOP_SIGNALS) as StopSignal[]) {
    process.on(signal, () => {
      if (first !== undefined) {
        terminal.notice(`${signal} again: quitting now, without waiting for the calls in flight`);
        quitNow(signal);
      }
      first = signal;
      // Ctrl-C is how a person sends SIGINT; SIGTERM and SIGHUP come from a program, which sends the same again.
      const again = signal === 'SIGINT' ? 'Ctrl-C' : signal;
      terminal.notice(`${signal === 'SIGINT' ? 'interrupted' : signal}: ${notice} (${again} again to quit at once)`);
      controller.abort(reason(signal));
    });
  }
  return () => first;
}

/**
 * Ends the process at once by `signal`, as its default action would. `process.exit()` is not
 * enough: it waits for libuv's worker threads, and one blocked writing to a full pipe would hold
 * it forever — which is exactly when a user presses Ctrl-C twice. Re-raising the signal without a
 * handler ends the process by it (a shell reports 128 + its number).
 */
export function quitNow(signal: StopSignal): never {
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  // Only reached if something still handles the signal: Node's internal exit, which skips the
  // 'exit' handlers that process.exit() runs.
  return (process as unknown as { reallyExit(code: number): never }).reallyExit(STOP_SIGNALS[signal]);
}
