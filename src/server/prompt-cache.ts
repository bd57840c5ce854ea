/**
 * The vendors' prompt caches as `serve` simulates them, per API key, each entry kept for a TTL from
 * its last use: Anthropic's, which caches the prefix a request marks with `cache_control` when it
 * reaches the model's minimum (a first request writes it, the next ones within the TTL read it);
 * OpenAI's, which caches any prompt of 1,024 tokens or more by itself, routed by
 * `prompt_cache_key`, and serves the longest prefix a later prompt shares with it in steps of 128
 * tokens (it reports no writes).
 */

import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { minCacheTokens } from '../vendors/anthropic/defaults.ts';
import { OPENAI_MIN_CACHE_TOKENS } from '../vendors/openai/defaults.ts';
import type { Tokenizer } from './answer-choices.ts';
import type { CachePrefix, ChatAnswer, ChatRequest } from './chat-api.ts';

/** OpenAI serves a cached prefix in steps of this many tokens (its prompt-caching guide). */
const OPENAI_CACHE_STEP_TOKENS = 128;

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
      if (tokens < minCacheTokens(request.model)) return answer;
      const at = entryKey(apiKey, request.model, `${prefix.identity}\n${prefix.text}`);
      const hit = this.#live(at, nowMs) !== undefined;
      this.#keep(at, { expiresAtMs: nowMs + this.#ttlMs });
      return hit ? { ...answer, cacheReadTokens: tokens } : { ...answer, cacheWriteTokens: tokens };
    }
    const tokens = tokenizer.encode(request.promptText);
    if (tokens.length < OPENAI_MIN_CACHE_TOKENS) return answer;
    const at = entryKey(apiKey, request.model, prefix.key);
    const cached = this.#live(at, nowMs)?.tokens;
    this.#keep(at, { expiresAtMs: nowMs + this.#ttlMs, tokens });
    if (cached === undefined) return answer;
    const shared = sharedPrefix(cached, tokens);
    const served = shared < OPENAI_MIN_CACHE_TOKENS ? 0 : shared - (shared % OPENAI_CACHE_STEP_TOKENS);
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

/**
 * Anthropic's marked prefix in a Messages body: the text of the system prompt's and the messages'
 * blocks up to the last one marked `cache_control` (tools before them count towards its identity);
 * undefined when none is marked.
 */
export function markedPrefix(body: Readonly<Record<string, unknown>>): CachePrefix | undefined {
  const texts: string[] = [];
  let marked: string | undefined;
  const visit = (content: unknown) => {
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content))
      for (const block of content) {
        const { type, text, cache_control: mark } = (block ?? {}) as Record<string, unknown>;
        if (type === 'text' && typeof text === 'string') texts.push(text);
        if (mark !== undefined && mark !== null) marked = texts.join('\n');
      }
  };
  visit(body.system);
  for (const message of Array.isArray(body.messages) ? body.messages : []) visit((message as Record<string, unknown> | null)?.content);
  return marked === undefined ? undefined : { kind: 'marked', text: marked, identity: JSON.stringify(body.tools ?? null) };
}

/** OpenAI's prompt cache for a chat or Responses body: every prompt, routed by `prompt_cache_key`. */
export function automaticPrefix(body: Readonly<Record<string, unknown>>): CachePrefix {
  return { kind: 'automatic', key: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : '' };
}
