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
