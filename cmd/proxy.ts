// `news-processor proxy`: one gateway in front of the vendors for a team's clients, each key with an exact budget, limits and share.
import { createWriteStream } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { formatDuration } from '../src/mechanisms.ts';
import { ConfigError, MissingPackageError } from '../src/index.ts';
// The defaults alone at once (for --help): the gateway itself loads when the command runs.
import { PROXY_DEFAULTS } from '../src/proxy/proxy-defaults.ts';
import { addCacheOptions, openCache, validateCacheFlags, type CacheFlags } from './cache-options.ts';
import { otelOption, startTelemetry } from './otel.ts';
import { accepting, duration, integer, oneOf } from './parse-values.ts';
import { addRedisConnectionOptions, connectFlags, type RedisConnectionFlags } from './redis-options.ts';
import { LOG_LEVELS } from './run-options.ts';
import { createLogger } from './logger.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { UsageError } from './usage-error.ts';
import { serveUntilStopped } from './serve-until-stopped.ts';
import { systemErrorText } from './stdout.ts';

interface ProxyFlags extends RedisConnectionFlags, CacheFlags {
  config: string;
  host: string;
  port: number;
  redis?: string;
  maxWait: number;
  maxBody: number;
  log?: string;
  logLevel: (typeof LOG_LEVELS)[number];
  otel: boolean;
}

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** A size in bytes: `10MiB`, `512KiB`, `1MB`, `65536`. */
const size = accepting('a size such as 10MiB, 512KiB, 1MB or a number of bytes', (text) => {
  const match = /^(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?$/i.exec(text.trim());
  const bytes = match === null ? Number.NaN : Math.floor(Number(match[1]) * UNITS[(match[2] ?? '').toLowerCase()]!);
  if (!(bytes >= 1)) throw new InvalidArgumentError('Expected a size such as 10MiB, 512KiB, 1MB or a number of bytes (at least 1).');
  return bytes;
});

const EXAMPLES = `
The config (JSON, or YAML for a .yaml/.yml file): "providers" and "pools" exactly as a run's providers file
(--config), "models" (the model a client asks for -> a provider or pool name) and "keys" ([{ "name", "key" or
"keyEnv", "maxCostUsd", "limits", "weight", "models" }]). Each provider's upstream key is read from its apiKeyEnv.
Clients call the vendors' chat routes as they call the vendors (POST /v1/chat/completions, POST /v1/messages), with
a key of the config in Authorization: Bearer KEY or x-api-key: KEY; GET /metrics (Prometheus), GET /healthz need none.

Examples:
  $ npx news-processor proxy --config fixtures/gateway.json                  a free port, printed
  $ npx news-processor proxy --config fixtures/gateway.json --port 4000 --log requests.jsonl
  $ npx news-processor proxy --config fixtures/gateway.json --redis redis://127.0.0.1:6379   budgets and limits shared by replicas
  $ npx news-processor proxy --config fixtures/gateway.json --cache .cache/proxy   whole answers kept, given again for nothing

The first line on stdout is "listening on http://HOST:PORT". SIGINT or SIGTERM stops taking connections, lets the
requests in flight finish and exits 0; a second one exits at once. Exit codes: 0 stopped cleanly, 2 bad usage, a bad
config (one line naming the field) or an address that cannot be had.`;

/** The `proxy` subcommand; `onExit` receives its exit code once it has stopped. */
export function buildProxyCommand(onExit: (code: number) => void): Command {
  const command = new Command('proxy')
    .description(
      "Run a gateway in front of the vendors' APIs for every client a team runs: each of its keys has an exact budget, " +
        "exact limits and a weighted share of the upstream's quota, across replicas with --redis.",
    )
    .addOption(
      new Option(
        '--config <file>',
        'the gateway config: providers, pools, models, keys (JSON, or YAML by extension)',
      ).makeOptionMandatory(),
    )
    .addOption(new Option('--host <host>', 'address to listen on').default(PROXY_DEFAULTS.host))
    .addOption(new Option('--port <n>', 'port to listen on; 0 picks a free one').argParser(integer(0, 65_535)).default(PROXY_DEFAULTS.port))
    .addOption(
      new Option('--max-wait <duration>', "how long a request may wait for the upstream's quota (its fair share) before a 429")
        .argParser(duration({ allowZero: true }))
        .default(PROXY_DEFAULTS.maxWaitMs, formatDuration(PROXY_DEFAULTS.maxWaitMs)),
    )
    .addOption(
      new Option('--max-body <size>', 'the largest request body; a larger one gets 413')
        .argParser(size)
        .default(PROXY_DEFAULTS.maxBodyBytes, '10MiB'),
    )
    .addOption(
      new Option('--log <file>', 'append a JSON line per request: key name, model, member, tokens, cost, status, ms (no prompt, no key)'),
    )
    .addOption(otelOption());
  addCacheOptions(command).addOption(
    new Option('--log-level <level>', `pino log level, logs go to stderr: ${LOG_LEVELS.join(', ')}`)
      .argParser(oneOf(LOG_LEVELS))
      .default('info'),
  );
  addRedisConnectionOptions(command, "keep the keys' budgets and limits and the members' quotas in this Redis, shared by every replica", {
    readsEnv: false,
  });
  return oneLineErrors(command.addHelpText('after', EXAMPLES)).action(async (flags: ProxyFlags) => {
    onExit(await proxy(flags));
  });
}

async function proxy(flags: ProxyFlags): Promise<number> {
  const { loadGatewayConfig, ProxyServer, proxyTelemetry, redisGatewayStores } = await import('../src/proxy/index.ts');
  let config: Awaited<ReturnType<typeof loadGatewayConfig>>;
  try {
    config = await loadGatewayConfig(flags.config, { env: process.env });
  } catch (error) {
    if (error instanceof ConfigError || error instanceof MissingPackageError) throw new UsageError(error.message);
    throw error;
  }
  const apiKeys: Record<string, string> = {};
  for (const provider of config.providers) {
    const variable = provider.api!.apiKeyEnv;
    const key = process.env[variable]?.trim();
    if (key === undefined || key === '')
      throw new UsageError(`${flags.config}: provider ${provider.name}: ${variable} is not set (its API key)`);
    apiKeys[provider.name] = key;
  }
  validateCacheFlags(flags);
  const logger = createLogger(flags);
  const cache = await openCache(flags, logger);
  const connection = flags.redis === undefined ? undefined : await connectFlags({ ...flags, redis: flags.redis }, logger);
  const stores = connection === undefined ? {} : redisGatewayStores(connection, flags.redisPrefix);
  const telemetry = flags.otel ? await startTelemetry(process.env) : undefined;
  const traced = telemetry === undefined ? undefined : await proxyTelemetry();
  const log = flags.log === undefined ? undefined : createWriteStream(flags.log, { flags: 'a' });
  log?.on('error', (error) => process.stderr.write(`warning: --log ${flags.log}: ${systemErrorText(error)}\n`));
  const server = await ProxyServer.create({
    config,
    apiKeys,
    ...stores,
    cache,
    maxWaitMs: flags.maxWait,
    maxBodyBytes: flags.maxBody,
    logger,
    onRequest:
      log === undefined && traced === undefined
        ? undefined
        : (line) => {
            log?.write(`${JSON.stringify(line)}\n`);
            traced?.(line);
          },
  });
  await serveUntilStopped(server, flags.host, flags.port, async () => {
    await connection?.close();
    await cache?.close();
  });
  await new Promise<void>((resolve) => (log === undefined ? resolve() : log.end(resolve)));
  await connection?.close();
  await cache?.close();
  await telemetry?.shutdown();
  return 0;
}
