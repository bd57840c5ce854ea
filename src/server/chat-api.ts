/**
 * What the server's two APIs have in common: a chat request reduced to what the answer depends on,
 * the answer, and the failures each API words in its own error shape.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { HeaderStyle } from '../provider/rate-limit-headers.ts';
import type { JsonSchema } from '../provider/json-schema.ts';

/** What the answer must be: free text, any JSON object, a value fitting a schema, or a call of a tool. */
export type AnswerShape =
  | { readonly kind: 'text' }
  | { readonly kind: 'json-object' }
  | { readonly kind: 'schema'; readonly name: string; readonly schema: JsonSchema }
  | { readonly kind: 'tool'; readonly name: string; readonly schema: JsonSchema };

/** A chat request as the server acts on it, whichever API it came through. */
export interface ChatRequest {
  readonly model: string;
  /** Every message's text, the system prompt's included: the prompt tokens are counted on it. */
  readonly promptText: string;
  /** The last user message's text: what the answer is about. */
  readonly lastUserText: string;
  readonly shape: AnswerShape;
  /** The most output tokens the request allows (`max_tokens`, OpenAI's `max_completion_tokens`); a longer answer is cut off there. */
  readonly maxOutputTokens?: number | undefined;
}

/** The answer: text, or a value (a JSON-schema answer, a tool's input); `content` is what the output tokens are counted on. */
export interface ChatAnswer {
  readonly text?: string;
  readonly value?: unknown;
  readonly content: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Cut off at the request's output token limit: `content` is its first tokens; a value (a tool's input) never finished. */
  readonly truncated?: boolean;
}

/** The failures a request can meet, each of which an API words its own way. */
export type FailureKind =
  | 'invalid-request'
  | 'authentication'
  | 'not-found'
  | 'too-large'
  | 'rate-limited'
  | 'overloaded'
  | 'timeout'
  | 'server-error';

/** The HTTP status of each failure, as both APIs answer it (Anthropic says "overloaded" with 529). */
export const FAILURE_STATUS: Readonly<Record<FailureKind, number>> = Object.freeze({
  'invalid-request': 400,
  authentication: 401,
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

/** One API's wording: where the key comes from, what a request looks like, how answers and errors are shaped. */
export interface ChatApi {
  readonly name: 'openai' | 'anthropic';
  readonly headerStyle: HeaderStyle;
  /** The response header that carries the request's id. */
  readonly requestIdHeader: string;
  /** Whether a 429 also says `retry-after-ms` (OpenAI does; Anthropic says whole seconds only). */
  readonly retryAfterMs: boolean;
  /** The API key the request carries, or undefined. */
  keyOf(headers: IncomingHttpHeaders): string | undefined;
  /** The request, or an {@link InvalidRequestError} naming the field at fault. */
  parse(body: unknown): ChatRequest;
  /** The response body for an answer. */
  respond(request: ChatRequest, answer: ChatAnswer, id: string): unknown;
  /** The status and body of a failure. */
  fail(failure: Failure, requestId: string): { status: number; body: unknown };
  /** The body of `GET /v1/models`. */
  models(ids: readonly string[]): unknown;
}

export { isRecord } from '../provider/json-schema.ts';

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
