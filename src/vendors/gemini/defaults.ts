/** What a Gemini provider is unless told otherwise. */
export const GEMINI_DEFAULTS = Object.freeze({
  name: 'gemini',
  label: 'Gemini',
  /** The OpenTelemetry GenAI conventions' name for it. */
  genAiProviderName: 'gcp.gemini',
  /** Where the Gemini API is: the host root (calls go to `{baseUrl}/v1beta/models/{model}:generateContent`). */
  baseUrl: 'https://generativelanguage.googleapis.com',
  /** A small, fast model that answers in structured output. */
  model: 'gemini-2.5-flash',
  baseUrlHint: "Gemini's is the host root",
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'GEMINI_API_KEY',
  /**
   * Google does not document the tokens its API adds around a request (its `countTokens` counts
   * the contents alone), nor what a `responseJsonSchema` costs: 4 tokens a turn and 64 a request of
   * margin, as for OpenAI's undocumented schema heading.
   */
  framing: Object.freeze({ perMessageTokens: 4, perRequestTokens: 64 }),
  /**
   * Gemini's implicit prompt cache (the 2.5 models): a cached input token costs 0.1× the input price
   * (its price list: Gemini 2.5 Flash $0.30 input, $0.03 cached); an implicit cache write costs
   * nothing more than the input price.
   */
  promptCacheRatios: Object.freeze({ read: 0.1, write: 1 }),
  /** Gemini's token limits count every prompt token (its rate-limits page says nothing of cached ones): counted, to err safe. */
  limitsCountCacheReads: true,
});
