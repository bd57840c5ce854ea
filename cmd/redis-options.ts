// The flags that share each provider's quota through Redis, their checks, and the limits they build.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Logger } from 'pino';
import { REDIS_DEFAULTS, RedisLimits, connectRedis, isRedisConnectError, type RedisConnection } from '../src/redis/index.ts';
import { formatDuration, type LimitSpec, type ProviderSetup, type RunStop } from '../src/index.ts';
import { accepting, duration, oneOf } from './parse-values.ts';
import { UsageError } from './run-options.ts';

const FALLBACKS = ['stop', 'local'] as const;

export interface RedisFlags {
  redis?: string;
  quotaKey?: string;
  redisPrefix: string;
  redisTimeout: number;
  redisFallback: (typeof FALLBACKS)[number];
  fallbackShare?: number;
  config?: string;
  /** --budget-key: share --max-cost's budget through Redis under this name. */
  budgetKey?: string;
  maxCost?: number;
}

export function addRedisOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--redis <url>',
        "share each provider's quota with every process using this Redis (redis://host:port, rediss:// for TLS)",
      ).env('REDIS_URL'),
    )
    .addOption(new Option('--quota-key <name>', "the shared quota's name (the provider's name unless given)").argParser(keyName(false)))
    .addOption(new Option('--redis-prefix <prefix>', 'begins every Redis key').argParser(keyName(true)).default(REDIS_DEFAULTS.prefix))
    .addOption(
      new Option('--redis-timeout <duration>', 'a limiter call with no answer from Redis this long fails')
        .argParser(duration({ allowZero: false }))
        .default(REDIS_DEFAULTS.timeoutMs, formatDuration(REDIS_DEFAULTS.timeoutMs)),
    )
    .addOption(
      new Option(
        '--redis-fallback <policy>',
        'when Redis stops answering: stop (intake stops, calls in flight fail, exit 1) or local (go on at --fallback-share of the quota)',
      )
        .argParser(oneOf(FALLBACKS))
        .default('stop'),
    )
    .addOption(
      new Option('--fallback-share <share>', 'with --redis-fallback=local: the share of every limit this process takes alone').argParser(
        share,
      ),
    )
    .addOption(
      new Option(
        '--budget-key <name>',
        'with --redis and --max-cost: share the budget under this name: every process on it spends one budget, never more',
      ).argParser(keyName(false)),
    );
}

/** Throws a UsageError for Redis flags that do not go together. */
export function validateRedisFlags(flags: RedisFlags, command: Command): void {
  const given = (option: string) => command.getOptionValueSource(option) === 'cli';
  if (flags.redis === undefined) {
    for (const option of ['quotaKey', 'redisPrefix', 'redisTimeout', 'redisFallback', 'fallbackShare', 'budgetKey']) {
      if (given(option)) throw new UsageError(`--${kebab(option)} needs --redis (the Redis that keeps the shared quota)`);
    }
    return;
  }
  if (!/^rediss?:\/\/./i.test(flags.redis)) {
    // Not echoed: a URL may hold a password.
    const source = command.getOptionValueSource('redis') === 'env' ? 'REDIS_URL' : '--redis';
    throw new UsageError(`${source}: expected a redis:// or rediss:// URL (rediss:// for TLS)`);
  }
  if (flags.quotaKey !== undefined && flags.config !== undefined) {
    throw new UsageError('--quota-key names a single provider\'s quota; with --config set "quotaKey" per provider in the file');
  }
  if (flags.redisFallback === 'local' && flags.fallbackShare === undefined) {
    throw new UsageError(
      '--redis-fallback=local needs --fallback-share: the share of the quota this process may use alone (0.33 for one of three)',
    );
  }
  if (flags.budgetKey !== undefined && flags.maxCost === undefined) {
    throw new UsageError('--budget-key needs --max-cost: the budget to share');
  }
  if (flags.fallbackShare !== undefined && flags.redisFallback !== 'local') {
    throw new UsageError('--fallback-share applies with --redis-fallback=local');
  }
}

/** The connection the limits share: to close when the run is over. */
export interface SharedLimits {
  /** The connection the limits share, for whatever else the run keeps in the same Redis (the budget). */
  readonly connection: RedisConnection;
  close(): Promise<void>;
  /** For the summary: which quotas were shared, and that the figures are this process's part. */
  readonly note: string;
}

/**
 * With --redis: connects (a UsageError naming the URL and the cause when Redis cannot be reached,
 * before any call is made) and puts each provider's limits in Redis under its quota key.
 * `providers` is changed in place. Without --redis: nothing, undefined.
 */
export async function shareLimits(
  flags: RedisFlags,
  providers: ProviderSetup[],
  quotaKeys: ReadonlyMap<string, string>,
  logger: Logger,
): Promise<SharedLimits | undefined> {
  if (flags.redis === undefined) return undefined;
  let connection: Awaited<ReturnType<typeof connectRedis>>;
  try {
    connection = await connectRedis(flags.redis, { timeoutMs: flags.redisTimeout, logger });
  } catch (error) {
    // A URL that does not parse (its message hides the password), or a Redis that cannot be reached.
    if (isRedisConnectError(error) || error instanceof TypeError) throw new UsageError(`--redis: ${error.message}`);
    throw error;
  }
  const shared: string[] = [];
  providers.forEach((setup, index) => {
    const { name } = setup.provider;
    const quotaKey = quotaKeys.get(name) ?? flags.quotaKey ?? name;
    shared.push(quotaKey === name ? `"${name}"` : `"${quotaKey}" (${name})`);
    providers[index] = {
      ...setup,
      limits: new RedisLimits({
        connection,
        limits: setup.limits as readonly LimitSpec[],
        quotaKey,
        prefix: flags.redisPrefix,
        fallbackShare: flags.fallbackShare,
        logger,
      }),
    };
  });
  const note =
    `Shared quota ${shared.join(', ')} through Redis: the calls and the efficiency above are this process's; ` +
    'other processes on the same quota take their share of the rate';
  return { connection, close: () => connection.close(), note };
}

/** The line that says a run stopped because its shared limits could not be reached (Redis went away). */
export function redisStopLine(stop: RunStop): string {
  return `error: ${stop.message}: intake stopped, the articles in flight failed; the rest were not started`;
}

/** A part of a Redis key name: Redis Cluster hashes only what is between `{` and `}`, so neither may appear. */
function keyName(allowEmpty: boolean): (text: string) => string {
  return (text) => {
    if (text === '' && !allowEmpty) throw new InvalidArgumentError('Expected a name.');
    if (/[{}]/.test(text)) throw new InvalidArgumentError('Expected a name without { or } (Redis Cluster hashes what is between them).');
    return text;
  };
}

const share = accepting('> 0 and <= 1, like 0.33', (text) => {
  const value = /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value > 0 && value <= 1)) throw new InvalidArgumentError('Expected a share of the quota in (0, 1], like 0.33.');
  return value;
});

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
