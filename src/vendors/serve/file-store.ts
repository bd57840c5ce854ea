/**
 * The files the batch routes keep — OpenAI's uploaded batch inputs and the output and error files
 * a batch writes, Anthropic's results — on disk, in a temporary folder of the server's own (made on
 * first use, removed by `close`), never whole in memory: a 50,000-row batch is read and written a
 * line at a time. Each file belongs to the API key that made it: another key is told it is not there.
 */

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** One kept file, as OpenAI's file object describes it. */
export interface StoredFile {
  readonly id: string;
  readonly key: string;
  readonly bytes: number;
  /** Unix seconds. */
  readonly createdSeconds: number;
  readonly filename: string;
  /** `batch` for an upload; `batch_output` for what a batch wrote; `results` for Anthropic's. */
  readonly purpose: string;
  readonly path: string;
}

/** A file written a line at a time (see {@link FileStore.open}). */
export interface LineWriter {
  write(line: string): Promise<void>;
  close(): Promise<StoredFile | undefined>;
}

/** Characters of lines a writer may have waiting for the disk before it waits too. */
const CHUNK_CHARS = 65_536;

/** Letters and digits, as the vendors' ids are made of. */
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A vendor-looking id: `prefix` and `length` random letters and digits. */
export function randomId(prefix: string, length: number): string {
  const bytes = randomBytes(length);
  let id = prefix;
  for (const byte of bytes) id += ID_ALPHABET[byte % ID_ALPHABET.length];
  return id;
}

export class FileStore {
  #dir: Promise<string> | undefined;
  readonly #files = new Map<string, StoredFile>();
  #closed = false;

  /** Writes `content` (bytes, or lines made one at a time) as a new file of `key`'s. */
  async write(
    key: string,
    describe: { readonly filename: string; readonly purpose: string; readonly id?: string },
    content: Uint8Array | AsyncIterable<string>,
  ): Promise<StoredFile> {
    const id = describe.id ?? randomId('file-', 22);
    const path = join(await this.#folder(), id);
    await pipeline(
      content instanceof Uint8Array
        ? (async function* () {
            yield content;
          })()
        : content,
      createWriteStream(path),
    );
    const file: StoredFile = {
      id,
      key,
      bytes: (await stat(path)).size,
      createdSeconds: Math.floor(Date.now() / 1000),
      filename: describe.filename,
      purpose: describe.purpose,
      path,
    };
    if (this.#closed) {
      await unlink(path).catch(() => undefined);
    } else {
      this.#files.set(id, file);
    }
    return file;
  }

  /**
   * A file of `key`'s written a line at a time, made on its first line: `close` resolves with it,
   * or undefined when no line came. Each `write` waits while the disk is behind.
   */
  open(key: string, describe: { readonly filename: string; readonly purpose: string }): LineWriter {
    let pending: string[] = [];
    let pendingChars = 0;
    let wake: (() => void) | undefined;
    const taken: (() => void)[] = [];
    let done = false;
    let written: Promise<StoredFile> | undefined;
    // The file stream pulls when it has room: the lines waiting go as one chunk (a write a line
    // would cost a trip to the disk's thread each), and a writer waits once a chunk's worth is waiting.
    async function* drain(): AsyncGenerator<string> {
      for (;;) {
        if (pending.length > 0) {
          const chunk = pending.join('');
          pending = [];
          pendingChars = 0;
          for (const resolve of taken.splice(0)) resolve();
          yield chunk;
        } else if (done) {
          return;
        } else {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      }
    }
    const nudge = () => {
      wake?.();
      wake = undefined;
    };
    return {
      write: (line) => {
        written ??= this.write(key, describe, drain());
        pending.push(line);
        pendingChars += line.length;
        nudge();
        if (pendingChars < CHUNK_CHARS) return Promise.resolve();
        return new Promise<void>((resolve) => taken.push(resolve));
      },
      close: async () => {
        done = true;
        nudge();
        return written;
      },
    };
  }

  /** `key`'s file `id`, or undefined (also for another key's). */
  find(key: string, id: string): StoredFile | undefined {
    const file = this.#files.get(id);
    return file?.key === key ? file : undefined;
  }

  /** Removes `key`'s file `id`; false when it has none by that id. */
  async delete(key: string, id: string): Promise<boolean> {
    const file = this.find(key, id);
    if (file === undefined) return false;
    this.#files.delete(id);
    await unlink(file.path).catch(() => undefined);
    return true;
  }

  /** The file's bytes, streamed. */
  read(file: StoredFile): Readable {
    return createReadStream(file.path);
  }

  /** The file's lines, one at a time (a last line without its newline included). */
  lines(file: StoredFile): AsyncIterable<string> {
    return createInterface({ input: createReadStream(file.path), crlfDelay: Infinity });
  }

  /** Removes every file, and the folder. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#files.clear();
    if (this.#dir !== undefined) await rm(await this.#dir, { recursive: true, force: true });
  }

  #folder(): Promise<string> {
    this.#dir ??= mkdtemp(join(tmpdir(), 'news-processor-serve-'));
    return this.#dir;
  }
}
