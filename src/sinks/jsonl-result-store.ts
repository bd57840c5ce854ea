import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { ArticleResult } from '../pipeline/result.ts';
import { JsonlWriter, OutputError } from './jsonl-writer.ts';
import type { KeepSucceededOptions, KeptResults, ResultStore, RunStateSlot } from './result-store.ts';
import { keepSucceeded } from './results-file.ts';

/**
 * A results file of JSON Lines, one result a line as each article ends (`--output`), taken up
 * again crash-safely (`keepSucceeded`), with a run's state in a file beside it
 * (`<path>.batches.json`). Made with {@link JsonlResultStore.at} (a file: `takeUp` first if a run
 * is resumed, then `open`) or {@link JsonlResultStore.to} (a stream such as standard output: written
 * only).
 */
export class JsonlResultStore implements ResultStore {
  readonly name: string;
  readonly state: RunStateSlot;
  readonly #path: string | undefined;
  #writer: JsonlWriter | undefined;

  private constructor(name: string, path: string | undefined, writer: JsonlWriter | undefined) {
    this.name = name;
    this.#path = path;
    this.#writer = writer;
    this.state = path === undefined ? NO_STATE : new JsonStateFile(`${path}.batches.json`);
  }

  /** The results file at `path`; nothing is read or opened until {@link takeUp} or {@link open}. */
  static at(path: string): JsonlResultStore {
    return new JsonlResultStore(path, path, undefined);
  }

  /** Results written to a stream that stays open after {@link close} (standard output), named `name` in errors; nothing to take up. */
  static to(stream: Writable, name: string): JsonlResultStore {
    return new JsonlResultStore(name, undefined, JsonlWriter.to(stream, name));
  }

  /** Lines written so far. */
  get written(): number {
    return this.#writer?.lines ?? 0;
  }

  /**
   * Opens the file for writing: created, or replaced — with `append`, added to (a resumed run,
   * after {@link takeUp}). Open it before the run to learn early that the path is not writable:
   * rejects with an {@link OutputError} if it cannot.
   */
  async open(options: { readonly append?: boolean | undefined } = {}): Promise<void> {
    if (this.#writer !== undefined) throw new Error(`${this.name} is open already`);
    this.#writer = await JsonlWriter.open(this.#path!, options);
  }

  /** The file rewritten to hold each article once (`keepSucceeded`); before {@link open}, which appends to what it left. */
  async takeUp(options: KeepSucceededOptions = {}): Promise<KeptResults> {
    if (this.#path === undefined) throw new TypeError(`Expected a results file to take up, got ${this.name}`);
    if (this.#writer !== undefined) throw new Error(`${this.name} is open: take it up before opening it`);
    return keepSucceeded(this.#path, options);
  }

  // Not async: a result a line, the writer's own promise is the one returned.
  write(result: ArticleResult): Promise<void> {
    return this.#writer === undefined ? Promise.reject(new Error(`${this.name} is not open`)) : this.#writer.write(result);
  }

  async compact(): Promise<void> {
    if (this.#path === undefined) return;
    try {
      await keepSucceeded(this.#path, { keepUnfinished: true });
    } catch (error) {
      throw error instanceof OutputError ? error : new OutputError(this.#path, error as Error);
    }
  }

  async close(): Promise<void> {
    await this.#writer?.close();
  }
}

/** A value kept in a JSON file, written whole to a file beside it and renamed over it. */
class JsonStateFile implements RunStateSlot {
  readonly name: string;

  constructor(path: string) {
    this.name = path;
  }

  async load(): Promise<unknown> {
    try {
      return JSON.parse(await readFile(this.name, 'utf8')) as unknown;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async save(state: object): Promise<void> {
    await writeFile(`${this.name}.tmp`, `${JSON.stringify(state)}\n`);
    await rename(`${this.name}.tmp`, this.name);
  }

  async clear(): Promise<void> {
    await rm(this.name, { force: true });
  }
}

/** A stream keeps no state: a run that needs one is refused before it starts. */
const NO_STATE: RunStateSlot = Object.freeze({
  name: 'none',
  load: async () => undefined,
  save: async () => {
    throw new TypeError('Expected a results file to keep a run state beside');
  },
  clear: async () => {},
});
