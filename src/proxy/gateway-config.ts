import { readFile } from 'node:fs/promises';
import { ConfigError, ConfigReader, parseProvidersConfig, readLimit, type ProvidersConfig } from '../config/providers-config.ts';
import { loadOptional } from '../optional-package.ts';
import type { LimitSpec } from '../quota/provider-limits.ts';
import { isEnvVariableName, VENDORS } from '../vendors/registry.ts';
import { fileErrorDetail } from '../validation/file-error.ts';

/**
 * A gateway's config (`proxy --config gateway.json`, or `.yaml`): its `providers` and `pools`
 * exactly as a run's providers file has them, the `models` its clients may ask for, each routed to
 * a provider or a pool, and the `keys` its clients call it with, each with its budget, limits,
 * weight and models.
 */
export interface GatewayConfig extends Omit<ProvidersConfig, 'routes'> {
  /** Model a client asks for → the provider or pool that serves it. */
  readonly models: Readonly<Record<string, string>>;
  readonly keys: readonly GatewayKey[];
}

/** One of the gateway's own keys: who calls, with what money, limits and share. */
export interface GatewayKey {
  /** What metrics, logs and errors call it: never the key itself. */
  readonly name: string;
  /** The key the client sends (read from `keyEnv` when the file names a variable). */
  readonly key: string;
  /** The most it may spend, USD. @default none (no budget) */
  readonly maxCostUsd: number | undefined;
  /** Its limits, in the providers file's shape. @default none */
  readonly limits: readonly LimitSpec[];
  /** Its share of an upstream quota that is the bottleneck, relative to the other keys' weights. @default 1 */
  readonly weight: number;
  /** The models it may ask for. @default every model of `models` */
  readonly models: readonly string[] | undefined;
}

/** What the config's readers need from outside: the environment the keys' `keyEnv` name. */
export interface GatewayConfigContext {
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The vendors a member may be of: those the proxy can forward to. */
const FORWARDED = Object.entries(VENDORS)
  .filter(([, vendor]) => vendor.proxy !== undefined)
  .map(([type]) => type);

/** Reads a gateway's config file (JSON; YAML for `.yaml`/`.yml`, with the `yaml` package). Rejects with a one-line {@link ConfigError}. */
export async function loadGatewayConfig(path: string, context: GatewayConfigContext): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${path}: cannot read file (${fileErrorDetail(error)})`, { cause: error });
  }
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  let json: unknown;
  if (/\.ya?ml$/i.test(path)) {
    const { parse } = await loadOptional('yaml', 'a YAML gateway config', () => import('yaml'));
    try {
      json = parse(text);
    } catch (error) {
      throw new ConfigError(`${path}: invalid YAML (${(error as Error).message.split('\n')[0]})`);
    }
  } else {
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new ConfigError(`${path}: invalid JSON (${(error as Error).message})`);
    }
  }
  return parseGatewayConfig(json, context, path);
}

/** Checks a parsed gateway config; `source` begins every message (usually the path). */
export function parseGatewayConfig(json: unknown, context: GatewayConfigContext, source = 'config'): GatewayConfig {
  const at = new ConfigReader(source);
  const root = at.object(json, '');
  at.only(root, '', ['providers', 'pools', 'models', 'keys']);
  const { providers, pools } = parseProvidersConfig(
    { providers: root.providers, ...(root.pools === undefined ? {} : { pools: root.pools }) },
    source,
  );
  providers.forEach((provider, index) => {
    if (!FORWARDED.includes(provider.type)) at.fail(`providers[${index}].type`, `a vendor's API (${FORWARDED.join(', ')})`, provider.type);
  });
  const routable = [...providers.map((provider) => provider.name), ...pools.map((pool) => pool.name)];
  const modelsJson = at.object(root.models, 'models');
  if (Object.keys(modelsJson).length === 0) at.fail('models', 'at least one model', modelsJson);
  const models = Object.fromEntries(
    Object.entries(modelsJson).map(([model, target]) => {
      const name = at.string(target, `models.${model}`);
      if (!routable.includes(name)) at.fail(`models.${model}`, `one of the provider and pool names (${routable.join(', ')})`, name);
      return [model, name];
    }),
  );
  const keysJson = at.array(root.keys, 'keys');
  if (keysJson.length === 0) at.fail('keys', 'at least one key', keysJson);
  const keys = keysJson.map((entry, index) => readKey(at, entry, `keys[${index}]`, Object.keys(models), context));
  const seen = new Map<string, string>();
  keys.forEach((key, index) => {
    if ([...seen.keys()].includes(key.name)) at.fail(`keys[${index}].name`, 'a name no other key has', key.name);
    // Two names for one key: the second could never be told apart; the key itself is never shown.
    if ([...seen.values()].includes(key.key))
      throw new ConfigError(`${source}: keys[${index}].key: expected a key no other entry has, got the key of another`);
    seen.set(key.name, key.key);
  });
  // A budget is held at its members' prices: a member without one could spend it unseen.
  keys.forEach((key, index) => {
    if (key.maxCostUsd === undefined) return;
    for (const model of key.models ?? Object.keys(models)) {
      const target = models[model]!;
      const members = reachableProviders(target, pools);
      const unpriced = providers.findIndex((provider) => members.includes(provider.name) && provider.price === undefined);
      if (unpriced >= 0)
        throw new ConfigError(
          `${source}: keys[${index}].maxCostUsd: expected a price on every provider its models reach, got none on providers[${unpriced}] (${providers[unpriced]!.name}, for ${model})`,
        );
    }
  });
  return { providers, pools, models, keys };
}

/** The providers a request routed to `target` may reach: its members, and its fallbacks' (theirs too). */
function reachableProviders(target: string, pools: ProvidersConfig['pools'], seen = new Set<string>()): string[] {
  if (seen.has(target)) return [];
  seen.add(target);
  const pool = pools.find((each) => each.name === target);
  if (pool === undefined) return [target];
  return [...pool.members, ...(pool.fallback ?? []).flatMap((next) => reachableProviders(next, pools, seen))];
}

function readKey(at: ConfigReader, json: unknown, path: string, models: readonly string[], context: GatewayConfigContext): GatewayKey {
  const o = at.object(json, path);
  at.only(o, path, ['name', 'key', 'keyEnv', 'maxCostUsd', 'limits', 'weight', 'models']);
  const name = at.string(o.name, `${path}.name`);
  if (name.trim() === '' || /["\\\n]/.test(name))
    at.fail(`${path}.name`, 'a non-empty name without quotes, backslashes or line breaks', name);
  let key: string;
  if (o.key !== undefined && o.keyEnv !== undefined)
    throw new ConfigError(`${at.where(`${path}.keyEnv`)}: expected key or keyEnv, not both`);
  if (o.keyEnv !== undefined) {
    if (!isEnvVariableName(o.keyEnv)) at.fail(`${path}.keyEnv`, 'an environment variable name (letters, digits, _)', o.keyEnv);
    const value = context.env[o.keyEnv as string];
    if (value === undefined || value.trim() === '')
      throw new ConfigError(`${at.where(`${path}.keyEnv`)}: ${o.keyEnv as string} is not set`);
    key = value.trim();
  } else {
    // The key itself is never shown in a message: only what is wrong with it.
    if (typeof o.key !== 'string' || o.key.trim() === '' || /\s/.test(o.key.trim()))
      throw new ConfigError(
        `${at.where(`${path}.key`)}: expected a key (a string without spaces) or keyEnv, got ${o.key === undefined ? 'nothing' : 'another value'}`,
      );
    key = o.key.trim();
  }
  const maxCostUsd = o.maxCostUsd === undefined ? undefined : at.positive(o.maxCostUsd, `${path}.maxCostUsd`);
  const limits =
    o.limits === undefined
      ? []
      : at.array(o.limits, `${path}.limits`).map((limit, index) => readLimit(at, limit, `${path}.limits[${index}]`));
  const kinds = new Set<string>();
  limits.forEach((limit, index) => {
    if (kinds.has(limit.kind)) at.fail(`${path}.limits[${index}].kind`, 'one limit per kind', limit.kind);
    kinds.add(limit.kind);
  });
  const weight = o.weight === undefined ? 1 : at.positive(o.weight, `${path}.weight`);
  const allowed =
    o.models === undefined
      ? undefined
      : at.array(o.models, `${path}.models`).map((model, index) => {
          const text = at.string(model, `${path}.models[${index}]`);
          if (!models.includes(text)) at.fail(`${path}.models[${index}]`, `one of the models (${models.join(', ')})`, text);
          return text;
        });
  return { name, key, maxCostUsd, limits, weight, models: allowed };
}
