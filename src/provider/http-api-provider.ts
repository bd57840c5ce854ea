import { ANTHROPIC_WIRE } from './anthropic-wire.ts';
import {
  cannedFetch,
  failureOf,
  httpProviderSettings,
  loadFetch,
  WARM_UP_REQUEST,
  type HttpProviderOptions,
  type HttpProviderType,
  type RefetchableClient,
  type SdkWire,
} from './http-api.ts';
import { OPENAI_WIRE } from './openai-wire.ts';
import type { CallOptions, LlmRequest, LlmResponse, Provider } from './provider.ts';

/** What a provider needs of its vendor's SDK once it is bound to the settings. */
interface BoundSdk {
  readonly loaded: Promise<unknown>;
  call(request: LlmRequest, options: CallOptions): Promise<LlmResponse>;
  warmUp(): Promise<void>;
}

const WIRES: { readonly [T in HttpProviderType]: SdkWire<never> } = {
  openai: OPENAI_WIRE as SdkWire<never>,
  anthropic: ANTHROPIC_WIRE as SdkWire<never>,
};

/**
 * A provider over an HTTP API through its vendor's official SDK — the base of {@link OpenAiProvider}
 * and {@link AnthropicProvider}, the same for both: its settings checked once (the key never
 * shown), the SDK loaded as the provider is made (so the first call does not pay for it), a warm-up
 * through the SDK to canned answers ({@link ready}), and each call sent once the SDK is there, its
 * failures mapped onto the provider errors from the HTTP status, headers and body alone.
 */
export abstract class HttpApiProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly baseUrl: string;
  readonly #sdk: BoundSdk;
  #ready: Promise<void> | undefined;

  protected constructor(options: HttpProviderOptions, vendor: HttpProviderType) {
    const wire = WIRES[vendor];
    const settings = httpProviderSettings(options, wire.defaults);
    ({ name: this.name, model: this.model, baseUrl: this.baseUrl } = settings);
    this.#sdk = bind(wire, settings);
  }

  /**
   * Resolves once a call goes without loading or compiling anything first (see
   * {@link Provider.ready}): the SDK loaded, a call of each task made through it to a canned answer
   * (the first call through an SDK costs tens of ms, the next ones one), Node's fetch loaded, the
   * answers' validators compiled. Nothing is sent. Never rejects.
   */
  ready(): Promise<void> {
    this.#ready ??= this.#sdk.warmUp();
    return this.#ready;
  }

  /**
   * Resolves once the SDK is loaded; rejects with what loading it failed with — `MissingPackageError`
   * when its package is not installed — so a caller can say so before the first call.
   */
  async loaded(): Promise<void> {
    await this.#sdk.loaded;
  }

  call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    return this.#sdk.call(request, options);
  }
}

/** The wire bound to one provider's settings: its SDK loading, its calls, its warm-up. */
function bind<Client extends RefetchableClient<Client>>(
  wire: SdkWire<Client>,
  settings: ReturnType<typeof httpProviderSettings>,
): BoundSdk {
  const sdk = wire.load(settings);
  // A failure to load is the first call's to report.
  sdk.catch(() => {});
  const context = {
    model: settings.model,
    failure: (error: unknown, errors: Parameters<typeof failureOf>[1]['errors'], call: CallOptions) =>
      failureOf(error, { errors, readBody: (body) => wire.readErrorBody(body), apiKey: settings.apiKey, call }),
  };
  return {
    loaded: sdk,
    call: async (request, options) => wire.send(await sdk, request, options, context),
    async warmUp() {
      try {
        const { client, errors } = await sdk;
        const warm = (request: LlmRequest) =>
          wire.send({ client: client.withOptions({ fetch: cannedFetch(wire.cannedAnswer()) }), errors }, request, {}, context);
        await Promise.all([warm(WARM_UP_REQUEST), loadFetch()]);
      } catch {
        // A failure to load is the first call's to report; a warm-up that failed leaves that call cold, no more.
      }
    },
  };
}

/**
 * A provider over the OpenAI chat completions API (`POST {baseUrl}/chat/completions`), or any
 * server that speaks it (vLLM, Ollama, LiteLLM), through the official `openai` SDK — its own retries
 * off, so that the call gate's limiter, breaker and retries see every attempt. Each task is asked
 * for in strict structured output (`response_format: json_schema`); the answer is read only when it
 * finished, and checked against the task's schema again. Needs the `openai` package.
 */
export class OpenAiProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, 'openai');
  }
}

/**
 * A provider over the Anthropic Messages API (`POST {baseUrl}/v1/messages`) through the official
 * `@anthropic-ai/sdk` — its own retries off, so that the call gate's limiter, breaker and retries
 * see every attempt. Each task is one tool the model is made to use; its input is checked against
 * the task's schema again. Needs the `@anthropic-ai/sdk` package.
 */
export class AnthropicProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, 'anthropic');
  }
}
