import { Refusal } from './exchange.ts';

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

/** The page size of a list unless `limit` says otherwise. */
const DEFAULT_PAGE = 20;

/** `limit` of a list: a whole number from 1 to `max`, 20 when absent; the 400 otherwise. */
export function pageLimit(text: string | null, max: number): number {
  if (text === null) return DEFAULT_PAGE;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new Refusal({
      kind: 'invalid-request',
      message: `Invalid 'limit': expected an integer from 1 to ${max}, got '${text}'.`,
      param: 'limit',
    });
  }
  return limit;
}
