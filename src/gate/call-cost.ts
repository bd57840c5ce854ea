import type { LlmRequest, PromptCacheRatios, RequestFraming, TokenUsage } from '../provider/provider.ts';
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

/** A prompt cache that bills its tokens as any other input: what a provider that states no ratios is taken to have. */
const NO_DISCOUNT: PromptCacheRatios = Object.freeze({ read: 1, write: 1 });

/**
 * `price` with its prompt cache's prices filled in: as given, else the input price at `ratios`
 * (the vendor's: Anthropic reads 0.1×, writes 1.25×; OpenAI reads 0.5×).
 */
export function withCachePrices(price: ProviderPrice, ratios: PromptCacheRatios = NO_DISCOUNT): ProviderPrice {
  return {
    ...price,
    cachedInputPerMTok: price.cachedInputPerMTok ?? price.inputPerMTok * ratios.read,
    cacheWritePerMTok: price.cacheWritePerMTok ?? price.inputPerMTok * ratios.write,
  };
}

/**
 * What `usage` costs at `price`, in whole nano-dollars rounded up: the input tokens the prompt
 * cache served at the cached-input price, those it stored at the cache-write price (each the input
 * price when not given), the rest at the input price.
 */
export function usageNanoUsd(usage: TokenUsage, price: ProviderPrice): number {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const plain = Math.max(0, usage.inputTokens - read - write);
  const usd =
    plain * price.inputPerMTok +
    read * (price.cachedInputPerMTok ?? price.inputPerMTok) +
    write * (price.cacheWritePerMTok ?? price.inputPerMTok) +
    usage.outputTokens * price.outputPerMTok;
  return Math.ceil(usd * 1000 - 1e-6);
}

/**
 * The most a call of `request` with `maxOutputTokens` can cost at `price`, in whole nano-dollars,
 * framed as `framing`: a request with a prompt head may have all its input written to the prompt
 * cache, at the cache-write price when that is dearer.
 */
export function worstCaseNanoUsd(
  request: LlmRequest,
  maxOutputTokens: number,
  price: ProviderPrice,
  framing: RequestFraming = UNKNOWN_FRAMING,
): number {
  const inputTokens = inputTokenBound(request, framing);
  const written = (request.promptHeadLength ?? 0) > 0 && (price.cacheWritePerMTok ?? 0) > price.inputPerMTok;
  return usageNanoUsd({ inputTokens, outputTokens: maxOutputTokens, ...(written && { cacheWriteTokens: inputTokens }) }, price);
}

/**
 * The tokens an attempt handed to its provider was billed for: its usage when the provider said
 * (an answer, or one cut off or malformed); none for an error the provider answered with a status
 * and no usage (a 429, a 5xx, a refused request: providers do not bill those), nor for a connection
 * that failed before the request was written (refused, DNS, TLS: `NetworkError.neverSent`); and,
 * when nothing tells — a timeout, a connection broken mid-request, an answer without usage —
 * `undefined`: it may have been billed in full.
 */
export function billedUsage(usage: TokenUsage | undefined, error: unknown): TokenUsage | undefined {
  if (usage !== undefined) return usage;
  if (isProviderError(error)) {
    if (error.usage !== undefined) return error.usage;
    if (error.status !== undefined) return NO_TOKENS;
    if ((error as { neverSent?: unknown }).neverSent === true) return NO_TOKENS;
  }
  return undefined;
}

const NO_TOKENS: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });
