import { httpProviderSettings, type HttpProviderDefaults, type HttpProviderOptions, type HttpProviderSettings } from './http-api.ts';
import type { CallOptions, LlmRequest, LlmResponse, Provider, RequestFraming } from '../provider/provider.ts';
import type { BoundSdk } from './sdk-wire.ts';

/** A vendor's SDK as a provider is made from it: its defaults, and its wire bound to the settings (`bindSdk`). */
export interface SdkBinding {
  readonly defaults: HttpProviderDefaults;
  bind(settings: HttpProviderSettings): BoundSdk;
}

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
  /** The vendor's framing of a request, from its defaults. */
  readonly framing: RequestFraming;
  readonly #sdk: BoundSdk;
  #ready: Promise<void> | undefined;

  protected constructor(options: HttpProviderOptions, sdk: SdkBinding) {
    const settings = httpProviderSettings(options, sdk.defaults);
    ({ name: this.name, model: this.model, baseUrl: this.baseUrl } = settings);
    this.framing = sdk.defaults.framing;
    this.#sdk = sdk.bind(settings);
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
