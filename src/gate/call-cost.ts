import type { LlmRequest, TokenUsage } from '../provider/provider.ts';
import { isProviderError } from '../provider/provider.ts';
import type { ProviderPrice } from './provider-options.ts';

/**
 * Tokens of framing a request may cost beyond its prompt, schema and description: the messages'
 * markup, and the system prompt a provider adds for tool use (Anthropic's is some 300 tokens).
 */
export const FRAMING_TOKENS = 1024;

const encoder = new TextEncoder();
const schemaBytes = new WeakMap<object, number>();

/**
 * The most input tokens `request` can cost, whatever the tokenizer: a byte-level BPE token covers
 * at least one byte, so no more tokens than the UTF-8 bytes of what is sent, plus the framing.
 */
export function inputTokenBound(request: LlmRequest): number {
  let forSchema = schemaBytes.get(request.schema);
  if (forSchema === undefined) {
    forSchema = encoder.encode(JSON.stringify(request.schema)).length;
    schemaBytes.set(request.schema, forSchema);
  }
  return encoder.encode(request.prompt).length + forSchema + encoder.encode(request.description ?? '').length + FRAMING_TOKENS;
}

/** What `usage` costs at `price`, in whole nano-dollars rounded up. */
export function usageNanoUsd(usage: TokenUsage, price: ProviderPrice): number {
  return Math.ceil(usage.inputTokens * price.inputPerMTok * 1000 + usage.outputTokens * price.outputPerMTok * 1000 - 1e-6);
}

/** The most a call of `request` with `maxOutputTokens` can cost at `price`, in whole nano-dollars. */
export function worstCaseNanoUsd(request: LlmRequest, maxOutputTokens: number, price: ProviderPrice): number {
  return usageNanoUsd({ inputTokens: inputTokenBound(request), outputTokens: maxOutputTokens }, price);
}

/**
 * The tokens an attempt that reached the provider was billed for: its usage when the provider
 * said (an answer, or one cut off or malformed); none for an error the provider answered with a
 * status and no usage (a 429, a 5xx, a refused request: providers do not bill those); and, when
 * nothing tells — a timeout, a broken connection, an answer without usage — `undefined`: it may
 * have been billed in full.
 */
export function billedUsage(usage: TokenUsage | undefined, error: unknown): TokenUsage | undefined {
  if (usage !== undefined) return usage;
  if (isProviderError(error)) {
    if (error.usage !== undefined) return error.usage;
    if (error.status !== undefined) return NO_TOKENS;
  }
  return undefined;
}

const NO_TOKENS: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });
