/**
 * What the APIs `serve` speaks have in common: a chat request reduced to what the answer depends
 * on, the answer, and what each API words in its own way — parsing, the response, the stream's
 * events and the failures. Each vendor's dialect (in its folder) implements {@link ChatApi}; the
 * server runs every chat route through the same steps and asks the route's API at each one that differs.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { brandedGuard } from '../../error-brand.ts';
import type { JsonSchema } from '../../provider/json-schema.ts';
import type { HeaderFormat } from '../header-fields.ts';

/** What the answer must be: free text, any JSON object, a value fitting a schema, or a call of a tool. */
export type AnswerShape =
  | { readonly kind: 'text' }
  | { readonly kind: 'json-object' }
  | { readonly kind: 'schema'; readonly name: string; readonly schema: JsonSchema }
  | { readonly kind: 'tool'; readonly name: string; readonly schema: JsonSchema };

/** How a request asks for the prompt cache, in its API's terms, with the vendor's minimums. */
export type CachePrefix =
  /**
   * A prefix the request marks (Anthropic's `cache_control`): the text up to the last block marked;
   * `identity` what else precedes it (the tools); cached when it has `minTokens` or more.
   */
  | { readonly kind: 'marked'; readonly text: string; readonly identity: string; readonly minTokens: number }
  /**
   * The whole prompt, cached by itself once it has `minTokens` or more, routed by `key` (OpenAI's
   * `prompt_cache_key`, `''` without one); a later prompt is served the longest prefix it shares
   * with it, in steps of `stepTokens`.
   */
  | { readonly kind: 'automatic'; readonly key: string; readonly minTokens: number; readonly stepTokens: number };

/** A chat request as the server acts on it, whichever API it came through. */
export interface ChatRequest {
  readonly model: string;
  /** Every message's text, the system prompt's included: the prompt tokens are counted on it. */
  readonly promptText: string;
  /** The last user message's text: what the answer is about. */
  readonly lastUserText: string;
  /**
   * Whether the model has spoken in the conversation (an assistant turn, a repair's unfit answer
   * among them): the simulation then answers fit, heeding what it was told. @default false
   */
  readonly answered?: boolean | undefined;
  readonly shape: AnswerShape;
  /**
   * The most output tokens the request allows (`max_tokens`, OpenAI's `max_completion_tokens`); a longer answer is cut off there.
   * @default none (no limit)
   */
  readonly maxOutputTokens?: number | undefined;
  /** Answers to make (OpenAI's `n`), each counted in the usage. @default 1 */
  readonly choices?: number | undefined;
  /** Stop sequences: a text answer ends before the first of them it contains. @default none */
  readonly stop?: readonly string[] | undefined;
  /** Streamed as server-sent events; `includeUsage` adds OpenAI's usage chunk. @default none (one response) */
  readonly stream?: { readonly includeUsage: boolean } | undefined;
  /** Each output token's log probability, with this many alternatives. @default none */
  readonly logprobs?: { readonly top: number } | undefined;
  /** How the request asks for the prompt cache (Anthropic's marked prefix, OpenAI's automatic one). @default none (not cached) */
  readonly cachePrefix?: CachePrefix | undefined;
  /** What the API echoes back in its answer (the Responses API's request fields). @default none */
  readonly echo?: Readonly<Record<string, unknown>> | undefined;
}

/** Why an answer ended, in no API's words: done, cut off at the token limit, at a stop sequence, or a tool call. */
export type FinishReason = 'end' | 'length' | 'stop-sequence' | 'tool';

/** One output token's log probability and its likeliest alternatives. */
export interface TokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: readonly number[];
  readonly top: readonly { readonly token: string; readonly logprob: number; readonly bytes: readonly number[] }[];
}

/** One answer (of `choices`). */
export interface AnswerChoice {
  /** A tool's input or a schema's value, when the answer is one and it was finished. */
  readonly value?: unknown;
  /** What is sent: the text, or the value's JSON — the first tokens of it when cut off. */
  readonly content: string;
  /** `content` token by token, as a stream sends it; empty unless the request streams or asks for log probabilities. */
  readonly pieces: readonly string[];
  readonly outputTokens: number;
  readonly finish: FinishReason;
  /** The stop sequence that ended it (with `finish: 'stop-sequence'`). */
  readonly stopSequence?: string | undefined;
  /** Per token of `pieces`, when the request asked for them. */
  readonly logprobs?: readonly TokenLogprob[] | undefined;
}

/** The answer: one choice or more, and the usage they make together. */
export interface ChatAnswer {
  readonly choices: readonly AnswerChoice[];
  /** The prompt's tokens, those the prompt cache served or stored included. */
  readonly inputTokens: number;
  /** Of `inputTokens`, those the prompt cache served. @default 0 */
  readonly cacheReadTokens?: number | undefined;
  /** Of `inputTokens`, those written to the prompt cache (Anthropic's reports them). @default 0 */
  readonly cacheWriteTokens?: number | undefined;
  /** Every choice's output tokens. */
  readonly outputTokens: number;
  /** When the answer was made, Unix seconds (what `created` fields say). */
  readonly createdSeconds: number;
}

/** One server-sent event: `event:` (when the API names its events) and `data:`, and the output tokens it carries. */
export interface StreamEvent {
  readonly event?: string | undefined;
  /** The data line, as sent: JSON, or OpenAI's `[DONE]`. */
  readonly data: string;
  /** Output tokens this event delivers: what the stream's pacing waits for. 0 for framing events. */
  readonly tokens: number;
}

/** The failures a request can meet, each of which an API words its own way. */
export type FailureKind =
  | 'invalid-request'
  | 'authentication'
  | 'permission'
  | 'insufficient-funds'
  | 'not-found'
  | 'too-large'
  | 'rate-limited'
  | 'overloaded'
  | 'timeout'
  | 'server-error';

/** The HTTP status of each failure, as most APIs answer it (a dialect may differ: Anthropic says "overloaded" with 529). */
export const FAILURE_STATUS: Readonly<Record<FailureKind, number>> = Object.freeze({
  'invalid-request': 400,
  authentication: 401,
  permission: 403,
  // OpenAI's: a 429 whose code says the money, not the rate, ran out (`insufficient_quota`).
  'insufficient-funds': 429,
  'not-found': 404,
  'too-large': 413,
  'rate-limited': 429,
  'server-error': 500,
  overloaded: 503,
  timeout: 504,
});

export interface Failure {
  readonly kind: FailureKind;
  readonly message: string;
  /** The request field at fault (OpenAI's `param`). */
  readonly param?: string | undefined;
  /** A machine-readable code (OpenAI's `code`). */
  readonly code?: string | undefined;
  /** Which limit refused a 429: requests or tokens. */
  readonly limit?: 'requests' | 'tokens' | undefined;
}

/** A request the API refuses as it stands (400). */
export class InvalidRequestError extends Error {
  override readonly name = 'InvalidRequestError';
  readonly param: string | undefined;
  readonly code: string | undefined;

  constructor(message: string, param?: string, code?: string) {
    super(message);
    this.param = param;
    this.code = code;
  }
}

/** Whether `value` is an {@link InvalidRequestError}: what a dialect throws for a request its API refuses, the server answers as its 400. */
export const isInvalidRequestError = brandedGuard(InvalidRequestError, 'InvalidRequestError');

/** How requests are read: whether OpenAI's strict-mode schema rules are enforced, and what the key was answered before. */
export interface ParseOptions {
  /** Take any schema with `strict: true`, as other OpenAI-compatible servers do. */
  readonly lenientSchemas: boolean;
  /**
   * The conversation of an earlier response to the same key, by its id (the Responses API's `previous_response_id`).
   * @default none (a `previous_response_id` is answered as not found)
   */
  readonly previousResponse?: ((id: string) => { readonly promptText: string } | undefined) | undefined;
  /**
   * The route's `{id}` segment, for an API that names part of the request in its path (a model
   * named there rather than in the body). @default none (a batch row, a route without one)
   */
  readonly routeId?: string | undefined;
}

/**
 * One API's wording: where the key comes from, what a request looks like, how answers, streams and
 * errors are shaped. The server runs every chat route through the same steps and asks its API at
 * each one that differs.
 */
export interface ChatApi {
  /** Names the API in messages (`openai`, `responses`). */
  readonly name: string;
  /** The vendor's rate-limit headers, which every answer to an accepted key carries. */
  readonly headers: HeaderFormat;
  /** The response header that carries the request's id. */
  readonly requestIdHeader: string;
  /** Whether a 429 also says `retry-after-ms` (OpenAI does; Anthropic says whole seconds only). */
  readonly retryAfterMs: boolean;
  /**
   * What a request over the key's quota meets: a 429 (`refuse`, as the vendors answer), or a wait
   * until the quota has room (`queue`, as a self-hosted server such as vLLM holds it). @default 'refuse'
   */
  readonly overQuota?: 'refuse' | 'queue' | undefined;
  /** The 401's message when a request carries no key. */
  readonly missingKeyMessage: string;
  /** The 401's message for a key the server does not accept: the vendor's, never quoting the key whole. */
  refusedKeyMessage(key: string): string;
  /** The request field a schema that cannot be answered is blamed on. */
  readonly schemaParam: string;
  /** The API key the request carries, or undefined. */
  keyOf(headers: IncomingHttpHeaders): string | undefined;
  /** The request, or an {@link InvalidRequestError} naming the field at fault. */
  parse(body: unknown, options: ParseOptions): ChatRequest;
  /** The response body for an answer. */
  respond(request: ChatRequest, answer: ChatAnswer, id: string): unknown;
  /** The answer as this API streams it, event by event. */
  stream(request: ChatRequest, answer: ChatAnswer, id: string): StreamEvent[];
  /** The event that ends a stream which failed midway (the provider went down). */
  streamFailure(failure: Failure, requestId: string): StreamEvent;
  /**
   * The status and body of a failure; `retryAfterMs`, the wait a 429 asks for (finite), for an API
   * that says it in the body rather than in `retry-after`.
   */
  fail(failure: Failure, requestId: string, retryAfterMs?: number): { status: number; body: unknown };
  /** The body of `GET /v1/models`. */
  models(ids: readonly string[]): unknown;
  /** The body of `GET /v1/models/{id}`. */
  model(id: string): unknown;
  /** The id `GET /v1/responses/{id}` finds this answer by, when the API keeps its answers and the request lets it. */
  keptAs?(request: ChatRequest, id: string): string | undefined;
}

/**
 * Whether `value` is a JSON object (not an array, not null). The provider contract has its own; the
 * dialects keep theirs so that, loaded only by `serve`, they share no module with a plain run.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON type of a value, as error messages name it. */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

/** The bearer token of an `Authorization` header. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const match = /^Bearer\s+(\S.*)$/i.exec(headers.authorization ?? '');
  return match?.[1]?.trim();
}

/** A positive whole number of tokens, when the field is there at all. */
export function readTokenLimit(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw new InvalidRequestError(`Invalid '${field}': expected an integer >= 1, got ${JSON.stringify(value)}.`, field);
  }
  return value as number;
}

/** One server-sent event as it goes on the wire. */
export function formatEvent(event: StreamEvent): string {
  return event.event === undefined ? `data: ${event.data}\n\n` : `event: ${event.event}\ndata: ${event.data}\n\n`;
}
