/**
 * The vendors' prompt caches as `serve` simulates them, per API key, each entry kept for a TTL from
 * its last use, as the request's dialect describes its cache (`ChatRequest.cachePrefix`): a prefix
 * the request marks (Anthropic's `cache_control`), cached when it reaches the model's minimum — a
 * first request writes it, the next ones within the TTL read it; or the whole prompt cached by
 * itself past a minimum (OpenAI's 1,024 tokens), routed by a key, a later prompt served the longest
 * prefix it shares with it in the vendor's steps (it reports no writes).
 */

import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Tokenizer } from './answer-choices.ts';
import type { ChatAnswer, ChatRequest } from '../vendors/serve/chat-api.ts';

interface Entry {
  expiresAtMs: number;
  /** OpenAI's: the last prompt's tokens, which a later one's prefix is matched against. */
  readonly tokens?: readonly number[];
}

/** Per API key, the prefixes cached and when each expires; the least recently used dropped past `maxEntries`. */
export class PromptCache {
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();

  constructor(ttlMs: number, clock: Clock, maxEntries = 10_000) {
    this.#ttlMs = ttlMs;
    this.#clock = clock;
    this.#maxEntries = maxEntries;
  }

  /**
   * `answer` with what the cache did for `request`, made with `apiKey`: the input tokens it served
   * (`cacheReadTokens`) and stored (`cacheWriteTokens`), both among `answer.inputTokens`.
   */
  apply(apiKey: string, request: ChatRequest, answer: ChatAnswer, tokenizer: Tokenizer): ChatAnswer {
    const prefix = request.cachePrefix;
    if (prefix === undefined || this.#ttlMs === 0) return answer;
    const nowMs = this.#clock.now();
    if (prefix.kind === 'marked') {
      const tokens = Math.min(tokenizer.encode(prefix.text).length, answer.inputTokens);
      if (tokens < prefix.minTokens) return answer;
      const at = entryKey(apiKey, request.model, `${prefix.identity}\n${prefix.text}`);
      const hit = this.#live(at, nowMs) !== undefined;
      this.#keep(at, { expiresAtMs: nowMs + this.#ttlMs });
      return hit ? { ...answer, cacheReadTokens: tokens } : { ...answer, cacheWriteTokens: tokens };
    }
    const tokens = tokenizer.encode(request.promptText);
    if (tokens.length < prefix.minTokens) return answer;
    const at = entryKey(apiKey, request.model, prefix.key);
    const cached = this.#live(at, nowMs)?.tokens;
    this.#keep(at, { expiresAtMs: nowMs + this.#ttlMs, tokens });
    if (cached === undefined) return answer;
    const shared = sharedPrefix(cached, tokens);
    const served = shared < prefix.minTokens ? 0 : shared - (shared % prefix.stepTokens);
    return served === 0 ? answer : { ...answer, cacheReadTokens: Math.min(served, answer.inputTokens) };
  }

  #live(at: string, nowMs: number): Entry | undefined {
    const entry = this.#entries.get(at);
    if (entry === undefined || entry.expiresAtMs > nowMs) return entry;
    this.#entries.delete(at);
    return undefined;
  }

  #keep(at: string, entry: Entry): void {
    this.#entries.delete(at);
    if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(at, entry);
  }
}

/** A key never shares another's cache, nor a model another model's. */
function entryKey(apiKey: string, model: string, prefix: string): string {
  return createHash('sha256').update(apiKey).update('\0').update(model).update('\0').update(prefix).digest('base64');
}

function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  const length = Math.min(a.length, b.length);
  let at = 0;
  while (at < length && a[at] === b[at]) at++;
  return at;
}
