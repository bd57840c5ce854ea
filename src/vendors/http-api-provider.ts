import { httpProviderSettings, type HttpProviderDefaults, type HttpProviderOptions, type HttpProviderSettings } from './http-api.ts';
import type {
  CallOptions,
  LlmRequest,
  LlmResponse,
  PromptCacheRatios,
  Provider,
  ProviderTarget,
  RequestFraming,
  ResponseHeaders,
} from '../provider/provider.ts';
import type { JsonSchema } from '../provider/json-schema.ts';
import type { RateLimitSignals } from '../provider/rate-limit-signals.ts';
import { readRateLimits, type HeaderFormat } from './header-fields.ts';
import { IETF_HEADERS } from './ietf-rate-limit-headers.ts';
import type { BoundSdk } from './sdk-wire.ts';
import { expected } from '../validation/checks.ts';

/** A vendor's SDK as a provider is made from it: its defaults, its dialect, and its wire bound to the settings (`bindSdk`). */
export interface SdkBinding {
  /** The vendor's defaults: name, base URL, model, key variable. */
  readonly defaults: HttpProviderDefaults;
  /** The vendor's rate-limit headers, which its responses carry. */
  readonly headers: HeaderFormat;
  /** Why the vendor's API would refuse a schema, in its words; undefined when it takes it. @default takes every schema */
  readonly schemaProblem?: ((schema: JsonSchema) => string | undefined) | undefined;
  /** Binds the SDK to a provider's settings: what its calls go through. */
  bind(settings: HttpProviderSettings): BoundSdk;
  /**
   * The limit dialect of the host, for a vendor whose API many hosts speak (OpenAI's); `headers`
   * above is that dialect's. @default none: the vendor's own, and a `headers` option is refused
   */
  readonly dialect?: HeaderDialect | undefined;
}

/** The limit dialect a provider reads its host's answers in, as messages say it. */
export interface HeaderDialect {
  /** Its name, as the providers file's `headers` gives it (`groq`). */
  readonly name: string;
  /** The host as messages name it (`Groq`). */
  readonly label: string;
  /** The base URL's host it was guessed from; undefined when it was told, or is the vendor's own. */
  readonly guessedFrom: string | undefined;
  /** False for a host that states no limits and never answers 429 (it queues): the adaptive rate reads latency. */
  readonly statesLimits: boolean;
}

/**
 * A provider over an HTTP API through its vendor's official SDK — the base of {@link OpenAiProvider}
 * and {@link AnthropicProvider}, the same for both: its settings checked once (the key never
 * shown), the SDK loaded as the provider is made (so the first call does not pay for it), a warm-up
 * through the SDK to canned answers ({@link ready}), and each call sent once the SDK is there, its
 * failures mapped onto the provider errors from the HTTP status, headers and body alone.
 */
export abstract class HttpApiProvider implements Provider {
  /** Names the provider in logs, results and figures. */
  readonly name: string;
  /** The model the calls ask for. */
  readonly model: string;
  /** The API's base URL. */
  readonly baseUrl: string;
  readonly #api: string;
  /** What it calls, for tracing: the vendor's API, the model, the host and port of the base URL. */
  readonly target: ProviderTarget;
  /** The vendor's framing of a request, from its defaults. */
  readonly framing: RequestFraming;
  /** What the vendor's prompt cache bills, from its defaults. */
  readonly promptCacheRatios: PromptCacheRatios;
  /** Whether the vendor's token limits count the input tokens its prompt cache serves, from its defaults. */
  readonly limitsCountCacheReads: boolean;
  /** True: the vendor's `decode` reads every answer with `readAnswer`, against its schema. */
  readonly checksAnswers = true;
  readonly #sdk: BoundSdk;
  /** The vendor's headers, then the IETF draft's, which any server (a proxy in front) may add. */
  readonly #headerFormats: readonly HeaderFormat[];
  readonly #schemaProblem: ((schema: JsonSchema) => string | undefined) | undefined;
  #ready: Promise<void> | undefined;
  /** The host's limit dialect, for a vendor whose API many hosts speak; undefined for the others. */
  readonly headerDialect: HeaderDialect | undefined;
  /** False when the host states no limits and never answers 429 (see {@link Provider.statesLimits}). */
  readonly statesLimits: boolean;

  protected constructor(options: HttpProviderOptions, sdk: SdkBinding) {
    const settings = httpProviderSettings(options, sdk.defaults);
    ({ name: this.name, model: this.model, baseUrl: this.baseUrl } = settings);
    this.#api = sdk.defaults.name;
    this.target = targetOf(sdk.defaults.genAiProviderName, settings);
    this.framing = sdk.defaults.framing;
    this.promptCacheRatios = sdk.defaults.promptCacheRatios;
    this.limitsCountCacheReads = sdk.defaults.limitsCountCacheReads;
    this.#sdk = sdk.bind(settings);
    if (options.headers !== undefined && sdk.dialect === undefined) {
      throw expected('headers', `nothing for ${sdk.defaults.label} (the host dialects are for OpenAI-compatible hosts)`, options.headers);
    }
    this.headerDialect = sdk.dialect;
    this.statesLimits = sdk.dialect?.statesLimits ?? true;
    this.#headerFormats = sdk.headers === IETF_HEADERS ? [IETF_HEADERS] : [sdk.headers, IETF_HEADERS];
    this.#schemaProblem = sdk.schemaProblem;
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

  /** Calls the vendor's API through its SDK: the request encoded, the answer decoded and checked against the task's schema, a failure mapped to a provider error. */
  call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    return this.#sdk.call(request, options);
  }

  /** Why the vendor's API would refuse `schema` (OpenAI's strict mode: every schema goes in it), in its words; undefined when it takes it. */
  schemaProblem(schema: JsonSchema): string | undefined {
    return this.#schemaProblem?.(schema);
  }

  /** What the headers say of the limits in the vendor's dialect (and the IETF draft's), and the wait `retry-after` asks for. */
  rateLimits(headers: ResponseHeaders): RateLimitSignals {
    return readRateLimits(this.#headerFormats, headers);
  }

  /**
   * The vendor's API, the base URL and the body a call sends (the model, the prompt, the schema,
   * the output cap: the vendor's `encode`). The base URL is there because the same model name may
   * be served by another server — a local `serve`, a proxy — that answers otherwise. Never the key.
   */
  answerIdentity(request: LlmRequest, maxOutputTokens: number): unknown {
    return { api: this.#api, baseUrl: this.baseUrl, body: this.#sdk.encode(request, maxOutputTokens) };
  }
}

/**
 * The vendor's API by the name the GenAI conventions give it (`gen_ai.provider.name`), the model, and the server the base URL points at, its port spelled out.
 */
function targetOf(vendor: string, settings: HttpProviderSettings): ProviderTarget {
  const url = new URL(settings.baseUrl);
  const serverPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return Object.freeze({ vendor, model: settings.model, serverAddress: url.hostname, serverPort });
}
