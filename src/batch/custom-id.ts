import { hash } from 'node:crypto';

/**
 * The custom id of `task` on article `articleId`: what both vendors take (`^[a-zA-Z0-9_-]{1,64}$`),
 * the same in every run (so a resume finds the rows it submitted), readable at a glance (the id's
 * first characters, others as `_`) and unique by a hash of the exact pair.
 */
export function customIdOf(articleId: string, task: string): string {
  const readable = articleId.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 40);
  // One call, not a Hash object a row: the same digest as hashing the parts in turn.
  return `${readable}-${hash('sha256', `${articleId}\0${task}`, 'hex').slice(0, 16)}`;
}
