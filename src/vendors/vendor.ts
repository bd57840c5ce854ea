import type { LlmRequest, LlmResponse } from '../provider/provider.ts';
import type { HeaderFormat } from './header-fields.ts';
import type { HttpApiProvider } from './http-api-provider.ts';
import type { ErrorBody, HttpProviderDefaults, HttpProviderOptions } from './http-api.ts';
import type { ResponseMeta } from './sdk-wire.ts';

/**
 * An LLM vendor's API as the registry knows it: one folder under `src/vendors/` each, registered
 * once in `registry.ts`. Everything the rest of the package needs of a vendor is here — a live
 * call's provider, the request body a batch row carries and the answer a batch result holds, its
 * error bodies and rate-limit headers, its defaults.
 */
export interface Vendor {
  /** Its name, base URL, model and key variable when nothing says otherwise. */
  readonly defaults: HttpProviderDefaults;
  /** Its rate-limit headers, read and written. */
  readonly headers: HeaderFormat;
  /** A provider calling the vendor's API through its official SDK. Throws `TypeError` for bad options (never showing the key). */
  createProvider(options: HttpProviderOptions): HttpApiProvider;
  /** The vendor's request body for `request`: what a live call sends, and what a batch row carries. */
  encode(request: LlmRequest, model: string, maxOutputTokens: number): object;
  /** Reads the vendor's response body (a live answer, or a batch result's) as the answer to `request`, or throws what it means. */
  decode(request: LlmRequest, body: object, meta: ResponseMeta, maxOutputTokens: number): Promise<LlmResponse>;
  /** Reads an error body as the vendor shapes it. */
  readErrorBody(body: unknown): ErrorBody;
}
