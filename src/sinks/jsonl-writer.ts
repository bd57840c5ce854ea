import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

/** The results file could not be written (full disk, closed pipe, no permission). */
export class OutputError extends Error {
  override readonly name = 'OutputError';

  constructor(
    readonly path: string,
    cause: Error,
  ) {
    // The system message ends with ", open '<path>'": the path is already said.
    super(`${path}: cannot write file (${cause.message.replace(/, \w+ '.*'$/, '')})`, { cause });
  }
}

export const isOutputError = (error: unknown): error is OutputError => error instanceof OutputError;

/**
 * Appends one JSON value per line to a file, waiting for the disk when it falls behind, so a fast
 * run never buffers its results in memory. Open it before the run to learn early that the path is
 * not writable. Once the file fails, every later call rejects with the same {@link OutputError}.
 */
export class JsonlWriter {
  readonly path: string;
  readonly #stream: WriteStream;
  #lines = 0;
  #error: OutputError | undefined;

  private constructor(path: string, stream: WriteStream) {
    this.path = path;
    this.#stream = stream;
    stream.on('error', (error) => {
      this.#error ??= new OutputError(path, error);
    });
  }

  /** Creates (or truncates) `path`; rejects with an {@link OutputError} if it cannot. */
  static async open(path: string): Promise<JsonlWriter> {
    const stream = createWriteStream(path, { flags: 'w' });
    try {
      await once(stream, 'open');
    } catch (error) {
      throw new OutputError(path, error as Error);
    }
    return new JsonlWriter(path, stream);
  }

  /** Lines written so far. */
  get lines(): number {
    return this.#lines;
  }

  async write(value: unknown): Promise<void> {
    if (this.#error !== undefined) throw this.#error;
    this.#lines++;
    if (this.#stream.write(`${JSON.stringify(value)}\n`)) return;
    try {
      await once(this.#stream, 'drain');
    } catch {
      // `once` rejects on the stream's 'error', which the constructor's listener has recorded.
    }
    if (this.#error !== undefined) throw this.#error;
  }

  /** Flushes and closes the file; rejects if any write failed. */
  async close(): Promise<void> {
    if (this.#error === undefined) {
      this.#stream.end();
      try {
        await once(this.#stream, 'finish');
      } catch {
        // Recorded by the 'error' listener.
      }
    }
    if (this.#error !== undefined) {
      this.#stream.destroy();
      throw this.#error;
    }
  }
}
