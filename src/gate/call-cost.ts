import type { LlmRequest, RequestFraming, TokenUsage } from '../provider/provider.ts';
import { isProviderError } from '../provider/provider.ts';
import type { ProviderPrice } from './provider-options.ts';

/**
 * The framing of a provider that does not state its own (a scripted one, a custom `Provider`): a
 * generous 1,024 tokens a request, some three times the most either vendor documents, so that a
 * budget is never overspent for want of knowing.
 */
export const UNKNOWN_FRAMING: RequestFraming = Object.freeze({ perMessageTokens: 16, perRequestTokens: 1024 });

const encoder = new TextEncoder();
const schemaBytes = new WeakMap<object, number>();

/**
 * The most input tokens `request` can cost, whatever the tokenizer: a byte-level BPE token covers
 * at least one byte, so no more tokens than the UTF-8 bytes of what is sent, plus the provider's
 * framing of it.
 */
export function inputTokenBound(request: LlmRequest, framing: RequestFraming = UNKNOWN_FRAMING): number {
  let forSchema = schemaBytes.get(request.schema);
  if (forSchema === undefined) {
    forSchema = encoder.encode(JSON.stringify(request.schema)).length;
    schemaBytes.set(request.schema, forSchema);
  }
  let conversation = 0;
  for (const message of request.messages ?? []) conversation += encoder.encode(message.content).length;
  const messages = 1 + (request.messages?.length ?? 0);
  return (
    encoder.encode(request.prompt).length +
    forSchema +
    encoder.encode(request.description ?? '').length +
    conversation +
    messages * framing.perMessageTokens +
    framing.perRequestTokens
  );
}

/** What `usage` costs at `price`, in whole nano-dollars rounded up. */
export function usageNanoUsd(usage: TokenUsage, price: ProviderPrice): number {
  return Math.ceil(usage.inputTokens * price.inputPerMTok * 1000 + usage.outputTokens * price.outputPerMTok * 1000 - 1e-6);
}

/** The most a call of `request` with `maxOutputTokens` can cost at `price`, in whole nano-dollars, framed as `framing`. */
export function worstCaseNanoUsd(
  request: LlmRequest,
  maxOutputTokens: number,
  price: ProviderPrice,
  framing: RequestFraming = UNKNOWN_FRAMING,
): number {
  return usageNanoUsd({ inputTokens: inputTokenBound(request, framing), outputTokens: maxOutputTokens }, price);
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
