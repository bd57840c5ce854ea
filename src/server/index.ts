// `news-processor/server`: the simulated provider as an HTTP server speaking the APIs of the
// vendors the registry lists (each one's dialect is in its folder), with a quota per API key.
// Needs the `gpt-tokenizer` and `prom-client` packages.

export { LlmServer, LLM_SERVER_DEFAULTS } from './llm-server.ts';
export { SERVE_HOST_HEADERS } from './dialects.ts';
export type { LlmServerOptions, LlmServerSimulation, ListenOptions } from './llm-server.ts';
