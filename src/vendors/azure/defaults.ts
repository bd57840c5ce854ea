import { OPENAI_DEFAULTS } from '../openai/defaults.ts';

/**
 * What an Azure OpenAI provider is unless told otherwise: nothing of where it is — each resource
 * has its own endpoint, each model its own deployment, each a quota of its own.
 */
export const AZURE_DEFAULTS = Object.freeze({
  name: 'azure',
  label: 'Azure OpenAI',
  /**
   * What traces and the tasks' fingerprints have named Azure's calls by since its first release; the
   * conventions' newer `azure.ai.openai` would make every Azure task of a run resumed across the
   * change look changed.
   */
  genAiProviderName: 'azure',
  /** Each resource's own (`https://NAME.openai.azure.com`): must be given. */
  baseUrl: undefined,
  /** The deployment, which names the model: must be given. */
  model: undefined,
  baseUrlHint: "Azure's is the resource's endpoint",
  apiVersionExample: '2024-10-21',
  /** The environment variable the command line and the providers file read the key from (the `api-key` header). */
  apiKeyEnv: 'AZURE_OPENAI_API_KEY',
  /** Every request names the API version (`?api-version=2024-10-21`). */
  takesApiVersion: true,
  /** OpenAI's framing: Azure serves OpenAI's models behind OpenAI's API. */
  framing: OPENAI_DEFAULTS.framing,
  /** OpenAI's prompt cache, which Azure OpenAI bills alike unless its price list says otherwise. */
  promptCacheRatios: OPENAI_DEFAULTS.promptCacheRatios,
  limitsCountCacheReads: OPENAI_DEFAULTS.limitsCountCacheReads,
  /** The providers file's names for the endpoint and the deployment, as Azure calls them. */
  fileNames: Object.freeze({ baseUrl: 'endpoint', model: 'deployment' }),
});
