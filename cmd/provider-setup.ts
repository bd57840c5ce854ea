// What a run's flags build: the simulated provider, each provider's limits, breaker and price, or the providers file's.
import {
  loadProvidersConfig,
  requestLimit,
  SIMULATED_DEFAULTS,
  SimulatedProvider,
  type LimitSpec,
  type Provider,
  type ProviderLimits,
  type ProviderPrice,
  type ProviderSetup,
  type SimulatedConfig,
  type PoolSetup,
} from '../src/index.ts';
import type { ProviderQuota } from '../src/testing/index.ts';
import { loadTokenizer, providerSetupProblem } from '../src/plan.ts';
// Not from news-processor/vendors, whose Batch APIs would load with every run.
import { HttpApiProvider } from '../src/vendors/http-api-provider.ts';
import { httpClientFromConfig, httpClientFromFlags, type ClientFlags, type HttpClient } from './client-options.ts';
import type { RunFlags } from './run-options.ts';
import { UsageError } from './usage-error.ts';

/**
 * A simulated provider: `sim` (a provider's settings from --config) over what the flags describe.
 * A new one per run, so a seed replays the same run.
 */
export function createProvider(flags: RunFlags, name: string = SIMULATED_DEFAULTS.name, sim: SimulatedConfig = {}): SimulatedProvider {
  return new SimulatedProvider({
    name,
    minLatencyMs: sim.minLatencyMs ?? flags.minLatency,
    maxLatencyMs: sim.maxLatencyMs ?? Math.max(flags.maxLatency, sim.minLatencyMs ?? 0),
    profile: sim.profile ?? flags.profile,
    seed: sim.seed ?? flags.seed,
    quota: sim.quota ?? providerQuota(flags),
    headerStyle: sim.headers ?? flags.headers,
    outage: sim.outage ?? flags.outage,
  });
}

/** The simulated provider's own quota the flags set (--provider-rate, --provider-burst), if any. */
export function providerQuota(flags: Pick<RunFlags, 'providerRate' | 'providerBurst'>): ProviderQuota | undefined {
  return flags.providerRate === undefined ? undefined : { rate: flags.providerRate, burst: flags.providerBurst ?? 1 };
}

/** The price the flags give a single provider (`--price-*`), USD per million tokens; undefined without one. */
export function priceOf(
  flags: Pick<RunFlags, 'priceInput' | 'priceOutput' | 'priceCachedInput' | 'priceCacheWrite'>,
): ProviderPrice | undefined {
  if (flags.priceInput === undefined) return undefined;
  return {
    inputPerMTok: flags.priceInput,
    outputPerMTok: flags.priceOutput!,
    ...(flags.priceCachedInput !== undefined && { cachedInputPerMTok: flags.priceCachedInput }),
    ...(flags.priceCacheWrite !== undefined && { cacheWritePerMTok: flags.priceCacheWrite }),
  };
}

/** The client-side mechanisms the flags ask for, around `provider`, at request rate `rate` with `burst`. */
export function providerSetup(flags: RunFlags, provider: Provider, rate: number, burst: number): ProviderSetup {
  const limits: LimitSpec[] = requestLimit(rate, burst);
  if (flags.tpm !== undefined) limits.push({ kind: 'tokens', rate: flags.tpm / 60, burst: flags.tpm });
  const setup: ProviderSetup = {
    provider,
    limits,
    price: priceOf(flags),
    adaptive: flags.adaptive ? {} : undefined,
    syncHeaders: flags.syncHeaders,
    maxOutputTokens: flags.maxOutputTokens,
    callTimeoutMs: flags.callTimeout,
    breaker:
      flags.breakerThreshold === 0
        ? undefined
        : { failureThreshold: flags.breakerThreshold, cooldownMs: flags.breakerCooldown, giveUpAfterMs: flags.breakerGiveUp },
  };
  const problem = providerSetupProblem(setup);
  // A minute's token budget no larger than a call's reservation would fail every article at run time.
  if (problem?.rule === 'token-burst') {
    throw new UsageError(
      `--tpm=${flags.tpm} cannot fit a call: each reserves its prompt's tokens plus --max-output-tokens (${flags.maxOutputTokens}) at once; give a larger --tpm or a smaller --max-output-tokens`,
    );
  }
  if (problem?.rule === 'adaptive-rate')
    throw new UsageError("--adaptive needs a finite --rate to adapt (it never goes above it), got 'inf'");
  return setup;
}

/**
 * The providers and routes of a run: from `--config` when given, else one provider from the flags
 * (simulated unless --provider says otherwise). HTTP providers' keys are read from the environment
 * here, before any call: `keyVariables` says where each provider's came from.
 */
export async function providerSetups(
  flags: RunFlags & Partial<ClientFlags>,
  rate: number,
  burst: number,
  /** A dry run calls nothing: an unset key is no reason to stop it. */
  keyOptional = false,
): Promise<{
  providers: ProviderSetup[];
  routes: Readonly<Record<string, string>> | undefined;
  /** The providers file's pools (none without --config). */
  pools: readonly PoolSetup[];
  keyVariables: ReadonlyMap<string, string>;
  /** Each provider's shared quota key, where the providers file names one. */
  quotaKeys: ReadonlyMap<string, string>;
}> {
  const keyVariables = new Map<string, string>();
  const quotaKeys = new Map<string, string>();
  const known = (client: HttpClient | undefined): Provider | undefined => {
    if (client !== undefined) keyVariables.set(client.provider.name, client.keyVariable);
    return client?.provider;
  };
  if (flags.config === undefined) {
    const provider = known(httpClientFromFlags(flags, process.env, keyOptional)) ?? createProvider(flags);
    return { providers: [providerSetup(flags, provider, rate, burst)], routes: undefined, pools: [], keyVariables, quotaKeys };
  }
  const config = await loadProvidersConfig(flags.config);
  const source = flags.config;
  for (const p of config.providers) if (p.quotaKey !== undefined) quotaKeys.set(p.name, p.quotaKey);
  const providers = config.providers.map(
    (p, index): ProviderSetup => ({
      ...p,
      // Each provider draws its own numbers: the same seed would give both the same fate per call.
      provider:
        known(httpClientFromConfig(p, source, process.env, keyOptional)) ??
        createProvider(flags, p.name, { seed: flags.seed + index, ...p.simulated }),
      // The file's own, else the flag's: --call-timeout is a run-wide default.
      callTimeoutMs: p.callTimeoutMs ?? flags.callTimeout,
    }),
  );
  return { providers, routes: { ...config.routes }, pools: config.pools, keyVariables, quotaKeys };
}

/**
 * Loads the optional packages the providers need — their SDKs, the tokenizer that token limits
 * count with — so that one that is not installed is one line and exit 2 before anything is read,
 * written or called.
 */
export async function loadProviderPackages(providers: readonly ProviderSetup[]): Promise<void> {
  for (const setup of providers) {
    if (setup.provider instanceof HttpApiProvider) await setup.provider.loaded();
    const specs = Array.isArray(setup.limits) ? (setup.limits as readonly LimitSpec[]) : (setup.limits as ProviderLimits).specs;
    if (setup.estimateInputTokens === undefined && specs.some((spec) => spec.kind !== 'requests' && spec.rate !== Infinity)) {
      await loadTokenizer();
    }
  }
}

/**
 * What a run says once of its providers' hosts, a line each: the limit dialect guessed from a base
 * URL's host, and a host that states no limits (what --sync-headers and --adaptive can do there).
 */
export function headerDialectNotes(providers: readonly ProviderSetup[]): string[] {
  const lines: string[] = [];
  for (const setup of providers) {
    if (!(setup.provider instanceof HttpApiProvider)) continue;
    const { name, headerDialect: dialect } = setup.provider;
    if (dialect === undefined) continue;
    if (dialect.guessedFrom !== undefined) {
      lines.push(
        `note: provider "${name}" reads ${dialect.label}'s rate-limit headers, guessed from the host ${dialect.guessedFrom} (a providers file's "headers" field chooses)`,
      );
    }
    if (!dialect.statesLimits) {
      const sync = setup.syncHeaders === true ? '--sync-headers has nothing to read; ' : '';
      const adaptive =
        setup.adaptive === undefined
          ? "only --adaptive, reading the calls' latency, would slow down for it"
          : "--adaptive reads the calls' latency";
      lines.push(`note: provider "${name}" ("headers": "${dialect.name}") sends no rate-limit headers and no 429: ${sync}${adaptive}`);
    }
  }
  return lines;
}
