import type { PackageSpec } from '../optional-package.ts';
import type { BatchApi } from '../provider/batch-api.ts';
import type { LlmRequest, LlmResponse } from '../provider/provider.ts';
import type { HeaderFormat } from './header-fields.ts';
import type { HttpApiProvider } from './http-api-provider.ts';
import type { ErrorBody, HttpProviderDefaults, HttpProviderOptions } from './http-api.ts';
import type { ResponseMeta } from './sdk-wire.ts';
import type { VendorDialect } from './serve/dialect.ts';
import type { VendorProxy } from './proxy-wire.ts';

/**
 * An LLM vendor's API as the registry knows it: one folder under `src/vendors/` each, registered
 * once in `registry.ts`. Everything the rest of the package needs of a vendor is here — a live
 * call's provider, the request body a batch row carries and the answer a batch result holds, its
 * error bodies and rate-limit headers, its defaults and the fields the providers file takes, its
 * SDK package — and, each an optional capability loaded only when used, its Batch API and the
 * dialect `serve` speaks it in.
 */
export interface Vendor {
  /** Its name, label, base URL, model and key variable when nothing says otherwise. */
  readonly defaults: HttpProviderDefaults;
  /** Its rate-limit headers, read and written. */
  readonly headers: HeaderFormat;
  /** Its official SDK, an optional peer of the package, which its provider loads. */
  readonly sdkPackage: PackageSpec;
  /** A provider calling the vendor's API through its official SDK. Throws `TypeError` for bad options (never showing the key). */
  createProvider(options: HttpProviderOptions): HttpApiProvider;
  /** The vendor's request body for `request`: what a live call sends, and what a batch row carries. */
  encode(request: LlmRequest, model: string, maxOutputTokens: number): object;
  /** Reads the vendor's response body (a live answer, or a batch result's) as the answer to `request`, or throws what it means. */
  decode(request: LlmRequest, body: object, meta: ResponseMeta, maxOutputTokens: number): Promise<LlmResponse>;
  /** Reads an error body as the vendor shapes it. */
  readErrorBody(body: unknown): ErrorBody;
  /** Its Batch API, when it has one: half the price, answers within a day. @default none (`--batch` refuses the vendor) */
  readonly batch?: VendorBatch | undefined;
  /** How `serve` speaks its API, when it does. @default none (`serve` does not imitate the vendor) */
  readonly serve?: VendorServe | undefined;
  /** How `proxy` forwards its clients' requests to a member of the vendor, when it does. @default none (no member of the vendor) */
  readonly proxy?: VendorProxy | undefined;
  /**
   * Lines of the command's `--help` examples that show the vendor (`$ news-processor --provider=…`),
   * each with what it does. @default none
   */
  readonly helpExamples?: readonly string[] | undefined;
}

/** Where a vendor's Batch API sends its batches, with which key and model. */
export interface VendorBatchApiOptions {
  /** The API key, sent only in the request's auth header. */
  readonly apiKey: string;
  /** The API's base URL, as the vendor's provider takes it. */
  readonly baseUrl: string;
  /** The model every row asks. */
  readonly model: string;
  /** Names the provider in results and messages. @default the vendor's name */
  readonly name?: string | undefined;
}

/** A vendor's Batch API as the registry knows it: its caps at once, the API itself loaded when a run uses it. */
export interface VendorBatch {
  /** The most rows the vendor takes in one batch. */
  readonly maxRows: number;
  /** The most bytes the vendor takes in one batch's upload. */
  readonly maxBytes: number;
  /** Where a person cancels a batch by hand (`POST`), `ID` standing for its id: what an interrupted run says. */
  cancelUrl(baseUrl: string): string;
  /** Loads the Batch API's module (not its SDK: that loads on the first request) and makes one. */
  load(): Promise<(options: VendorBatchApiOptions) => BatchApi>;
}

/**
 * How `serve` speaks a vendor's API: what it says of itself at once (for `serve --help`), the
 * dialect — routes, parsing, answers, errors, headers, streams, its Batch API's side — loaded
 * when a server starts.
 */
export interface VendorServe {
  /** The routes and how a key is sent, in a line or two of `serve --help`. */
  readonly summary: string;
  /**
   * The limit dialects of the hosts that speak its API, which `serve --headers` imitates on its
   * routes (OpenAI's: `groq`, `together`, `mistral`, `none`, and its own). @default none
   */
  readonly hostHeaders?: readonly string[] | undefined;
  /** Loads the dialect (`import('./serve-dialect.ts')`), speaking the host dialect `headers` when given: a plain run never does. */
  load(options?: { readonly headers?: string | undefined }): Promise<VendorDialect>;
}
