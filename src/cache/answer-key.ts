import { createHash } from 'node:crypto';

/**
 * The cache key of an answer: the SHA-256 of `identity` as JSON, in base64url (43 characters).
 * `identity` is what a provider's `answerIdentity` says shapes its answer — the vendor, the model,
 * the request as sent — and holds no secret: the key may sit in a store other people can read.
 */
export function answerKey(identity: unknown): string {
  return createHash('sha256').update(JSON.stringify(identity)).digest('base64url');
}
