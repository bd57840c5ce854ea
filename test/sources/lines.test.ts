import { describe, expect, it } from 'vitest';
import { LineError, readLines } from '../../src/sources/lines.ts';

async function* chunks(...parts: (string | number[])[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? new TextEncoder().encode(part) : new Uint8Array(part);
}

async function all(source: AsyncIterable<Uint8Array>, maxLineBytes?: number) {
  const lines = [];
  for await (const line of readLines(source, maxLineBytes)) lines.push(line);
  return lines;
}

describe('readLines()', () => {
  it('splits on newlines across chunk boundaries, drops \\r before them, and flags an unfinished last line', async () => {
    expect(await all(chunks('\uFEFFa', 'b\r\nc', 'd\n\né', '\nlast'))).toEqual([
      { text: 'ab', number: 1, complete: true },
      { text: 'cd', number: 2, complete: true },
      { text: '', number: 3, complete: true },
      { text: 'é', number: 4, complete: true },
      { text: 'last', number: 5, complete: false },
    ]);
  });

  it('keeps a multi-byte character split across chunks whole', async () => {
    const bytes = [...new TextEncoder().encode('x€y\n')];
    expect((await all(chunks(bytes.slice(0, 2), bytes.slice(2))))[0]!.text).toBe('x€y');
  });

  it('refuses a line longer than the cap as soon as it is, holding no more of it', async () => {
    const error = await all(chunks('ok\n', 'x'.repeat(6), 'x'.repeat(6), '\n'), 10).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LineError);
    expect(error).toMatchObject({ line: 2, reason: 'line too long (over 10 bytes)' });
    const inOneChunk = await all(chunks(`ok\n${'y'.repeat(11)}\n`), 10).catch((e: unknown) => e);
    expect(inOneChunk).toMatchObject({ line: 2 });
  });

  it('refuses invalid UTF-8, naming the line', async () => {
    await expect(all(chunks('a\n', [0x62, 0xff, 0x0a]))).rejects.toMatchObject({ line: 2, reason: 'invalid UTF-8' });
  });
});
