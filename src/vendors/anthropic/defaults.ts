/** What an Anthropic provider is unless told otherwise. */
export const ANTHROPIC_DEFAULTS = Object.freeze({
  name: 'anthropic',
  label: 'Anthropic',
  /** The OpenTelemetry GenAI conventions' name for it. */
  genAiProviderName: 'anthropic',
  /** Where the API is: the host root, as the SDK takes it (it adds `/v1/messages`). */
  baseUrl: 'https://api.anthropic.com',
  /** A small, fast model that uses tools. */
  model: 'claude-haiku-4-5',
  baseUrlHint: "Anthropic's is the host root",
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'ANTHROPIC_API_KEY',
  /**
   * The tool-use system prompt Anthropic adds when tools are sent, as its tool-use documentation
   * tables it per model: with `tool_choice` `tool` (what every call here makes), 313 tokens for the
   * Claude 4 models and Sonnet 3.7, at most 340 (Haiku 3 and 3.5) — the most of them, so that no
   * model's is under-counted. The messages' markup is not documented: 8 tokens each of margin.
   */
  framing: Object.freeze({ perMessageTokens: 8, perRequestTokens: 340 }),
  /**
   * Anthropic's prompt-caching price list: a cache read costs 0.1× the input price, a 5-minute
   * cache write 1.25× (the writes `cache_control: { type: "ephemeral" }` makes).
   */
  promptCacheRatios: Object.freeze({ read: 0.1, write: 1.25 }),
  /**
   * Anthropic's input-token limits count `input_tokens` and `cache_creation_input_tokens` but not
   * `cache_read_input_tokens` for most models (its rate-limits documentation; the few older models
   * its table marks count them, which this leaves to the header sync): a call settles without its reads.
   */
  limitsCountCacheReads: false,
});

/**
 * The fewest tokens a prompt prefix must have for Anthropic to cache it, by model name prefix,
 * first match wins: the "minimum cacheable prompt length" table of Anthropic's prompt-caching
 * documentation (Opus 4.5 and later, Haiku 4.5: 4,096; Sonnet 4.6, Haiku 3.5 and 3: 2,048). A
 * shorter marked prefix is not cached and costs nothing more, so a model not listed is taken at
 * {@link ANTHROPIC_MIN_CACHE_TOKENS}.
 */
const MIN_CACHE_TOKENS_BY_MODEL: readonly (readonly [string, number])[] = [
  ['claude-opus-4-5', 4096],
  ['claude-opus-4-6', 4096],
  ['claude-haiku-4-5', 4096],
  ['claude-sonnet-4-6', 2048],
  ['claude-3-5-haiku', 2048],
  ['claude-3-haiku', 2048],
];

/** The fewest tokens most Claude models cache (Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7): the figure for a model the table does not list. */
export const ANTHROPIC_MIN_CACHE_TOKENS = 1024;

/** The fewest tokens of a prompt prefix `model` caches: Anthropic's documented minimum for it. */
export function minCacheTokens(model: string): number {
  return MIN_CACHE_TOKENS_BY_MODEL.find(([prefix]) => model.startsWith(prefix))?.[1] ?? ANTHROPIC_MIN_CACHE_TOKENS;
}
