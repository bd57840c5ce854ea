/**
 * What the OpenAI and Anthropic providers share: their options and the official SDKs' settings,
 * and the mapping of what an SDK throws onto the provider error vocabulary — from the HTTP
 * status, headers and body, never from message text.
 */

import { retryAfterOf } from './header-fields.ts';
import { RETRY_DEFAULTS } from '../retry/retry.ts';
import { checkObject, checkString, expected } from '../validation/checks.ts';
import {
  AuthenticationError,
  BadRequestError,
  MalformedOutputError,
  NetworkError,
  NotAnApiError,
  QuotaExhaustedError,
  RateLimitError,
  ServerError,
  TimeoutError,
  type CallOptions,
  type LlmResponse,
  type PromptCacheRatios,
  type ProviderErrorOptions,
  type RequestFraming,
  type ResponseHeaders,
  type TokenUsage,
} from '../provider/provider.ts';

/** How to reach an HTTP API: shared by every vendor's provider (OpenAI and compatible servers, Azure OpenAI, Anthropic). */
export interface HttpProviderOptions {
  /**
   * The API key. Sent only in the request's auth header: it never appears in an error message, a
   * log line or a result (a provider that echoes it back has it blanked out).
   */
  readonly apiKey: string;
  /** Names the provider in logs, metrics and routing. @default the vendor's (`OPENAI_DEFAULTS.name`, …) */
  readonly name?: string | undefined;
  /** The model to ask; for Azure OpenAI, the deployment. @default the vendor's (`OPENAI_DEFAULTS.model`, …); Azure has none */
  readonly model?: string | undefined;
  /**
   * The API's base URL, as the vendor's SDK takes it (`…/v1` for OpenAI, the host root for Anthropic;
   * for Azure OpenAI the resource's endpoint, `https://NAME.openai.azure.com`).
   * @default the vendor's (`OPENAI_DEFAULTS.baseUrl`, …); Azure has none
   */
  readonly baseUrl?: string | undefined;
  /** The API version, for a vendor that takes one (Azure OpenAI's `api-version`, `2024-10-21`): required there, refused elsewhere. @default none */
  readonly apiVersion?: string | undefined;
  /**
   * The rate-limit dialect of the host, for a vendor whose API many hosts speak (OpenAI's:
   * `openai`, `groq`, `together`, `mistral`, `none`); refused by the others.
   * @default guessed from the base URL's host, else the vendor's own
   */
  readonly headers?: string | undefined;
}

/**
 * What a host means by an HTTP status where it differs from what the status says: a refusal
 * because the host is at capacity (`overloaded`: retried, counted as the provider's ill health),
 * or a rate limit; `says` words it for the error's message.
 */
export interface StatusMeaning {
  /** `overloaded`: a `ServerError` (retried, the breaker's to count); `rate-limited`: a `RateLimitError`. */
  readonly means: 'overloaded' | 'rate-limited';
  /** What the status means, in the error's message after the status. */
  readonly says: string;
}

/** What an HTTP API is unless told otherwise. */
export interface HttpProviderDefaults {
  /** The name the provider goes by unless told otherwise: the vendor's `type`. */
  readonly name: string;
  /** The vendor as messages and help name it (`OpenAI`, `Azure OpenAI`). */
  readonly label: string;
  /**
   * `gen_ai.provider.name`, as the OpenTelemetry GenAI conventions list the vendor (`openai`,
   * `anthropic`, `gcp.gemini`): what tracing names its calls by, and part of a task's fingerprint.
   */
  readonly genAiProviderName: string;
  /** Where the API is; undefined when each user's differs and must be given (Azure's endpoint). */
  readonly baseUrl: string | undefined;
  /** The model asked; undefined when it must be given (Azure's deployment). */
  readonly model: string | undefined;
  /** Whether the API takes an `apiVersion` (required then): Azure OpenAI's `api-version`. @default false */
  readonly takesApiVersion?: boolean | undefined;
  /** An API version it takes, as help and messages show one (`2024-10-21`). @default none */
  readonly apiVersionExample?: string | undefined;
  /** What its base URL looks like, as help and a run stopped by a 404 say it (`Anthropic's is the host root`). */
  readonly baseUrlHint: string;
  /** What else the `type` reaches, as `--provider`'s help says it (`any OpenAI-compatible server`). @default nothing else */
  readonly alsoMeans?: string | undefined;
  /**
   * The limit dialects of the hosts that speak its API (OpenAI's: `openai`, `groq`, …), the
   * providers file's `headers` choices; the vendor's own first. @default none (no `headers` taken)
   */
  readonly hostHeaders?: readonly string[] | undefined;
  /** What the providers file calls `baseUrl` and `model` for this vendor (Azure's `endpoint`, `deployment`). @default the same names */
  readonly fileNames?: { readonly baseUrl: string; readonly model: string } | undefined;
  /** The environment variable the command line and the providers file read the key from (the library never reads it). */
  readonly apiKeyEnv: string;
  /** The tokens the vendor's API adds to each request beyond its text, from its documentation. */
  readonly framing: RequestFraming;
  /** What its prompt cache bills, as fractions of the input price, from its price list. */
  readonly promptCacheRatios: PromptCacheRatios;
  /** Whether its token limits count the input tokens its prompt cache serves. */
  readonly limitsCountCacheReads: boolean;
}

/** The options after validation, defaults applied. */
export interface HttpProviderSettings {
  /** The API key (never shown in messages). */
  readonly apiKey: string;
  /** Names the provider in logs, results and figures. */
  readonly name: string;
  /** The model the calls ask for. */
  readonly model: string;
  /** The API's base URL. */
  readonly baseUrl: string;
  /** The API version (Azure OpenAI's `api-version`); undefined for the vendors that take none. */
  readonly apiVersion: string | undefined;
}

/** Checks the options and fills in the vendor's defaults; throws `TypeError` for a bad one (never showing the key). */
export function httpProviderSettings(options: HttpProviderOptions, defaults: HttpProviderDefaults): HttpProviderSettings {
  checkObject('options', options);
  const { apiKey, name = defaults.name, model = defaults.model, baseUrl = defaults.baseUrl, apiVersion } = options;
  // Never shown, whatever it is: only what kind of value it was.
  if (typeof apiKey !== 'string' || apiKey === '') {
    throw new TypeError(`Expected apiKey to be a non-empty string, got ${apiKey === '' ? 'an empty string' : typeof apiKey}`);
  }
  // A header cannot carry these; fetch would say so quoting the key.
  if (!isHeaderSafe(apiKey)) {
    throw new TypeError(
      'Expected apiKey to be a string an HTTP header can carry, got one with a line break, a control character or a non-Latin-1 character',
    );
  }
  checkString('name', name);
  if (model === undefined)
    throw expected('model', `given (${defaults.name} has no default: name the ${defaults.fileNames?.model ?? 'model'})`, model);
  checkString('model', model);
  if (baseUrl === undefined) {
    throw expected('baseUrl', `given (${defaults.name} has no default: name the ${defaults.fileNames?.baseUrl ?? 'base URL'})`, baseUrl);
  }
  if (defaults.takesApiVersion === true) checkString('apiVersion', apiVersion);
  else if (apiVersion !== undefined) throw expected('apiVersion', `left out (${defaults.name} takes none)`, apiVersion);
  if (!isHttpUrl(baseUrl)) throw expected('baseUrl', 'an http:// or https:// URL', maskCredentials(String(baseUrl)));
  if (hasCredentials(baseUrl))
    throw expected('baseUrl', 'a URL without a user name or password (the key is apiKey)', maskCredentials(baseUrl));
  return { apiKey, name, model, baseUrl, apiVersion };
}

/** Whether an API key can go in an HTTP header: Latin-1, no control characters (a line break would end the header). */
export function isHeaderSafe(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f || code > 0xff) return false;
  }
  return true;
}

/** Whether `text` is an absolute http(s) URL. */
export function isHttpUrl(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** Whether an http(s) URL carries a user name or password (`http://user:secret@host`): fetch refuses those. */
export function hasCredentials(text: string): boolean {
  const { username, password } = new URL(text);
  return username !== '' || password !== '';
}

/** The URL with any user name and password masked, for messages. */
export function maskCredentials(text: string): string {
  return text.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1***@');
}

/**
 * Settings every official SDK client gets: the key and URL as given (so the SDK reads neither from
 * the environment), its own retries off — the call gate retries, so every attempt takes its token
 * and every 429 reaches the limiter — and its console logging off.
 */
export function sdkClientOptions(settings: HttpProviderSettings): {
  apiKey: string;
  baseURL: string;
  maxRetries: 0;
  logLevel: 'off';
} {
  return { apiKey: settings.apiKey, baseURL: settings.baseUrl, maxRetries: 0, logLevel: 'off' };
}

/** Node's timers take at most this many ms (about 24.8 days); the SDKs' request timeout is one. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One request's SDK options: the attempt's signal, and what is left of the deadline as its timeout (whole ms, >= 1). */
export function sdkRequestOptions(options: CallOptions): { signal?: AbortSignal | undefined; timeout: number; maxRetries: 0 } {
  return { signal: options.signal, timeout: timeoutOf(options), maxRetries: 0 };
}

function timeoutOf(options: CallOptions): number {
  return Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(options.timeoutMs ?? Infinity)));
}

/** An SDK error class, as both official SDKs (generated alike) define them. */
export type ErrorClass<T = Error> = abstract new (...args: never[]) => T;

/** What an SDK's `APIError` carries: the HTTP status, the response headers and the parsed body. */
export interface SdkApiError extends Error {
  readonly status: number | undefined;
  readonly headers: Headers | undefined;
  readonly error: unknown;
}

/** The SDK's error classes the mapping tells apart. */
export interface SdkErrorClasses {
  readonly APIError: ErrorClass<SdkApiError>;
  readonly APIConnectionError: ErrorClass;
  readonly APIConnectionTimeoutError: ErrorClass;
}

/** Where an error body keeps its machine-readable codes and its message, as the vendor shapes it; anything may be missing. */
export interface ErrorBody {
  /** OpenAI's `error.code` and `error.type`; Anthropic's `error.type`. */
  readonly codes: readonly unknown[];
  /** The error's message, as the vendor wrote it. */
  readonly message: unknown;
  /**
   * What the failure is when the body says it and the status does not: a key refused with a 400
   * (a reason such as `API_KEY_INVALID`), a rate limit answered with another status.
   * @default what the status says
   */
  readonly means?: 'refused-key' | 'rate-limited' | undefined;
  /**
   * The wait the body asks for, in ms (a `RetryInfo` detail's `retryDelay`), for a vendor that says
   * it there rather than in `retry-after`; the header wins when both say. @default none
   */
  readonly retryAfterMs?: number | undefined;
}

interface FailureContext {
  readonly errors: SdkErrorClasses;
  /** Reads the body of an `APIError` as the vendor shapes it. */
  readonly readBody: (body: unknown) => ErrorBody;
  /** The API key: blanked out of any message the provider sends back. */
  readonly apiKey: string;
  /** The call's options: an aborted signal rejects with its reason, the timeout is named in the message. */
  readonly call: CallOptions;
  /** What the host means by a status, where it differs from what the status says. @default what the status says */
  readonly statusMeaning?: ((status: number) => StatusMeaning | undefined) | undefined;
}

/**
 * What to reject a call with, given what the SDK threw: `signal.reason` when the caller aborted; a
 * {@link TimeoutError} when the request outlived the deadline; a {@link NetworkError} with the
 * system's code (`ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`, a TLS code) when the connection failed;
 * a {@link MalformedOutputError} when the body was not JSON; the status's error otherwise
 * ({@link errorFromStatus}). Anything else is passed on as it is.
 */
export function failureOf(error: unknown, context: FailureContext): unknown {
  const failure = classifyFailure(error, context);
  // Whatever fetch or the SDK said may quote the key (a key with a newline in it is "an invalid
  // header value", quoted whole): it never leaves here.
  if (failure instanceof Error && context.apiKey.length >= SHORTEST_KEY_BLANKED && failure.message.includes(context.apiKey)) {
    const clean = new Error(blankOut(failure.message, context.apiKey));
    clean.name = failure.name;
    return clean;
  }
  return failure;
}

function classifyFailure(error: unknown, context: FailureContext): unknown {
  const { errors, call } = context;
  if (call.signal?.aborted) return call.signal.reason;
  if (error instanceof errors.APIConnectionTimeoutError) {
    const timeoutMs = timeoutOf(call);
    return new TimeoutError(`no answer within ${timeoutMs} ms`, { timeoutMs });
  }
  // Connection failures are APIErrors too, without a status.
  if (error instanceof errors.APIError && error.status !== undefined) {
    const meaning = context.statusMeaning?.(error.status);
    return errorFromStatus(error.status, headersOf(error.headers), context.readBody(error.error), context.apiKey, meaning);
  }
  if (error instanceof SyntaxError) return new MalformedOutputError(`the response body is not JSON (${error.message})`);
  const cause = systemCause(error);
  if (cause !== undefined) {
    const neverSent = isBeforeRequest(cause.code);
    return new NetworkError(`network error (${cause.code}): ${cause.message.trim()}`, { code: cause.code, cause, neverSent });
  }
  if (error instanceof errors.APIConnectionError) {
    // The SDK says only "Connection error."; what fetch said beneath it ("bad port") is the news.
    const root = rootCause(error);
    const detail = root === error ? '' : ` (${root.message})`;
    // fetch refuses a port it never connects to (9, 25, 6000, …) before anything leaves.
    return new NetworkError(`network error: ${error.message}${detail}`, { cause: error, neverSent: root.message === 'bad port' });
  }
  return error;
}

/**
 * The failure an HTTP error status means, with the body's codes deciding between a rate limit and
 * an empty account (OpenAI's `insufficient_quota`), the body's own word where the status says too
 * little (a key refused with a 400, a wait in the body), and `x-should-retry: false` obeyed.
 */
function errorFromStatus(status: number, headers: ResponseHeaders, body: ErrorBody, apiKey: string, meaning?: StatusMeaning): Error {
  const codes = body.codes.filter((code): code is string => typeof code === 'string' && code !== '');
  const said = typeof body.message === 'string' && body.message !== '' ? `: ${blankOut(body.message, apiKey)}` : '';
  const options = { status, headers };
  if (status === 401 || status === 403 || body.means === 'refused-key') {
    // The provider's message may quote the key, even masked: only its code is kept.
    const code = codes[0];
    return new AuthenticationError(`${status} the API key was refused${code === undefined ? '' : ` (${code})`}`, options);
  }
  if (status === 402 || (status === 429 && codes.includes('insufficient_quota'))) {
    return new QuotaExhaustedError(`${status} no credit or quota left on the account${said}`, options);
  }
  const retryable = headers['x-should-retry'] === 'false' ? false : undefined;
  const retryAfterMs = retryAfterOf(headers) ?? bodyWaitMs(body.retryAfterMs);
  if (meaning?.means === 'overloaded') return new ServerError(`${status} ${meaning.says}${said}`, { ...options, retryAfterMs, retryable });
  if (meaning?.means === 'rate-limited')
    return new RateLimitError(`${status} rate limited, ${meaning.says}${said}`, { ...options, retryAfterMs, retryable });
  if (status === 429 || body.means === 'rate-limited')
    return new RateLimitError(`${status} rate limited${said}`, { ...options, retryAfterMs, retryable });
  if (status >= 500) return new ServerError(`${status} server error${said}`, { ...options, retryAfterMs, retryable });
  return new BadRequestError(`${status} request rejected${said}`, options);
}

/** A wait an error body asks for, when it is one, capped as a header's is. */
function bodyWaitMs(ms: number | undefined): number | undefined {
  return typeof ms === 'number' && ms >= 0 ? Math.min(ms, RETRY_DEFAULTS.maxRetryAfterMs) : undefined;
}

/**
 * The tokens a response reports, when it reports both counts (a nearly compatible server may not);
 * `cache` the prompt cache's reads and writes, when it counts them, already among `inputTokens`.
 */
export function usageOf(
  inputTokens: unknown,
  outputTokens: unknown,
  cache: { read?: unknown; write?: unknown } = {},
): TokenUsage | undefined {
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined;
  const read = isCount(cache.read) ? cache.read : 0;
  const write = isCount(cache.write) ? cache.write : 0;
  return {
    inputTokens,
    outputTokens,
    ...(read > 0 && { cacheReadTokens: read }),
    ...(write > 0 && { cacheWriteTokens: write }),
  };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * What a response body says of the answer besides its output — the model that answered, the
 * answer's id, why each choice stopped — each only when it is a string: a nearly compatible server
 * may send anything.
 */
export function answerFacts(
  model: unknown,
  id: unknown,
  finishReasons: readonly unknown[],
): Pick<LlmResponse, 'model' | 'id' | 'finishReasons'> {
  const reasons = finishReasons.filter((reason): reason is string => typeof reason === 'string');
  return {
    model: typeof model === 'string' ? model : undefined,
    id: typeof id === 'string' ? id : undefined,
    finishReasons: reasons.length === 0 ? undefined : reasons,
  };
}

/**
 * The body of a 2xx response, which must be a JSON object: the SDKs hand over a body that is not
 * JSON as its text, and a web page answering 200 is no API's answer (`NotAnApiError`).
 */
export function apiBodyOf(data: unknown, response: Response, meta: ProviderErrorOptions): object {
  if (typeof data === 'object' && data !== null) return data;
  const type = response.headers.get('content-type')?.split(';')[0]?.trim();
  const text = typeof data === 'string' ? data.trim().replace(/\s+/g, ' ') : (JSON.stringify(data) ?? String(data));
  const start = text.length > 60 ? `${text.slice(0, 59)}…` : text;
  throw new NotAnApiError(
    `${response.status} with ${type === undefined || type === '' ? 'no content type' : type}, not a JSON object${start === '' ? '' : `: ${JSON.stringify(start)}`}`,
    { ...meta, status: response.status },
  );
}

/** Response headers as the gate reads them: a plain record, names lower-case. */
export function headersOf(headers: Headers | undefined): ResponseHeaders {
  return headers === undefined ? {} : Object.fromEntries(headers.entries());
}

/**
 * The system codes of a connection that failed before a byte of the request was written: refused,
 * no route, a name that does not resolve, a connect that timed out, a TLS handshake that failed
 * (a certificate refused, a protocol no side speaks). A reset or a close (`ECONNRESET`, `EPIPE`,
 * undici's `UND_ERR_SOCKET`, "socket hang up") may come once the request is on its way: not here.
 */
const BEFORE_REQUEST = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a connection that failed with `code` failed before its request was written (see BEFORE_REQUEST; OpenSSL's `ERR_SSL_…` are the handshake's). */
/** Whether a system error `code` says the request never left: refused, unresolved, unreachable, its TLS handshake failed. */
export function isBeforeRequest(code: string): boolean {
  return BEFORE_REQUEST.has(code) || code.startsWith('ERR_SSL_');
}

/** The first error down the `cause` chain with a system code (`ECONNREFUSED`, `ERR_SSL_…`, `UND_ERR_SOCKET`). */
function systemCause(error: unknown): (Error & { code: string }) | undefined {
  const seen = new Set<unknown>();
  for (let at = error; at instanceof Error && !seen.has(at); at = at.cause) {
    seen.add(at);
    const { code } = at as { code?: unknown };
    if (typeof code === 'string' && code !== '') return at as Error & { code: string };
  }
  return undefined;
}

/** The innermost error of a cause chain. */
function rootCause(error: Error): Error {
  const seen = new Set<unknown>([error]);
  let root = error;
  while (root.cause instanceof Error && !seen.has(root.cause)) {
    root = root.cause;
    seen.add(root);
  }
  return root;
}

/** Keys this short are no real provider's (a test's `k`): blanking them would only garble the message. */
const SHORTEST_KEY_BLANKED = 8;

function blankOut(text: string, secret: string): string {
  return secret.length < SHORTEST_KEY_BLANKED ? text : text.split(secret).join('[key]');
}
