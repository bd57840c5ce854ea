import { brandedGuard } from '../error-brand.ts';
import type { JsonSchema } from './json-schema.ts';
import type { RateLimitSignals } from './rate-limit-signals.ts';

/**
 * What the pipeline asks of an LLM provider, and the typed failures it may answer with.
 *
 * A provider is anything with `call(request, { signal })`. It resolves with a response or rejects
 * with one of the errors below (or `signal.reason` when aborted). The call gate decides what to
 * retry from the error's type alone, so providers must map their transport's failures onto these.
 */

/**
 * One call: a task's prompt for one article, and the schema its answer must fit. Everything a
 * provider sends is here — it knows nothing of tasks or articles beyond it.
 */
export interface LlmRequest {
  /** The task's name: it names the structured output (OpenAI's `json_schema`, Anthropic's tool). Letters, digits, `_` and `-`. */
  readonly task: string;
  /** The article the call is for: what logs and a provider's own bookkeeping know it by. */
  readonly articleId: string;
  /** What the model is asked, its placeholders filled. */
  readonly prompt: string;
  /**
   * How many characters at the start of `prompt` are the task's own text, the same for every
   * article (the template's text before its first placeholder): what a vendor's prompt cache can
   * keep, so the vendors send it first and mark it (Anthropic's `cache_control`, OpenAI's
   * `prompt_cache_key`). @default 0 (nothing marked)
   */
  readonly promptHeadLength?: number | undefined;
  /** The JSON Schema the answer must fit; its root is an object. */
  readonly schema: JsonSchema;
  /** What the answer is, in a line (the structured output's or the tool's description). @default none */
  readonly description?: string | undefined;
  /**
   * The conversation after the prompt, oldest first: a repair's (an unfit answer as the
   * assistant's turn, what is wrong with it as the user's). Sent after the prompt, in order.
   * @default none (the prompt alone)
   */
  readonly messages?: readonly ConversationMessage[] | undefined;
}

/** A turn of the conversation after a request's prompt. */
export interface ConversationMessage {
  /** Who said it: the model (`assistant`) or the caller (`user`). */
  readonly role: 'assistant' | 'user';
  /** What was said, as text. */
  readonly content: string;
}

/** An answer: a JSON object that fits the request's schema. */
export type LlmOutput = Readonly<Record<string, unknown>>;

/** The tokens a call used, as the provider reported them: what it is billed and what its limits settle on. */
export interface TokenUsage {
  /**
   * The prompt's tokens, all of them: those the provider's prompt cache served or stored included
   * (OpenAI's `prompt_tokens`; Anthropic's `input_tokens` plus its two cache counts).
   */
  readonly inputTokens: number;
  /** The answer's tokens. */
  readonly outputTokens: number;
  /** Of `inputTokens`, those read from the provider's prompt cache: billed at its cached-input price. @default 0 */
  readonly cacheReadTokens?: number | undefined;
  /**
   * Of `inputTokens`, those written to the provider's prompt cache: billed at its cache-write price
   * (Anthropic's reports them; OpenAI's writes are not reported, and cost the input price). @default 0
   */
  readonly cacheWriteTokens?: number | undefined;
}

/**
 * HTTP response headers as a provider received them, names lower-case (`retry-after`,
 * `x-ratelimit-remaining-requests`, …); the provider reads them (`Provider.rateLimits`).
 */
export type ResponseHeaders = Readonly<Record<string, string>>;

/** A provider's answer: the output that fits the request's schema, the usage, the headers. */
export interface LlmResponse {
  /** The answer: an object that fits the request's schema. */
  readonly output: LlmOutput;
  /** The tokens the call used, when the provider said. */
  readonly usage?: TokenUsage;
  /** The response's headers, when the provider has any (rate-limit status, mostly). */
  readonly headers?: ResponseHeaders;
  /** The model that answered, as the provider names it (`gpt-4.1-mini-2025-04-14`), when it said. */
  readonly model?: string | undefined;
  /** The provider's id of the answer (`chatcmpl-…`, `msg_…`), when it gave one. */
  readonly id?: string | undefined;
  /** Why the model stopped, one reason per choice as the provider says it (`stop`, `tool_use`), when it said. */
  readonly finishReasons?: readonly string[] | undefined;
}

/**
 * What a provider calls, as tracing names it (the OpenTelemetry GenAI conventions): the vendor's
 * API, the model asked, and the server's address.
 */
export interface ProviderTarget {
  /** The API spoken: `openai`, `anthropic` (`gen_ai.provider.name`). */
  readonly vendor: string;
  /** The model each request asks for. */
  readonly model: string;
  /** The server's host name or address, for a provider over a network. @default none */
  readonly serverAddress?: string | undefined;
  /** The server's port, for a provider over a network. @default none */
  readonly serverPort?: number | undefined;
}

/** What a provider's `call()` takes besides the request: a signal, what is left of the deadline, the most output tokens. */
export interface CallOptions {
  /** Aborting it must settle the call promptly, rejecting with `signal.reason`. @default none */
  readonly signal?: AbortSignal | undefined;
  /**
   * What is left of the caller's deadline, in ms (`Infinity`: none). A provider over a network
   * makes it its request timeout; the signal aborts the call at the deadline all the same.
   * @default Infinity (no deadline)
   */
  readonly timeoutMs?: number | undefined;
  /**
   * The most tokens the answer may take, which a provider over a network sends as the request's
   * max tokens: the call gate passes what it reserved for the call.
   * @default DEFAULT_MAX_OUTPUT_TOKENS (256)
   */
  readonly maxOutputTokens?: number | undefined;
}

/** Output tokens a call may take unless told otherwise: what the gate reserves and a provider asks for. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 256;

/**
 * The tokens a provider's API adds to a request beyond the text it is sent (the prompt, the
 * schema, the description, each message's text): the markup around each message and what it adds
 * once per request (a tool-use system prompt, the reply's priming). What the worst case of a call
 * counts over the bytes of its text.
 */
export interface RequestFraming {
  /** Tokens of markup around each message, ≥ 0. */
  readonly perMessageTokens: number;
  /** Tokens added once per request, ≥ 0. */
  readonly perRequestTokens: number;
}

/** What a vendor's prompt cache bills its tokens at, as fractions of the input price. */
export interface PromptCacheRatios {
  /** A token read from the cache (Anthropic 0.1, OpenAI 0.5 for most models), >= 0. */
  readonly read: number;
  /** A token written to the cache (Anthropic's 5-minute writes 1.25; OpenAI 1: it bills writes as input), >= 0. */
  readonly write: number;
}

/** An LLM provider as the pipeline sees it: anything with a name and a `call()` that answers a request or rejects with a typed error. */
export interface Provider {
  /** Names the provider in logs, metrics and routing. */
  readonly name: string;
  /**
   * The tokens its API adds to each request, when known (each vendor's are in its folder): what a
   * budget holds a call's worst case at. @default UNKNOWN_FRAMING (a generous 1,024 tokens a request)
   */
  readonly framing?: RequestFraming | undefined;
  /**
   * What its prompt cache bills, as fractions of the input price, when the price does not say
   * (each vendor's are in its folder). @default no discount (reads and writes at the input price)
   */
  readonly promptCacheRatios?: PromptCacheRatios | undefined;
  /**
   * Whether its token limits count the input tokens its prompt cache serves: OpenAI's do (all the
   * prompt's tokens), Anthropic's input-token limits do not for most models. A call's grant settles
   * on what they count. @default true
   */
  readonly limitsCountCacheReads?: boolean | undefined;
  /**
   * Whether its answers state its limits or refuse with 429 when they are passed: false for a
   * server that does neither and queues what is over its capacity (a self-hosted inference server),
   * where only the calls' latency tells of overload — what the adaptive rate then reads.
   * @default true
   */
  readonly statesLimits?: boolean | undefined;
  /** What it calls, for tracing: the vendor's API, the model, the server. @default none (traced by its name alone) */
  readonly target?: ProviderTarget | undefined;
  /**
   * Whether `call` resolves only with an output it has checked against the request's schema
   * (`readAnswer`, as the vendors' `decode` does): the call loop then does not check it again. A
   * provider's promise of its model's output (a strict mode, a tool schema) is no such check.
   * @default false (the call loop checks every answer)
   */
  readonly checksAnswers?: boolean | undefined;
  /** Answers `request` with an output that fits its schema, or rejects with a `ProviderError` (or `signal.reason` when aborted). */
  call(request: LlmRequest, options?: CallOptions): Promise<LlmResponse>;
  /**
   * Everything that shapes this provider's answer to `request` with `maxOutputTokens`, as a JSON
   * value — its API, the server, the model, the request as it is sent — and no secret (never the
   * key): what the answer cache keys on (hashed). Two calls with equal identities may share an
   * answer. A provider without it is never cached.
   */
  answerIdentity?(request: LlmRequest, maxOutputTokens: number): unknown;
  /**
   * Why its API would refuse every call asked for an answer of `schema`, in the vendor's own words
   * (`OpenAI's strict mode refuses its schema: …`); undefined when it takes it. The run plan
   * (`planRun`) asks it of each task's schema, so that a run is refused before its first call
   * rather than failing every one. @default takes every schema
   */
  schemaProblem?(schema: JsonSchema): string | undefined;
  /**
   * Resolves once a call can go without loading anything first (an SDK, the answers' validators);
   * never rejects: a failure to load is the first call's to report. `runPipeline` waits for it
   * before its first limiter call, since a call granted its token while the SDK loads leaves when
   * the load ends, together with every call granted meanwhile: over the burst, as the provider
   * sees it. A provider that loads nothing has none.
   */
  ready?(): Promise<void>;
  /**
   * What a response's (or a failure's) headers say of the provider's limits — how long to wait,
   * each limit and what is left of it — read in its own dialect (OpenAI's `x-ratelimit-*`,
   * Anthropic's `anthropic-ratelimit-*`, the IETF fields…): what the gate's header sync and adaptive
   * rate hear. Never throws on a header value. A provider without it states no limits (a custom
   * provider relaying a vendor's headers reads them with `parseRateLimitHeaders`).
   */
  rateLimits?(headers: ResponseHeaders): RateLimitSignals;
}

/** What a provider knows about a failure besides its message. */
export interface ProviderErrorOptions {
  /** The HTTP status, when there was one. @default none (429 for a RateLimitError, 503 for a ServerError) */
  readonly status?: number | undefined;
  /** The provider's own hint of when to try again, in ms. @default none */
  readonly retryAfterMs?: number | undefined;
  /** The response's headers (lower-case names): rate-limit status, mostly. @default none */
  readonly headers?: ResponseHeaders | undefined;
  /** The underlying failure (a socket error, the SDK's error). @default none */
  readonly cause?: unknown;
  /** The tokens the call used although it failed (an answer cut off or malformed still cost them). @default none */
  readonly usage?: TokenUsage | undefined;
}

/**
 * Base of every failure a provider reports. Its type alone decides what happens next: `retryable`
 * tells the call gate whether to go again, `stopsRun` that no call to this provider can succeed
 * until a person acts (a refused key, no credit left), so the whole run stops.
 */
export abstract class ProviderError extends Error {
  /** Whether the call gate goes again: decided by the failure's kind (and a server's `x-should-retry`). */
  abstract readonly retryable: boolean;
  /** Whether no call to this provider can succeed until a person acts (a refused key, no credit): the run stops. */
  readonly stopsRun: boolean = false;
  /** The HTTP status, when there was one. */
  readonly status: number | undefined;
  /** The provider's own hint of when to try again, in ms. */
  readonly retryAfterMs: number | undefined;
  /** The response's headers (lower-case names), when there was a response. */
  readonly headers: ResponseHeaders | undefined;
  /** The tokens the call used although it failed, when the provider said: what it cost. */
  readonly usage: TokenUsage | undefined;

  constructor(message: string, options: ProviderErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.headers = options.headers;
    this.usage = options.usage;
  }
}

/** What a provider may add about a failure that is retried unless the server says otherwise. */
export interface RetriedFailureOptions extends ProviderErrorOptions {
  /** False when the server said not to try again (`x-should-retry: false`). @default true */
  readonly retryable?: boolean | undefined;
}

/** HTTP 429: too many requests. Retried, after the provider's retry-after when it gave one. */
export class RateLimitError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RateLimitError';
  /** True unless the server said not to try again (`x-should-retry: false`). */
  readonly retryable: boolean;

  constructor(message = 'rate limited (429)', options: RetriedFailureOptions = {}) {
    super(message, { ...options, status: options.status ?? 429 });
    this.retryable = options.retryable ?? true;
  }
}

/** HTTP 5xx (and Anthropic's 529 overloaded): the provider failed. Retried. */
export class ServerError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'ServerError';
  /** True unless the server said not to try again (`x-should-retry: false`). */
  readonly retryable: boolean;

  constructor(message = 'service unavailable (503)', options: RetriedFailureOptions = {}) {
    super(message, { ...options, status: options.status ?? 503 });
    this.retryable = options.retryable ?? true;
  }
}

/**
 * The call did not answer in time. Not retried when the article's deadline has passed (the
 * default); retried when only the call's own timeout ran out (the call gate's `callTimeoutMs`,
 * `retryable: true`), leaving the deadline time for another attempt.
 */
export class TimeoutError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'TimeoutError';
  /** True when only the call's own timeout ran out (the deadline leaves time for another attempt); false when the article's deadline passed. */
  readonly retryable: boolean;
  /** The timeout that ran out, in ms, when known. */
  readonly timeoutMs: number | undefined;

  constructor(
    message = 'timed out',
    options: ProviderErrorOptions & { readonly timeoutMs?: number | undefined; readonly retryable?: boolean | undefined } = {},
  ) {
    super(message, options);
    this.timeoutMs = options.timeoutMs;
    this.retryable = options.retryable ?? false;
  }
}

/**
 * The provider could not be reached or the connection broke (refused, reset, DNS, TLS). Retried.
 * Whether the provider may have billed it is `neverSent`: a connection refused, a name that did
 * not resolve, a TLS handshake that failed end the call before its request was written (nothing to
 * bill); a connection reset or closed once the request was on its way leaves its fate unknown.
 */
export class NetworkError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'NetworkError';
  /** Always true: the connection may well hold next time. */
  readonly retryable = true;
  /** The system's error code, when there was one: `ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`, … */
  readonly code: string | undefined;
  /**
   * True when the connection failed before the request was written (refused, DNS, TLS handshake):
   * the provider never saw it, so it cost nothing. False when that is not known: the request may
   * have reached the provider, and the call may have been billed. @default false
   */
  readonly neverSent: boolean;

  constructor(
    message: string,
    options: ProviderErrorOptions & { readonly code?: string | undefined; readonly neverSent?: boolean | undefined } = {},
  ) {
    super(message, options);
    this.code = options.code;
    this.neverSent = options.neverSent ?? false;
  }
}

/** The provider refused the request as it stands (400, 404, 413, 422): sending it again changes nothing. */
export class BadRequestError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'BadRequestError';
  /** Always false: the same request would be refused again. */
  readonly retryable = false;
}

/**
 * The address answered, but not as the API does: a 200 with a web page or plain text instead of
 * JSON, so the base URL points at something else (a proxy's login page, a web server). Not
 * retried; before the provider has answered once it stops the run, as a first 404 does.
 */
export class NotAnApiError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'NotAnApiError';
  /** Always false: the address would answer the same. */
  readonly retryable = false;
}

/** 401 / 403: the provider refused the key. The run stops: every further call would be refused too. */
export class AuthenticationError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'AuthenticationError';
  /** Always false: the key would be refused again. */
  readonly retryable = false;
  /** Always true: every further call would be refused too. */
  override readonly stopsRun = true;
}

/** No credit or quota left on the account (OpenAI's 429 `insufficient_quota`): a billing stop, not a rate limit. */
export class QuotaExhaustedError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'QuotaExhaustedError';
  /** Always false: nothing is left until the account is topped up. */
  readonly retryable = false;
  /** Always true: every further call would be refused too. */
  override readonly stopsRun = true;
}

/** The answer was cut off by the output token limit. Retried as a new request. */
export class TruncatedOutputError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'TruncatedOutputError';
  /** Always true: a new request may well end in time. */
  readonly retryable = true;
}

/** The model refused, or a content filter stopped the answer. Not retried: it would refuse again. */
export class RefusalError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RefusalError';
  /** Always false: the model would refuse again. */
  readonly retryable = false;
}

/** What is wrong with an answer, as a validator says it: where, and what was expected there. */
export interface AnswerProblem {
  /** The JSON Pointer of the field in the answer (`/score`); `""` for the answer as a whole. */
  readonly path: string;
  /** What was expected there: `must be <= 1`, `must have required property 'label'`. */
  readonly message: string;
}

/** What a provider knows of an answer that did not parse or fit, besides the call's figures. */
export interface MalformedOutputOptions extends ProviderErrorOptions {
  /** The answer as the model gave it, as text (JSON or not): what a repair sends back. @default none (no answer to show) */
  readonly answer?: string | undefined;
  /** What is wrong with it, each problem apart. @default none */
  readonly problems?: readonly AnswerProblem[] | undefined;
}

/**
 * The answer did not parse, or did not fit the task's schema. Repaired when it carries the answer
 * (asked again with it and its problems: see the gate's `maxRepairs`), else retried as a new request.
 */
export class MalformedOutputError extends ProviderError {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'MalformedOutputError';
  /** Always true: a new request may well answer in shape. */
  readonly retryable = true;
  /** The answer as the model gave it, as text, when there was one. */
  readonly answer: string | undefined;
  /** What is wrong with it. */
  readonly problems: readonly AnswerProblem[];

  constructor(message: string, options: MalformedOutputOptions = {}) {
    super(message, options);
    this.answer = options.answer;
    this.problems = options.problems ?? [];
  }
}

/**
 * Whether `error` is a {@link ProviderError}, built by this copy of the package or by another one
 * loaded beside it (a provider published with its own copy): what the call gate trusts a
 * provider's failure by. `error.name` then says which (`'RateLimitError'`, …).
 */
export const isProviderError = brandedGuard(ProviderError, 'ProviderError');
// Each kind by brand as well, for the library's own reading of a failure: a provider built on
// another copy of the package is retried, stopped and counted as one built on this copy.
export const isRateLimitError = brandedGuard(RateLimitError, 'RateLimitError');
export const isServerError = brandedGuard(ServerError, 'ServerError');
export const isTimeoutError = brandedGuard(TimeoutError, 'TimeoutError');
export const isNetworkError = brandedGuard(NetworkError, 'NetworkError');
export const isBadRequestError = brandedGuard(BadRequestError, 'BadRequestError');
export const isNotAnApiError = brandedGuard(NotAnApiError, 'NotAnApiError');
export const isAuthenticationError = brandedGuard(AuthenticationError, 'AuthenticationError');
export const isQuotaExhaustedError = brandedGuard(QuotaExhaustedError, 'QuotaExhaustedError');
export const isTruncatedOutputError = brandedGuard(TruncatedOutputError, 'TruncatedOutputError');
export const isRefusalError = brandedGuard(RefusalError, 'RefusalError');
export const isMalformedOutputError = brandedGuard(MalformedOutputError, 'MalformedOutputError');
/** Whether the failure stops the whole run (see {@link ProviderError.stopsRun}). */
export const stopsRun = (error: unknown): error is ProviderError => isProviderError(error) && error.stopsRun;
