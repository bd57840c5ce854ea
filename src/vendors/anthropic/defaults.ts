/** What an Anthropic provider is unless told otherwise. */
export const ANTHROPIC_DEFAULTS = Object.freeze({
  name: 'anthropic',
  /** Where the API is: the host root, as the SDK takes it (it adds `/v1/messages`). */
  baseUrl: 'https://api.anthropic.com',
  /** A small, fast model that uses tools. */
  model: 'claude-haiku-4-5',
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'ANTHROPIC_API_KEY',
});
