import type { WriteStream } from 'node:tty';

/**
 * Writes stdout lines in batches (one write per ~50 ms or 64 KiB, not one per call: a 100k-article
 * run prints 200k lines) and keeps a one-line progress display on a stderr terminal out of their way.
 */
export class Terminal {
  readonly #out: NodeJS.WriteStream;
  readonly #err: NodeJS.WriteStream;
  #buffer = '';
  #flushTimer: NodeJS.Timeout | undefined;
  #status = '';
  #closed = false;

  /**
   * @param onClosed called once if stdout's reader goes away (`… | head -1`): later lines are
   *   dropped instead of crashing the process with EPIPE.
   */
  constructor(onClosed?: () => void, out: NodeJS.WriteStream = process.stdout, err: NodeJS.WriteStream = process.stderr) {
    this.#out = out;
    this.#err = err;
    out.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      if (this.#closed) return;
      this.#closed = true;
      onClosed?.();
    });
  }

  /** Whether stdout's reader has gone away. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether a progress line can be drawn (stderr is a terminal). */
  get interactive(): boolean {
    return (this.#err as WriteStream).isTTY === true;
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
    if (this.#closed) {
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
   * Replaces the progress line on stderr ('' clears it). A no-op when stderr is not a terminal.
   * A line wider than the terminal loses whole ` · `-separated fields from the end, never half a figure.
   */
  status(text: string): void {
    if (!this.interactive) return;
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

  /** Flushes everything and waits until stdout has taken it. */
  async close(): Promise<void> {
    this.flush();
    this.status('');
    if (this.#closed) return;
    await new Promise<void>((resolve) => this.#out.write('', () => resolve()));
  }
}

/**
 * Ctrl-C handling for a run: the first aborts `controller` with a CancelledError-like `reason` and
 * says `notice`; a second ends the process at once. Stays installed until the process exits, so a
 * second Ctrl-C works while results are still being flushed.
 */
export function handleInterrupts(terminal: Terminal, controller: AbortController, notice: string, reason: () => unknown): void {
  let interrupts = 0;
  process.on('SIGINT', () => {
    interrupts++;
    if (interrupts > 1) quitNow();
    terminal.notice(`${notice} (Ctrl-C again to quit at once)`);
    controller.abort(reason());
  });
}

/**
 * Ends the process at once, as the default Ctrl-C would. `process.exit()` is not enough: it waits
 * for libuv's worker threads, and one blocked writing to a full pipe would hold it forever — which
 * is exactly when a user presses Ctrl-C twice. Re-raising SIGINT without a handler ends the process
 * by the signal (a shell reports 130).
 */
export function quitNow(): void {
  process.removeAllListeners('SIGINT');
  process.kill(process.pid, 'SIGINT');
  // Only reached if something still handles SIGINT: Node's internal exit, which skips the
  // 'exit' handlers that process.exit() runs.
  (process as unknown as { reallyExit(code: number): never }).reallyExit(130);
}
