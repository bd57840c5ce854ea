import { hash } from 'node:crypto';
import type { LlmRequest } from '../provider/provider.ts';

/**
 * A request's prompt cut where its task's own text ends (`promptHeadLength`): the head, the same
 * for every article of the task, and the rest. Undefined without a head.
 */
export function promptHeadOf(request: LlmRequest): { readonly head: string; readonly rest: string } | undefined {
  const length = request.promptHeadLength ?? 0;
  if (length <= 0) return undefined;
  return { head: request.prompt.slice(0, length), rest: request.prompt.slice(length) };
}

/**
 * A guess at a text's tokens that errs low, at four characters a token (English prose runs near
 * it): what decides whether a head is long enough to mark. A head marked short of the vendor's
 * minimum is not cached and costs nothing more; one left unmarked loses the discount, so close
 * enough will do.
 */
export function roughTokens(text: string): number {
  return Math.floor(text.length / 4);
}

/**
 * A stable name for a task's prompt head (OpenAI's `prompt_cache_key`): the task and the head's
 * SHA-256, so that requests sharing the head go to the same cache and a changed head to another.
 */
export function promptCacheKey(task: string, head: string): string {
  // Every request of a task asks with the same head: its key is made once, not hashed a request.
  const known = cacheKeys.get(task);
  if (known?.head === head) return known.key;
  const key = `${task.slice(0, 24)}-${hash('sha256', head, 'hex').slice(0, 32)}`;
  cacheKeys.set(task, { head, key });
  return key;
}

/** Each task's last head and its key: one entry a task name, so it stays as small as the task set. */
const cacheKeys = new Map<string, { readonly head: string; readonly key: string }>();
