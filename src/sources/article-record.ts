/**
 * One record of an input — a JSON object of a JSONL line or of a JSON array, a CSV row under its
 * header — checked into an {@link Article}: the same rules whatever the format.
 */
import { show } from '../validation/checks.ts';
import type { Article } from './article.ts';

/** A field a record must have: as written (`meta.author`), and its path. */
export interface RequiredField {
  readonly field: string;
  readonly path: readonly string[];
}

/** The article a record holds, or the reason it holds none. */
export function articleFromRecord(value: unknown, required: readonly RequiredField[]): Article | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected a JSON object, got ${show(value)}`;
  }
  const record = value as Record<string, unknown>;

  const rawId = record.id;
  let id: string;
  if (rawId === undefined) return 'missing "id"';
  if (typeof rawId === 'string') {
    if (rawId.trim() === '') return '"id" must not be empty';
    id = rawId;
  } else if (typeof rawId === 'number' && Number.isSafeInteger(rawId)) {
    id = String(rawId);
  } else {
    // A fractional or huge number would not round-trip to the id the producer meant.
    return `"id" must be a string or a safe integer, got ${show(rawId)}`;
  }

  const content = record.content ?? undefined;
  if (content !== undefined && typeof content !== 'string') return `"content" must be a string, got ${show(content)}`;
  if (content?.trim() === '') return 'article has no text (empty "content")';

  const title = record.title ?? '';
  if (typeof title !== 'string') return `"title" must be a string, got ${show(title)}`;

  const url = record.url ?? undefined;
  if (url !== undefined && typeof url !== 'string') return `"url" must be a string, got ${show(url)}`;
  const source = record.source ?? undefined;
  if (source !== undefined && typeof source !== 'string') return `"source" must be a string, got ${show(source)}`;

  for (const { field, path } of required) if (!hasField(record, path)) return `missing field "${field}"`;

  return {
    id,
    title,
    ...(content !== undefined && { content }),
    ...(url !== undefined && { url }),
    ...(source !== undefined && { source }),
    // The record as it came, for the tasks' placeholders; the title as read ("" for none).
    fields: { ...record, id, title },
  };
}

/** Whether `record` has a value (null counts) at `path`: what a placeholder needs to be filled. */
export function hasField(record: Record<string, unknown>, path: readonly string[]): boolean {
  let value: unknown = record;
  for (const segment of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return false;
    value = (value as Record<string, unknown>)[segment];
  }
  return value !== undefined;
}
