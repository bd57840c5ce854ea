/** The longest line a JSON Lines file may have: past it, the line is an error, not a memory spike. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** One line of a stream: its text, its 1-based number, and whether a newline ended it. */
export interface Line {
  readonly text: string;
  readonly number: number;
  /** False for a last line the stream ended in the middle of (a writer killed mid-line). */
  readonly complete: boolean;
}

/** Why a line could not be read: too long, or not UTF-8. */
export class LineError extends Error {
  override readonly name = 'LineError';

  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
  }
}

/**
 * The lines of a byte stream, split on `\n` (a `\r` before it is dropped, as is a byte-order mark
 * at the start), each decoded as strict UTF-8. A line longer than `maxLineBytes` throws a
 * {@link LineError} as soon as it is seen to be, holding at most that many bytes of it; invalid
 * UTF-8 throws one too, rather than turning into replacement characters unsaid.
 */
export async function* readLines(chunks: AsyncIterable<Uint8Array>, maxLineBytes = MAX_LINE_BYTES): AsyncGenerator<Line, void, undefined> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let parts: Uint8Array[] = [];
  let partBytes = 0;
  let number = 0;
  const decode = (bytes: Uint8Array): string => {
    try {
      return decoder.decode(bytes);
    } catch {
      throw new LineError(number, 'invalid UTF-8');
    }
  };
  const take = (tail: Uint8Array): Uint8Array => {
    if (parts.length === 0) return tail;
    const joined = new Uint8Array(partBytes + tail.length);
    let offset = 0;
    for (const part of parts) {
      joined.set(part, offset);
      offset += part.length;
    }
    joined.set(tail, offset);
    parts = [];
    partBytes = 0;
    return joined;
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      number++;
      if (partBytes + end - start > maxLineBytes) throw new LineError(number, `line too long (over ${maxLineBytes} bytes)`);
      let bytes = take(chunk.subarray(start, end));
      if (bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN) bytes = bytes.subarray(0, -1);
      yield { text: decode(bytes), number, complete: true };
      start = end + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (partBytes + rest.length > maxLineBytes) throw new LineError(number + 1, `line too long (over ${maxLineBytes} bytes)`);
      // A copy: the stream may reuse its buffer for the next chunk.
      parts.push(Uint8Array.prototype.slice.call(rest));
      partBytes += rest.length;
    }
  }
  if (partBytes > 0) {
    number++;
    yield { text: decode(take(new Uint8Array(0))), number, complete: false };
  }
}
