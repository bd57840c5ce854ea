import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';

/** The results file could not be written (full disk, closed pipe, no permission). */
export class OutputError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'OutputError';

  constructor(
    /** The output file, as given (`-` for standard output). */
    readonly path: string,
    cause: Error,
    /** What failed: writing the results, or reading them back to resume. */
    action: 'write' | 'read' = 'write',
  ) {
    // The system message ends with ", open '<path>'": the path is already said.
    super(`${path}: cannot ${action} file (${cause.message.replace(/, \w+ '.*'$/, '')})`, { cause });
  }
}

/** What `new JsonlWriter()` takes besides where to write: whether to add to an existing file. */
export interface JsonlWriterOptions {
  /** Add to the end of an existing file instead of replacing it. @default false */
  readonly append?: boolean | undefined;
}

/**
 * Writes one JSON value per line, waiting for the disk (or the pipe) when it falls behind, so a
 * fast run never buffers its results in memory. However many writes wait, they wait on one
 * shared drain: a write costs no listener of its own. Open it before the run to learn early that
 * the path is not writable. Once the destination fails, every later call rejects with the same
 * {@link OutputError}.
 */
export class JsonlWriter {
  /** Where the lines go, as the user named it (a path, or `-` for standard output). */
  readonly path: string;
  readonly #stream: Writable;
  readonly #ownsStream: boolean;
  #lines = 0;
  #error: OutputError | undefined;
  /** Settles when the stream has drained; shared by every write that found it full. */
  #drained: Promise<void> | undefined;

  private constructor(path: string, stream: Writable, ownsStream: boolean) {
    this.path = path;
    this.#stream = stream;
    this.#ownsStream = ownsStream;
    stream.on('error', (error) => {
      this.#error ??= new OutputError(path, error);
    });
  }

  /** Creates (or truncates, or with `append` extends) `path`; rejects with an {@link OutputError} if it cannot. */
  static async open(path: string, options: JsonlWriterOptions = {}): Promise<JsonlWriter> {
    const stream = createWriteStream(path, { flags: options.append === true ? 'a' : 'w' });
    try {
      await once(stream, 'open');
    } catch (error) {
      throw new OutputError(path, error as Error);
    }
    return new JsonlWriter(path, stream, true);
  }

  /** Writes to a stream that stays open after {@link close} (standard output), naming it `name` in errors. */
  static to(stream: Writable, name: string): JsonlWriter {
    return new JsonlWriter(name, stream, false);
  }

  /** Lines written so far. */
  get lines(): number {
    return this.#lines;
  }

  /** Writes `value` as one JSON line; resolves once the stream has taken it (so a slow disk slows the caller). */
  async write(value: unknown): Promise<void> {
    if (this.#error !== undefined) throw this.#error;
    this.#lines++;
    if (this.#stream.write(`${JSON.stringify(value)}\n`)) return;
    this.#drained ??= once(this.#stream, 'drain').then(
      () => {
        this.#drained = undefined;
      },
      // `once` rejects on the stream's 'error', which the constructor's listener has recorded.
      () => {},
    );
    await this.#drained;
    if (this.#error !== undefined) throw this.#error;
  }

  /** Flushes and closes the file (a borrowed stream is only flushed); rejects if any write failed. */
  async close(): Promise<void> {
    if (this.#error === undefined) {
      const stream = this.#stream;
      try {
        if (this.#ownsStream) {
          stream.end();
          await once(stream, 'finish');
        } else {
          await new Promise<void>((resolve, reject) => stream.write('', (error) => (error ? reject(error) : resolve())));
        }
      } catch (error) {
        // Usually recorded by the 'error' listener already; a write callback can be told first.
        this.#error ??= new OutputError(this.path, error as Error);
      }
    }
    if (this.#error !== undefined) {
      if (this.#ownsStream) this.#stream.destroy();
      throw this.#error;
    }
  }
}
