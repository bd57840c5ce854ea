/**
 * One batch's life, whichever vendor's API it came through: its rows answered in one pass as fast
 * as the simulator goes, their answers on disk, and a timeline on the server's clock that says
 * what a client may see when — the rows finish evenly spread over `durationMs` from the end of
 * validation, rows not finished `windowMs` after creation expire, a cancel stops the rows not yet
 * finished. Every reading is a function of the clock, so a test on a `ManualClock` sees each row
 * finish at its instant; the vendors' routes read it and word it.
 */

import { setImmediate as turn } from 'node:timers/promises';
import type { Clock } from '../../clock.ts';
import type { FileStore, StoredFile } from './file-store.ts';

/** A row of a batch: its custom id and the body of the request it carries. */
export interface BatchRow {
  readonly customId: string;
  readonly body: unknown;
}

/** What the live route would have answered a row: the status, the request id and the body (an answer or an error). */
export interface RowAnswer {
  readonly statusCode: number;
  readonly requestId: string;
  readonly body: unknown;
}

/** A row at the end: its answer when it finished in time, none when it was cancelled or expired first. */
export interface EndedRow {
  readonly customId: string;
  readonly answer: RowAnswer | undefined;
}

/** How a batch that ran ended: every row finished, cancelled, or past its window. */
export type BatchEnd = 'completed' | 'cancelled' | 'expired';

/** Where a batch is: its input being checked, refused, rows being answered, cancelling, its files being written, over. */
export type BatchPhase = 'validating' | 'failed' | 'in_progress' | 'cancelling' | 'finalizing' | 'ended';

/** Writes the vendor's files for the rows at the end: called once, with every row in input order. */
export type WriteResults = (rows: AsyncIterable<EndedRow>, end: BatchEnd) => Promise<void>;

/** How a batch runs: the clock, how long its rows take, when it expires. */
export interface BatchTiming {
  readonly clock: Clock;
  readonly durationMs: number;
  readonly windowMs: number;
}

/** Rows answered between two turns of the event loop: a big batch never holds up the live routes. */
const ROWS_PER_TURN = 200;
/** Float slack when a row's due instant is compared with a reading of the clock. */
const DUE_EPSILON_MS = 1e-6;

/** The answers of a pass are the server's own, kept under no API key. */
const INTERNAL_KEY = '';

export class BatchJob {
  readonly id: string;
  readonly key: string;
  /** Unix seconds. */
  readonly createdSeconds: number;
  readonly createdMs: number;
  readonly expiresAtMs: number;
  readonly #durationMs: number;
  readonly #clock: Clock;
  /** Input tokens of the rows: what the batch holds of its key's queue until it ends. */
  inputTokens = 0;
  #total = 0;
  #startMs: number | undefined;
  /** A cancel that came while the input was being checked: no row runs. */
  #cancelledFirst = false;
  #failedMs: number | undefined;
  #cancelMs: number | undefined;
  /** Rows answered with an error among the first i, at i. */
  #erroredBefore = new Uint32Array(1);
  #pass: Promise<StoredFile> | undefined;
  #finalizing: Promise<void> | undefined;
  #ending: BatchEnd | undefined;
  #end: BatchEnd | undefined;
  #endedMs: number | undefined;
  #finalizingMs: number | undefined;

  constructor(id: string, key: string, timing: BatchTiming) {
    this.id = id;
    this.key = key;
    this.#clock = timing.clock;
    this.#durationMs = timing.durationMs;
    this.createdMs = timing.clock.now();
    this.createdSeconds = Math.floor(Date.now() / 1000);
    this.expiresAtMs = this.createdMs + timing.windowMs;
  }

  /** Rows in the batch: 0 until its input has been checked. */
  get total(): number {
    return this.#total;
  }

  /** Where the batch is now (see {@link refresh} for the step from rows due to files written). */
  get phase(): BatchPhase {
    if (this.#failedMs !== undefined) return 'failed';
    if (this.#end !== undefined) return 'ended';
    if (this.#cancelMs !== undefined) return 'cancelling';
    if (this.#startMs === undefined) return 'validating';
    return this.#finalizing === undefined ? 'in_progress' : 'finalizing';
  }

  /** How it ended, once it has. */
  get end(): BatchEnd | undefined {
    return this.#end;
  }

  /** How it is ending, from the moment its files are being written. */
  get ending(): BatchEnd | undefined {
    return this.#ending;
  }

  /** Whether it still holds its input tokens in its key's queue. */
  get enqueued(): boolean {
    return this.#failedMs === undefined && this.#end === undefined;
  }

  /** Instants (on the clock) of each step taken: the vendors show them as timestamps. */
  get times(): {
    readonly startMs?: number | undefined;
    readonly failedMs?: number | undefined;
    readonly cancelMs?: number | undefined;
    readonly finalizingMs?: number | undefined;
    readonly endedMs?: number | undefined;
  } {
    return {
      startMs: this.#startMs,
      failedMs: this.#failedMs,
      cancelMs: this.#cancelMs,
      finalizingMs: this.#finalizingMs,
      endedMs: this.#endedMs,
    };
  }

  /** The rows finished by now: those due by now, or by the cut (all of them, once the batch completes). */
  finished(nowMs = this.#clock.now()): { readonly rows: number; readonly errored: number } {
    if (this.#startMs === undefined) return { rows: 0, errored: 0 };
    const rows = this.#dueBy(Math.min(nowMs, this.#cutMs()));
    return { rows, errored: this.#erroredBefore[rows]! };
  }

  /** Validation refused the input: nothing runs, nothing is enqueued. */
  fail(): void {
    this.#failedMs = this.#clock.now();
  }

  /**
   * Answers the `total` `rows`, each with `answer`, into a file of the server's. The timeline
   * begins `from` the creation (Anthropic's: a batch is in progress at once; a reading past its end
   * waits for the answers), or once they are all answered (OpenAI's: the batch `validating` till
   * then, and a cancel meanwhile stops the answering: no row runs), so that what a reading of the
   * clock shows never waits on the simulator.
   */
  start(
    total: number,
    rows: AsyncIterable<BatchRow> | Iterable<BatchRow>,
    answer: (body: unknown) => Promise<RowAnswer>,
    files: FileStore,
    from: 'creation' | 'answers',
  ): void {
    this.#total = total;
    this.#erroredBefore = new Uint32Array(total + 1);
    if (from === 'creation') this.#startMs = this.createdMs;
    const job = this;
    async function* lines(): AsyncGenerator<string> {
      let index = 0;
      let chunk = '';
      for await (const row of rows) {
        const answered = job.#cancelMs === undefined || job.#startMs !== undefined ? await answer(row.body) : undefined;
        const errored = answered !== undefined && (answered.statusCode < 200 || answered.statusCode >= 300);
        job.#erroredBefore[index + 1] = job.#erroredBefore[index]! + (errored ? 1 : 0);
        index++;
        chunk += `${JSON.stringify(answered === undefined ? { custom_id: row.customId } : { custom_id: row.customId, ...answered })}\n`;
        // A turn of the event loop now and then keeps the live routes answered; a chunk a turn keeps the disk's trips few.
        if (index % ROWS_PER_TURN === 0) {
          yield chunk;
          chunk = '';
          await turn();
        }
      }
      if (chunk !== '') yield chunk;
    }
    this.#pass = files.write(INTERNAL_KEY, { filename: `${this.id}-answers.jsonl`, purpose: 'answers' }, lines());
    this.#pass.then(
      () => {
        if (this.#startMs !== undefined) return;
        this.#cancelledFirst = this.#cancelMs !== undefined;
        this.#startMs = this.#clock.now();
      },
      // A pass that fails is the server's error: it surfaces where the pass is awaited, at the end.
      () => undefined,
    );
  }

  /** Stops the rows not finished by now; false when the batch is past that (failed, ended, or its files being written). */
  cancel(): boolean {
    if (this.#failedMs !== undefined || this.#finalizing !== undefined) return false;
    this.#cancelMs ??= this.#clock.now();
    return true;
  }

  /**
   * Once the rows are all due (or the window is over, or a cancel asked), writes the vendor's files
   * with `write` — once — and ends the batch. Resolves when they are written; the promise is the
   * same for every caller while they are.
   */
  refresh(files: FileStore, write: WriteResults): Promise<void> {
    if (this.#finalizing !== undefined) return this.#finalizing;
    if (this.#startMs === undefined || this.#failedMs !== undefined) return Promise.resolve();
    const nowMs = this.#clock.now();
    if (this.#cancelMs === undefined && nowMs < this.#cutMs()) return Promise.resolve();
    this.#finalizingMs = nowMs;
    this.#ending = this.#cancelMs !== undefined ? 'cancelled' : this.#dueBy(this.expiresAtMs) < this.total ? 'expired' : 'completed';
    this.#finalizing = this.#finalize(files, write, this.#ending);
    return this.#finalizing;
  }

  async #finalize(files: FileStore, write: WriteResults, end: BatchEnd): Promise<void> {
    const answers = await this.#pass!;
    const { rows: finished } = this.finished(this.#finalizingMs);
    async function* ended(): AsyncGenerator<EndedRow> {
      let index = 0;
      for await (const line of files.lines(answers)) {
        if (line === '') continue;
        const { custom_id: customId, ...answer } = JSON.parse(line) as { custom_id: string } & Partial<RowAnswer>;
        yield { customId, answer: index < finished && answer.statusCode !== undefined ? (answer as RowAnswer) : undefined };
        index++;
      }
    }
    try {
      await write(ended(), end);
    } finally {
      await files.delete(INTERNAL_KEY, answers.id);
    }
    this.#end = end;
    this.#endedMs = this.#clock.now();
  }

  /** When the rows stop: all due, the window over, or the cancel. */
  #cutMs(): number {
    if (this.#cancelledFirst) return -Infinity;
    return Math.min(this.#startMs! + this.#durationMs, this.expiresAtMs, this.#cancelMs ?? Infinity);
  }

  /** Rows due by `atMs`. */
  #dueBy(atMs: number): number {
    if (this.#startMs === undefined) return 0;
    if (this.#durationMs === 0) return atMs >= this.#startMs ? this.total : 0;
    const share = (atMs - this.#startMs + DUE_EPSILON_MS) / this.#durationMs;
    return Math.max(0, Math.min(this.total, Math.floor(share * this.total)));
  }
}
