import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

/**
 * Appends one JSON value per line to a file, waiting for the disk when it falls behind, so a fast
 * run never buffers its results in memory. Open it before the run to learn early that the path is
 * not writable.
 */
export class JsonlWriter {
  readonly path: string;
  readonly #stream: WriteStream;
  #lines = 0;

  private constructor(path: string, stream: WriteStream) {
    this.path = path;
    this.#stream = stream;
  }

  /** Creates (or truncates) `path`; rejects with the file system's error if it cannot. */
  static async open(path: string): Promise<JsonlWriter> {
    const stream = createWriteStream(path, { flags: 'w' });
    await once(stream, 'open');
    return new JsonlWriter(path, stream);
  }

  /** Lines written so far. */
  get lines(): number {
    return this.#lines;
  }

  async write(value: unknown): Promise<void> {
    this.#lines++;
    if (!this.#stream.write(`${JSON.stringify(value)}\n`)) await once(this.#stream, 'drain');
  }

  /** Flushes and closes the file. */
  async close(): Promise<void> {
    this.#stream.end();
    await once(this.#stream, 'finish');
  }
}
