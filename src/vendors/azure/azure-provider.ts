import type { AzureOpenAI } from 'openai';
import { loadOptional } from '../../optional-package.ts';
import { HttpApiProvider, type SdkBinding } from '../http-api-provider.ts';
import type { HttpProviderOptions, HttpProviderSettings } from '../http-api.ts';
import type { OpenAiBody } from '../openai/encode.ts';
import { OPENAI_SDK_PACKAGE, OPENAI_WIRE } from '../openai/openai-wire.ts';
import { OPENAI_HEADERS } from '../openai/rate-limit-headers.ts';
import { strictSchemaProblem } from '../openai/strict-schema.ts';
import { bindSdk, type SdkWire } from '../sdk-wire.ts';
import { AZURE_DEFAULTS } from './defaults.ts';

/** The client options for one provider, everything given so that the SDK reads nothing from the environment. */
function azureClientOptions(settings: HttpProviderSettings, fetch?: AzureFetch) {
  return {
    apiKey: settings.apiKey,
    // `{endpoint}/openai`: the SDK adds `/deployments/{deployment}/chat/completions` and `?api-version=`.
    baseURL: `${settings.baseUrl.replace(/\/+$/, '')}/openai`,
    apiVersion: settings.apiVersion,
    deployment: settings.model,
    // The call gate retries, so that every attempt takes its token and every 429 reaches the limiter.
    maxRetries: 0,
    logLevel: 'off' as const,
    ...(fetch === undefined ? {} : { fetch }),
  };
}

type AzureFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Azure OpenAI's chat completions (`POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`,
 * the key in an `api-key` header) through the official `openai` SDK's `AzureOpenAI`: the request and
 * answer are OpenAI's, the deployment stands for the model.
 */
const AZURE_WIRE: SdkWire<AzureOpenAI, OpenAiBody> = {
  // OpenAI's request, post, answer, canned answer and error body: only the client differs.
  ...OPENAI_WIRE,
  defaults: AZURE_DEFAULTS,
  load: async (settings) => {
    const sdk = await loadOptional(OPENAI_SDK_PACKAGE, 'the Azure OpenAI provider', () => import('openai'));
    const make = (fetch?: AzureFetch): AzureOpenAI => {
      const client = new sdk.AzureOpenAI(azureClientOptions(settings, fetch));
      // `withOptions` would make a client without the api-version: the warm-up's copy is made as this one is.
      return Object.assign(client, { withOptions: ({ fetch: canned }: { fetch: AzureFetch }) => make(canned) });
    };
    return { client: make(), errors: sdk };
  },
};

const AZURE_SDK: SdkBinding = {
  defaults: AZURE_DEFAULTS,
  headers: OPENAI_HEADERS,
  // OpenAI's request, strict mode and all, at a deployment of one's own.
  schemaProblem: (schema) => {
    const problem = strictSchemaProblem(schema);
    return problem === undefined ? undefined : `Azure OpenAI's strict mode refuses its schema: ${problem}`;
  },
  bind: (settings) => bindSdk(AZURE_WIRE, settings),
};

/**
 * A provider over an Azure OpenAI deployment: `baseUrl` is the resource's endpoint
 * (`https://NAME.openai.azure.com`), `model` the deployment, `apiVersion` the API version — each
 * deployment a quota of its own, so several make a pool. Requests and answers are OpenAI's chat
 * completions in strict structured output; its rate-limit headers are OpenAI's (with
 * `retry-after-ms`). Needs the `openai` package.
 */
export class AzureOpenAiProvider extends HttpApiProvider {
  constructor(options: HttpProviderOptions) {
    super(options, AZURE_SDK);
  }
}
