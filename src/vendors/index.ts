// `news-processor/vendors`: each vendor's own classes — its provider, its Batch API — and the
// registry with what a vendor is made of, for code that names a vendor or adds one, and what a
// provider of one's own is made of beyond the root's `Provider`. A pipeline picks a vendor by its
// type (`createHttpProvider`, from the root) and needs none of this.

export { OpenAiProvider } from './openai/openai-provider.ts';
export { AnthropicProvider } from './anthropic/anthropic-provider.ts';
export { AzureOpenAiProvider } from './azure/azure-provider.ts';
export { OpenAiBatchApi, type OpenAiBatchApiOptions } from './openai/batch-api.ts';
export { OPENAI_BATCH_CAPS } from './openai/batch-caps.ts';
export { AnthropicBatchApi, type AnthropicBatchApiOptions } from './anthropic/batch-api.ts';
export { ANTHROPIC_BATCH_CAPS } from './anthropic/batch-caps.ts';
// The registry, and what a vendor of one's own is built with (CONTRIBUTING.md: "Adding a vendor").
export { VENDORS } from './registry.ts';
export { HttpApiProvider, type HeaderDialect, type SdkBinding } from './http-api-provider.ts';
export type { Vendor, VendorBatch, VendorBatchApiOptions, VendorServe } from './vendor.ts';
export type { BoundSdk, ResponseMeta } from './sdk-wire.ts';
export type { HeaderFormat, HeaderFields } from './header-fields.ts';
export type { ErrorBody, HttpProviderDefaults, HttpProviderSettings, StatusMeaning } from './http-api.ts';
// The provider types the command line and the providers file take (`simulated` and the registry's).
export type { ProviderType } from './registry.ts';
// What a provider of one's own is made of beyond the root's `Provider`: a request's framing and
// turns, what an answer and an error carry, and the rate-limit signals it reads (src/provider/).
export type {
  RequestFraming,
  ConversationMessage,
  AnswerProblem,
  MalformedOutputOptions,
  ResponseHeaders,
  ProviderErrorOptions,
  ProviderTarget,
  PromptCacheRatios,
  RetriedFailureOptions,
} from '../provider/provider.ts';
export type { RateLimitSignals } from '../provider/rate-limit-signals.ts';
// A vendor's serve dialect, and what it is made with (src/vendors/serve/).
export type {
  BatchCounts,
  BatchServices,
  MountedDialect,
  RouteHandler,
  ServeHost,
  ServeRoute,
  VendorDialect,
} from './serve/dialect.ts';
export type {
  AnswerChoice,
  AnswerShape,
  CachePrefix,
  ChatAnswer,
  ChatApi,
  ChatRequest,
  Failure,
  FailureKind,
  FinishReason,
  ParseOptions,
  StreamEvent,
  TokenLogprob,
} from './serve/chat-api.ts';
export type { Exchange, LimitContext } from './serve/exchange.ts';
export type { BatchTiming, RowAnswer } from './serve/batch-job.ts';
export { FileStore, type LineWriter, type StoredFile } from './serve/file-store.ts';
// What `proxy` needs of a vendor: its clients' route and errors, a request forwarded to a member (src/vendors/proxy-wire.ts).
export type {
  ProxyClientApi,
  ProxyRequestFacts,
  ProxyUpstream,
  ProxyWire,
  StreamWatch,
  UpstreamRequest,
  UpstreamTarget,
  VendorProxy,
} from './proxy-wire.ts';
