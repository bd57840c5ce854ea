// Each HTTP API's defaults: its name, base URL, model, and the environment variable its key is read from.

/** What an OpenAI provider is unless told otherwise. */
export const OPENAI_DEFAULTS = Object.freeze({
  name: 'openai',
  /** Where the API is; an OpenAI-compatible server's URL ends in `/v1` too (vLLM, Ollama, LiteLLM). */
  baseUrl: 'https://api.openai.com/v1',
  /** A small model that answers in strict structured output. */
  model: 'gpt-4.1-mini',
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'OPENAI_API_KEY',
});

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
