// The flags that choose what a run calls — the simulation, or an HTTP API — and where its key is
// read from; the providers they build; and the line a run stopped by a provider ends with.
import { InvalidArgumentError, Option, type Command } from 'commander';
// The vendors' registry and the checks of an HTTP provider's settings: what the provider flags are
// made of, each vendor's choices and defaults.
import {
  HTTP_PROVIDER_DEFAULTS,
  VENDORS,
  PROVIDER_DEFAULTS,
  PROVIDER_TYPES,
  isEnvVariableName,
  isHttpProviderType,
  type HttpProviderType,
} from '../src/vendors/registry.ts';
import { createHttpProvider, type Provider, type ProviderConfig, type RunStop } from '../src/index.ts';
import type { ProviderType } from '../src/vendors/index.ts';
import { hasCredentials, isHeaderSafe, isHttpUrl, maskCredentials, type HttpProviderDefaults } from '../src/vendors/http-api.ts';
import { oneOf } from './parse-values.ts';
import { UsageError } from './usage-error.ts';

export interface ClientFlags {
  provider: ProviderType;
  model?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  apiVersion?: string;
}

/** The environment the command reads keys from: `process.env`, or a test's. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** An HTTP provider, and the environment variable its key came from (for the line that says how to fix a refused key). */
export interface HttpClient {
  readonly provider: Provider;
  readonly keyVariable: string;
}

/** Each vendor's default as help shows it: `openai: …, anthropic: …`; one with none must be given (Azure's endpoint). */
function perVendor(pick: (defaults: HttpProviderDefaults) => string | undefined): string {
  return Object.entries(HTTP_PROVIDER_DEFAULTS)
    .map(([type, defaults]) => `${type}: ${pick(defaults) ?? 'none, give it'}`)
    .join(', ');
}

/** The command's `--help` examples that show a vendor, each vendor's own. */
export const VENDOR_HELP_EXAMPLES: readonly string[] = Object.values(VENDORS).flatMap((vendor) => vendor.helpExamples ?? []);

/** The vendors' defaults, in the registry's order. */
const VENDOR_DEFAULTS = Object.values(HTTP_PROVIDER_DEFAULTS);

/** `a, b or c`. */
function orList(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/** The vendors that take an API version, as `--provider=…` flags. */
function apiVersionProviders(): string {
  return orList(VENDOR_DEFAULTS.filter((defaults) => defaults.takesApiVersion === true).map((defaults) => `--provider=${defaults.name}`));
}

/** An API version as the vendors that take one spell it. */
const API_VERSION_EXAMPLE = VENDOR_DEFAULTS.find((defaults) => defaults.apiVersionExample !== undefined)?.apiVersionExample;

/** Adds --provider, --model, --base-url and --api-key-env. */
export function addClientOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--provider <type>',
        `what to call: ${PROVIDER_TYPES.join(', ')}${VENDOR_DEFAULTS.filter((defaults) => defaults.alsoMeans !== undefined)
          .map((defaults) => ` (${defaults.name} also means ${defaults.alsoMeans})`)
          .join('')}`,
      )
        .argParser(oneOf(PROVIDER_TYPES))
        .default(PROVIDER_DEFAULTS.type),
    )
    .addOption(
      new Option(
        '--model <name>',
        `model to ask${VENDOR_DEFAULTS.filter((defaults) => defaults.fileNames !== undefined)
          .map((defaults) => `; ${defaults.label}'s ${defaults.fileNames!.model}`)
          .join('')} (default ${perVendor((d) => d.model)})`,
      ).argParser(modelName),
    )
    .addOption(
      new Option(
        '--base-url <url>',
        `API base URL; ${VENDOR_DEFAULTS.map((defaults) => defaults.baseUrlHint).join(', ')} (default ${perVendor((d) => d.baseUrl)})`,
      ).argParser(httpUrl),
    )
    .addOption(
      new Option(
        '--api-version <version>',
        `the API version, e.g. ${API_VERSION_EXAMPLE} (with ${apiVersionProviders()}, which needs it)`,
      ).argParser(modelName),
    )
    .addOption(
      new Option('--api-key-env <NAME>', `environment variable holding the API key (default ${perVendor((d) => d.apiKeyEnv)})`).argParser(
        envVariable,
      ),
    );
}

function modelName(text: string): string {
  if (text.trim() === '') throw new InvalidArgumentError('Expected a model name.');
  return text.trim();
}

function httpUrl(text: string): string {
  if (!isHttpUrl(text)) throw new InvalidArgumentError('Expected an http:// or https:// URL, e.g. http://localhost:8000/v1.');
  return text;
}

function envVariable(text: string): string {
  if (!isEnvVariableName(text)) throw new InvalidArgumentError('Expected an environment variable name (letters, digits, _).');
  return text;
}

/** The flags of the simulation that a real API has no use for, by their flag names. */
const SIMULATION_ONLY = {
  providerRate: '--provider-rate',
  providerBurst: '--provider-burst',
  headers: '--headers',
  outage: '--outage',
} as const;

/** Simulation flags with a default: given on the command line with a real API, they would be silently ignored. */
const SIMULATION_DEFAULTED = { minLatency: '--min-latency', maxLatency: '--max-latency', profile: '--profile' } as const;

const API_FLAGS = { model: '--model', baseUrl: '--base-url', apiKeyEnv: '--api-key-env', apiVersion: '--api-version' } as const;

function entries<K extends string, V>(record: Readonly<Record<K, V>>): [K, V][] {
  return Object.entries(record) as [K, V][];
}

/** The real APIs' --provider values, as a message lists them: `--provider=openai, --provider=anthropic or --provider=azure`. */
function realApis(): string {
  const flags = PROVIDER_TYPES.filter(isHttpProviderType).map((type) => `--provider=${type}`);
  return `${flags.slice(0, -1).join(', ')} or ${flags.at(-1)}`;
}

/** Whether the flags call an HTTP API (not the simulation). */
export function callsHttpApi(flags: Partial<ClientFlags>): boolean {
  return isHttpProviderType(flags.provider);
}

/** Checks that the client flags fit together and with the rest. */
export function validateClientFlags(
  // The run's flags asked only whether they were given: typed here so that run-options.ts, which builds on this file, is not imported back.
  flags: Partial<ClientFlags> & { readonly config?: string | undefined } & { readonly [field in keyof typeof SIMULATION_ONLY]?: unknown },
  given: (field: string) => boolean = () => false,
): void {
  if (flags.config !== undefined) {
    if (flags.provider !== undefined && flags.provider !== PROVIDER_DEFAULTS.type) {
      throw new UsageError("--provider describes a single provider; with --config set each provider's type in the file");
    }
    for (const [field, flag] of entries(API_FLAGS)) {
      if (flags[field] !== undefined)
        throw new UsageError(`${flag} describes a single provider; with --config set it per provider in the file`);
    }
    return;
  }
  if (callsHttpApi(flags)) {
    // Said here, not by the parser, which would quote the password back.
    if (flags.baseUrl !== undefined && hasCredentials(flags.baseUrl)) {
      throw new UsageError(
        `--base-url: expected a URL without user:password in it (fetch refuses those; the key is read from --api-key-env), got ${maskCredentials(flags.baseUrl)}`,
      );
    }
    for (const [field, flag] of entries(SIMULATION_ONLY)) {
      if (flags[field] !== undefined) {
        throw new UsageError(`${flag} describes the simulated provider; --provider=${flags.provider} calls a real API`);
      }
    }
    for (const [field, flag] of entries(SIMULATION_DEFAULTED)) {
      if (given(field)) throw new UsageError(`${flag} describes the simulated provider; --provider=${flags.provider} calls a real API`);
    }
    const defaults = HTTP_PROVIDER_DEFAULTS[flags.provider as HttpProviderType];
    if (defaults.baseUrl === undefined && flags.baseUrl === undefined) {
      throw new UsageError(
        `--provider=${flags.provider} needs --base-url: its ${defaults.fileNames?.baseUrl ?? 'base URL'}, which has no default`,
      );
    }
    if (defaults.model === undefined && flags.model === undefined) {
      throw new UsageError(`--provider=${flags.provider} needs --model: its ${defaults.fileNames?.model ?? 'model'}, which has no default`);
    }
    if (defaults.takesApiVersion === true && flags.apiVersion === undefined) {
      throw new UsageError(`--provider=${flags.provider} needs --api-version (e.g. ${defaults.apiVersionExample})`);
    }
    if (defaults.takesApiVersion !== true && flags.apiVersion !== undefined) {
      throw new UsageError(`--api-version applies to ${apiVersionProviders()} only`);
    }
    return;
  }
  for (const [field, flag] of entries(API_FLAGS)) {
    if (flags[field] !== undefined) throw new UsageError(`${flag} applies to ${realApis()}`);
  }
}

/**
 * A key a dry run stands in for one not set: it builds the providers to check what the run would
 * refuse, but sends nothing, so it needs no key.
 */
const NO_KEY = 'dry-run-no-key';

/** The HTTP provider the flags ask for, its key read from `env`; undefined for the simulation. */
export function httpClientFromFlags(flags: Partial<ClientFlags>, env: Environment, keyOptional = false): HttpClient | undefined {
  const type = flags.provider;
  if (!isHttpProviderType(type)) return undefined;
  const keyVariable = flags.apiKeyEnv ?? HTTP_PROVIDER_DEFAULTS[type].apiKeyEnv;
  const apiKey = keyFrom(
    env,
    keyVariable,
    `--provider=${type} reads its API key from it (--api-key-env names another variable)`,
    keyOptional,
  );
  const options = { apiKey, model: flags.model, baseUrl: flags.baseUrl, apiVersion: flags.apiVersion };
  return { provider: createHttpProvider(type, options), keyVariable };
}

/** The HTTP provider a providers-file entry describes, its key read from `env`; undefined for a simulated one. */
export function httpClientFromConfig(
  config: ProviderConfig,
  source: string,
  env: Environment,
  keyOptional = false,
): HttpClient | undefined {
  if (config.api === undefined || !isHttpProviderType(config.type)) return undefined;
  const { baseUrl, model, apiKeyEnv, apiVersion, headers } = config.api;
  const apiKey = keyFrom(env, apiKeyEnv, `provider "${config.name}" in ${source} reads its API key from it (its apiKeyEnv)`, keyOptional);
  return {
    provider: createHttpProvider(config.type, { name: config.name, apiKey, baseUrl, model, apiVersion, headers }),
    keyVariable: apiKeyEnv,
  };
}

function keyFrom(env: Environment, variable: string, why: string, optional: boolean): string {
  const key = env[variable];
  if ((key === undefined || key.trim() === '') && optional) return NO_KEY;
  if (key === undefined || key.trim() === '') throw new UsageError(`${variable} is not set: ${why}`);
  // Never quoted: only what is wrong with it.
  if (!isHeaderSafe(key.trim())) {
    throw new UsageError(`${variable} holds a line break, a control character or a non-Latin-1 character, which no HTTP header can carry`);
  }
  return key.trim();
}

/**
 * What the base URLs look like where a person may give another than the default: a vendor with
 * none is given its own (Azure's endpoint), whose shape `--help` says.
 */
const BASE_URL_HINTS = VENDOR_DEFAULTS.filter((defaults) => defaults.baseUrl !== undefined)
  .map((defaults) => defaults.baseUrlHint)
  .join(', ');

/**
 * The one line a run stopped by a provider ends with: which provider, what it answered (the
 * status is in the message), and what a person must do before running again.
 */
export function formatStop(stop: RunStop, keyVariable: string | undefined): string {
  const fix =
    stop.type === 'AuthenticationError'
      ? `set ${keyVariable ?? 'the API key'} to a key this provider accepts`
      : stop.type === 'QuotaExhaustedError'
        ? "add credit or raise the account's quota"
        : (stop.type === 'BadRequestError' && stop.message.startsWith('404')) || stop.type === 'NotAnApiError'
          ? `check --base-url (${BASE_URL_HINTS}) and --model`
          : 'see the message';
  return `error: provider "${stop.provider}" stopped the run: ${stop.message}; ${fix}, then run again (finished results are kept)`;
}
