import { HOST_DIALECT_NAMES } from './host-dialects/host-dialects.ts';

/** What an OpenAI provider is unless told otherwise. */
export const OPENAI_DEFAULTS = Object.freeze({
  name: 'openai',
  label: 'OpenAI',
  /** The OpenTelemetry GenAI conventions' name for it. */
  genAiProviderName: 'openai',
  /** Where the API is; an OpenAI-compatible server's URL ends in `/v1` too (vLLM, Ollama, LiteLLM). */
  baseUrl: 'https://api.openai.com/v1',
  /** A small model that answers in strict structured output. */
  model: 'gpt-4.1-mini',
  baseUrlHint: "an OpenAI-compatible server's ends in /v1",
  /** What else `--provider=openai` reaches. */
  alsoMeans: 'any OpenAI-compatible server',
  /** The hosts' limit dialects: the providers file's `headers`. */
  hostHeaders: HOST_DIALECT_NAMES,
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'OPENAI_API_KEY',
  /**
   * The chat format's markup: OpenAI's cookbook ("How to count tokens with tiktoken") counts 3
   * tokens around each message and 3 priming the reply (`<|start|>assistant<|message|>`). Strict
   * structured output sends the schema in a system message of its own — its text is the schema's
   * bytes, counted apart — whose heading and markup OpenAI does not document: 64 tokens of margin.
   */
  framing: Object.freeze({ perMessageTokens: 3, perRequestTokens: 3 + 3 + 64 }),
  /**
   * OpenAI's cached input: half the input price for the GPT-4o and o-series models its prompt-caching
   * announcement priced, less for newer ones (GPT-4.1 0.25×, GPT-5 0.1×: give `cachedInputPerMTok`);
   * its cache writes are not reported and cost the input price.
   */
  promptCacheRatios: Object.freeze({ read: 0.5, write: 1 }),
  /** OpenAI's token limits count every prompt token, cached or not. */
  limitsCountCacheReads: true,
});
