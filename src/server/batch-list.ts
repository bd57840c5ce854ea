/**
 * A page of a key's batches, newest first, as both vendors list them: after a cursor id (the
 * next page, older), or before one (the previous page, newer), at most `limit` of them.
 */
export function pageOf<T>(
  items: readonly T[],
  idOf: (item: T) => string,
  cursor: { readonly after?: string | undefined; readonly before?: string | undefined; readonly limit: number },
): { readonly items: readonly T[]; readonly hasMore: boolean } {
  const { after, before, limit } = cursor;
  if (before !== undefined) {
    // An id no longer there leaves nothing before it to list.
    const end = items.findIndex((item) => idOf(item) === before);
    const start = Math.max(0, end - limit);
    return { items: end < 0 ? [] : items.slice(start, end), hasMore: start > 0 };
  }
  const start = after === undefined ? 0 : items.findIndex((item) => idOf(item) === after) + 1;
  if (after !== undefined && start === 0) return { items: [], hasMore: false };
  return { items: items.slice(start, start + limit), hasMore: start + limit < items.length };
}
