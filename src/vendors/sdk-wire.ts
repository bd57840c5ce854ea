import {
  DEFAULT_MAX_OUTPUT_TOKENS,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type ResponseHeaders,
} from '../provider/provider.ts';
import {
  apiBodyOf,
  failureOf,
  headersOf,
  sdkRequestOptions,
  type ErrorBody,
  type HttpProviderDefaults,
  type HttpProviderSettings,
  type SdkErrorClasses,
  type StatusMeaning,
} from './http-api.ts';

/**
 * What a provider warms up on: one call through the SDK to a canned answer (see
 * {@link cannedFetch}), nothing of it sent. Its schema is a small one of its own: the run's tasks
 * are compiled on their first call.
 */
export const WARM_UP_REQUEST: LlmRequest = Object.freeze({
  task: 'warm_up',
  articleId: 'warm-up',
  prompt: 'A call made to a canned answer; nothing is sent.',
  schema: Object.freeze({
    type: 'object',
    properties: Object.freeze({ ready: Object.freeze({ type: 'boolean' }) }),
    required: Object.freeze(['ready']),
    additionalProperties: false,
  }),
});

/** What the warm-up call answers: a value that fits its schema. */
export const WARM_UP_ANSWER: Readonly<Record<string, unknown>> = Object.freeze({ ready: true });

/**
 * A `fetch` that answers every request with `body` as JSON and sends nothing: an SDK client made
 * with it runs its whole request and response code without a network.
 */
export function cannedFetch(body: unknown): Fetch {
  const text = JSON.stringify(body);
  return async () => new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
}

/** Loads Node's own `fetch`, which Node loads on its first use: a `data:` URL needs no network. */
export async function loadFetch(): Promise<void> {
  await (await fetch('data:,')).arrayBuffer();
}

/** An official SDK as a provider holds it: its client, and its error classes to tell failures apart. */
export interface Sdk<Client> {
  readonly client: Client;
  readonly errors: SdkErrorClasses;
}

/** A `fetch` as the SDKs take one. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A client that can be copied with another `fetch`, as both official SDKs' clients can. */
export interface RefetchableClient<Client> {
  withOptions(options: { fetch: Fetch }): Client;
}

/** One request's options as an SDK takes them: the attempt's signal, its timeout, no retries of its own. */
export type SdkRequestOptions = ReturnType<typeof sdkRequestOptions>;

/** What a response came with, for the answer's decoding and the errors it may throw. */
export interface ResponseMeta {
  /** The response's headers, lower-case names. */
  readonly headers: ResponseHeaders;
}

/**
 * One vendor's API as a provider speaks it: a request encoded as the vendor's body, an answer
 * decoded from the vendor's response body — the two halves a live call joins and a batch row and
 * batch result use apart — its error bodies read, and its official SDK loaded and posted through.
 * `HttpApiProvider` does the rest, the same for every vendor.
 */
export interface SdkWire<Client extends RefetchableClient<Client>, Body extends object> {
  readonly defaults: HttpProviderDefaults;
  /** Loads the SDK and makes its client (its own retries off: see `sdkClientOptions`). */
  load(settings: HttpProviderSettings): Promise<Sdk<Client>>;
  /** The vendor's request body for `request`: what a live call sends, and what a batch row carries. */
  encode(request: LlmRequest, model: string, maxOutputTokens: number): Body;
  /** Posts an encoded body through the SDK; resolves with the parsed body and the raw response. */
  post(client: Client, body: Body, options: SdkRequestOptions): Promise<{ data: unknown; response: Response }>;
  /**
   * Reads the vendor's response body (a JSON object, trusted in nothing) as the answer to `request`,
   * or throws what it means: cut off, refused, malformed, an answer that does not fit the schema.
   */
  decode(request: LlmRequest, body: object, meta: ResponseMeta, maxOutputTokens: number): Promise<LlmResponse>;
  /** The vendor's response body answering the warm-up call as a model would. */
  cannedAnswer(): unknown;
  /** Reads an error body as the vendor shapes it. */
  readErrorBody(body: unknown): ErrorBody;
  /** What the host means by a status where it differs from what the status says (Groq's 498). @default what the status says */
  readonly statusMeaning?: ((status: number) => StatusMeaning | undefined) | undefined;
}

/** What a provider needs of its vendor's SDK once it is bound to the settings. */
export interface BoundSdk {
  /** Settles once the SDK package has loaded (rejects when it is not installed). */
  readonly loaded: Promise<unknown>;
  /** Makes one call through the SDK: the request encoded, the answer decoded, a failure mapped to a provider error. */
  call(request: LlmRequest, options: CallOptions): Promise<LlmResponse>;
  /** The body a call of `request` sends: what shapes the answer, with the model and the output cap. */
  encode(request: LlmRequest, maxOutputTokens: number): object;
  /** Loads what the first call would otherwise load (the SDK, the answers' validators); never rejects. */
  warmUp(): Promise<void>;
}

/** The wire bound to one provider's settings: its SDK loading, its calls, its warm-up. */
export function bindSdk<Client extends RefetchableClient<Client>, Body extends object>(
  wire: SdkWire<Client, Body>,
  settings: HttpProviderSettings,
): BoundSdk {
  const sdk = wire.load(settings);
  // A failure to load is the first call's to report.
  sdk.catch(() => {});
  const send = async ({ client, errors }: Sdk<Client>, request: LlmRequest, options: CallOptions): Promise<LlmResponse> => {
    const maxOutputTokens = options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
    const body = wire.encode(request, settings.model, maxOutputTokens);
    const { data, response } = await wire.post(client, body, sdkRequestOptions(options)).catch((error: unknown) => {
      throw failureOf(error, {
        errors,
        readBody: (errorBody) => wire.readErrorBody(errorBody),
        apiKey: settings.apiKey,
        call: options,
        statusMeaning: wire.statusMeaning,
      });
    });
    const headers = headersOf(response.headers);
    // A server that is only nearly compatible may send any JSON: the decoder trusts nothing of the shape.
    return wire.decode(request, apiBodyOf(data, response, { headers }), { headers }, maxOutputTokens);
  };
  return {
    loaded: sdk,
    call: async (request, options) => send(await sdk, request, options),
    encode: (request, maxOutputTokens) => wire.encode(request, settings.model, maxOutputTokens),
    async warmUp() {
      try {
        const { client, errors } = await sdk;
        const canned = { client: client.withOptions({ fetch: cannedFetch(wire.cannedAnswer()) }), errors };
        await Promise.all([send(canned, WARM_UP_REQUEST, {}), loadFetch()]);
      } catch {
        // A failure to load is the first call's to report; a warm-up that failed leaves that call cold, no more.
      }
    },
  };
}
