/** What one row takes of a batch's caps and of the provider's queue. */
export interface RowSize {
  /** Its line's bytes in the upload, framing included. */
  readonly bytes: number;
  /** Its estimated input tokens (0 when the queue is not counted). */
  readonly tokens: number;
}

/** What the next batch may hold. */
export interface BatchBounds {
  /** Rows at most. */
  readonly maxRows: number;
  /** Upload bytes at most. */
  readonly maxBytes: number;
  /** Input tokens the queue has room for. */
  readonly tokensRoom: number;
}

/**
 * Room in a row's line for what surrounds its body: its custom id (64 characters at most) and the
 * vendor's wrapping (`{"custom_id":…,"method":"POST","url":…,"body":…}`, `{"custom_id":…,"params":…}`).
 */
export const ROW_FRAMING_BYTES = 256;

/**
 * The next batch from `sizes[start]` on, in order: as many rows as fit `bounds`. A row that does
 * not fit the queue's room ends it there (and the rows after it wait: a later row never goes ahead
 * of an earlier one). Returns the index after its last row, and its bytes and tokens.
 */
export function nextBatch(
  sizes: readonly RowSize[],
  start: number,
  bounds: BatchBounds,
): { readonly end: number; readonly bytes: number; readonly tokens: number } {
  let end = start;
  let bytes = 0;
  let tokens = 0;
  while (end < sizes.length && end - start < bounds.maxRows) {
    const size = sizes[end]!;
    if (bytes + size.bytes > bounds.maxBytes || tokens + size.tokens > bounds.tokensRoom) break;
    bytes += size.bytes;
    tokens += size.tokens;
    end++;
  }
  return { end, bytes, tokens };
}
