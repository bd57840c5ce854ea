import type { PackageSpec } from '../../optional-package.ts';
import type { CallOptions } from '../../provider/provider.ts';
import {
  apiBodyOf,
  failureOf,
  headersOf,
  sdkRequestOptions,
  type HttpProviderSettings,
  type SdkApiError,
  type SdkErrorClasses,
} from '../http-api.ts';
import { WARM_UP_ANSWER, type Fetch, type SdkRequestOptions, type SdkWire } from '../sdk-wire.ts';
import { decodeGemini } from './decode.ts';
import { GEMINI_DEFAULTS } from './defaults.ts';
import { encodeGemini, type GeminiBody } from './encode.ts';
import { readGeminiErrorBody } from './errors.ts';

/**
 * Google's official SDK for the Gemini API, an optional peer at the version the wire shapes were
 * read from and `serve`'s Gemini dialect is tested with. The provider and the Batch API do not load
 * it: they speak the API over `fetch` (docs/providers.md says why).
 */
export const GEMINI_SDK_PACKAGE: PackageSpec = Object.freeze({ name: '@google/genai', version: '2.32.0' });

/** The API version the calls go to: the one with structured output (`responseJsonSchema`) and the Batch API. */
export const GEMINI_API_VERSION = 'v1beta';

/** A Gemini API answer that is not a 2xx: its status, headers and parsed body, as the provider errors are mapped from. */
class GeminiStatusError extends Error implements SdkApiError {
  override readonly name = 'GeminiStatusError';
  constructor(
    readonly status: number,
    readonly headers: Headers,
    readonly error: unknown,
  ) {
    super(`${status} from the Gemini API`);
  }
}

/** The connection failed before an answer. */
class GeminiConnectionError extends Error {
  override readonly name: string = 'GeminiConnectionError';
}

/** No answer within the attempt's timeout. */
class GeminiTimeoutError extends GeminiConnectionError {
  override readonly name: string = 'GeminiTimeoutError';
}

/** The failures `post` throws, by which `failureOf` tells them apart as it does an SDK's. */
const GEMINI_ERRORS: SdkErrorClasses = {
  APIError: GeminiStatusError,
  APIConnectionError: GeminiConnectionError,
  APIConnectionTimeoutError: GeminiTimeoutError,
};

/** What a call posts with: the key, where to, and the `fetch` (a canned one for the warm-up). */
export class GeminiClient {
  readonly #settings: HttpProviderSettings;
  readonly fetch: Fetch;
  /** `{baseUrl}/v1beta/models/{model}:generateContent`, made once. */
  readonly url: string;

  constructor(settings: HttpProviderSettings, fetchImpl: Fetch) {
    this.#settings = settings;
    this.fetch = fetchImpl;
    this.url = `${modelsUrl(settings.baseUrl, settings.model)}:generateContent`;
  }

  get apiKey(): string {
    return this.#settings.apiKey;
  }

  withOptions({ fetch }: { fetch: Fetch }): GeminiClient {
    return new GeminiClient(this.#settings, fetch);
  }
}

/** `{baseUrl}/v1beta/models/{model}`: a model given as `models/…` (Google's resource name) is taken as its id. */
export function modelsUrl(baseUrl: string, model: string): string {
  const id = model.startsWith('models/') ? model.slice('models/'.length) : model;
  return `${baseUrl.replace(/\/+$/, '')}/${GEMINI_API_VERSION}/models/${encodeURIComponent(id)}`;
}

/**
 * Sends one JSON request to the Gemini API and reads its answer: the key in `x-goog-api-key`, one
 * attempt (the call gate retries), the attempt's signal and timeout. Resolves with the parsed body
 * (its text when it is not JSON and says it is not) and the response; rejects with the failures
 * `failureOf` maps — a status with its headers and body, a timeout, a connection that failed.
 */
export async function geminiRequest(
  fetchImpl: Fetch,
  url: string,
  apiKey: string,
  init: { readonly method: 'GET' | 'POST'; readonly body?: string | undefined },
  options: Pick<SdkRequestOptions, 'signal' | 'timeout'>,
): Promise<{ data: unknown; response: Response }> {
  // A timer cleared once the answer is read (not `AbortSignal.timeout`, whose timer outlives the call).
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeout);
  const caller = options.signal;
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted === true) onAbort();
  else caller?.addEventListener('abort', onAbort, { once: true });
  const headers: Record<string, string> = { 'x-goog-api-key': apiKey };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  let text: string;
  try {
    response = await fetchImpl(url, { method: init.method, headers, body: init.body, signal: controller.signal });
    text = await response.text();
  } catch (error) {
    if (caller?.aborted === true) throw error;
    if (timedOut) throw new GeminiTimeoutError('no answer in time', { cause: error });
    // fetch's own failure ("fetch failed"), its system code in the cause: `failureOf` reads it there.
    throw new GeminiConnectionError('Connection error.', { cause: error });
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onAbort);
  }
  const json = (response.headers.get('content-type') ?? '').includes('json');
  let data: unknown = text;
  try {
    data = JSON.parse(text);
  } catch (error) {
    // A body that says it is JSON and is not is malformed; any other is handed over as text.
    if (json && response.ok) throw error;
  }
  if (!response.ok) throw new GeminiStatusError(response.status, response.headers, data);
  return { data, response };
}

/**
 * The Gemini API over `fetch` (`POST {baseUrl}/v1beta/models/{model}:generateContent`), in the
 * shape every vendor's wire has: the client a `fetch` bound to the settings, no package to load.
 */
export const GEMINI_WIRE: SdkWire<GeminiClient, GeminiBody> = {
  defaults: GEMINI_DEFAULTS,
  load: async (settings) => ({ client: new GeminiClient(settings, (input, init) => fetch(input, init)), errors: GEMINI_ERRORS }),
  encode: encodeGemini,
  post: (client, body, options) =>
    geminiRequest(
      client.fetch,
      client.url,
      client.apiKey,
      // The model is the URL's: the body sends the rest.
      { method: 'POST', body: JSON.stringify({ contents: body.contents, generationConfig: body.generationConfig }) },
      options,
    ),
  decode: decodeGemini,
  /** An answer to the warm-up call: the fields the decoder reads. */
  cannedAnswer: (): Record<string, unknown> => ({
    candidates: [{ content: { role: 'model', parts: [{ text: JSON.stringify(WARM_UP_ANSWER) }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0 },
    modelVersion: 'warm-up',
    responseId: 'warm-up',
  }),
  readErrorBody: readGeminiErrorBody,
};

/**
 * One request to the Gemini API outside a live call (the Batch API's), its body read as a JSON
 * object and its failures mapped onto the provider errors as a call's are.
 */
export async function geminiJson(
  url: string,
  apiKey: string,
  init: { readonly method: 'GET' | 'POST'; readonly body?: string | undefined },
  call: CallOptions = {},
): Promise<object> {
  try {
    const { data, response } = await geminiRequest((input, options) => fetch(input, options), url, apiKey, init, sdkRequestOptions(call));
    return apiBodyOf(data, response, { headers: headersOf(response.headers) });
  } catch (error) {
    throw failureOf(error, { errors: GEMINI_ERRORS, readBody: readGeminiErrorBody, apiKey, call });
  }
}
