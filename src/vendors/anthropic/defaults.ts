/** What an Anthropic provider is unless told otherwise. */
export const ANTHROPIC_DEFAULTS = Object.freeze({
  name: 'anthropic',
  /** Where the API is: the host root, as the SDK takes it (it adds `/v1/messages`). */
  baseUrl: 'https://api.anthropic.com',
  /** A small, fast model that uses tools. */
  model: 'claude-haiku-4-5',
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'ANTHROPIC_API_KEY',
  /**
   * The tool-use system prompt Anthropic adds when tools are sent, as its tool-use documentation
   * tables it per model: with `tool_choice` `tool` (what every call here makes), 313 tokens for the
   * Claude 4 models and Sonnet 3.7, at most 340 (Haiku 3 and 3.5) — the most of them, so that no
   * model's is under-counted. The messages' markup is not documented: 8 tokens each of margin.
   */
  framing: Object.freeze({ perMessageTokens: 8, perRequestTokens: 340 }),
});
