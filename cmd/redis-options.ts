// The flags that share each provider's quota through Redis, their checks, and the limits they build.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Logger } from 'pino';
import {
  REDIS_DEFAULTS,
  RedisBudget,
  RedisLimits,
  connectRedis,
  type RedisConnectReason,
  type RedisConnection,
  RedisConnectError,
  RedisTlsFileError,
  RedisPermissionError,
  RedisRedirectError,
} from '../src/redis/index.ts';
import type { LimitSpec, ProviderSetup, RunStop } from '../src/index.ts';
import { formatDuration, isLimiterUnavailableError } from '../src/mechanisms.ts';
import { accepting, duration, oneOf } from './parse-values.ts';
import { UsageError } from './usage-error.ts';

const FALLBACKS = ['stop', 'local'] as const;

export interface RedisFlags {
  redis?: string;
  quotaKey?: string;
  redisPrefix: string;
  redisTimeout: number;
  redisFallback: (typeof FALLBACKS)[number];
  fallbackShare?: number;
  /** True: --redis-cluster; false: --no-redis-cluster; neither: asked of the server. */
  redisCluster?: boolean;
  redisCa?: string;
  redisCert?: string;
  redisKey?: string;
  config?: string;
  /** --cache: an answer cache, a Redis one when it is a redis:// URL (reached with the connection flags). */
  cache?: string;
  /** --budget-key: share --max-cost's budget through Redis under this name. */
  budgetKey?: string;
  maxCost?: number;
}

/** The flags that say how to reach a Redis, whichever Redis it is: --redis's, or a Redis --cache. */
const CONNECTION_FLAGS: readonly string[] = ['redisPrefix', 'redisTimeout', 'redisCluster', 'redisCa', 'redisCert', 'redisKey'];

/** Whether `text` is a Redis URL (rather than a path). */
export const isRedisUrl = (text: string | undefined): text is string => text !== undefined && /^rediss?:/i.test(text);

/** The TLS files, by flag: each checked at start, each named in its error. */
const TLS_FLAGS = { caFile: '--redis-ca', certFile: '--redis-cert', keyFile: '--redis-key' } as const;

/** Where Redis is and how to reach it: the flags of every command that uses Redis. */
export interface RedisConnectionFlags {
  redis?: string;
  redisPrefix: string;
  redisTimeout: number;
  redisCluster?: boolean;
  redisCa?: string;
  redisCert?: string;
  redisKey?: string;
}

/**
 * Adds --redis (described as `purpose`), --redis-prefix, --redis-timeout, the cluster and the TLS
 * flags. `readsEnv`: REDIS_URL stands in for --redis — for the queue commands, which cannot do
 * without a Redis; a run uses one only when its flags say so, whatever the shell holds.
 */
export function addRedisConnectionOptions(command: Command, purpose: string, { readsEnv }: { readonly readsEnv: boolean }): Command {
  const redis = new Option(
    '--redis <url>',
    `${purpose} (redis://host:port, rediss:// for TLS${readsEnv ? '' : '; REDIS_URL is not read: only the queue commands read it'})`,
  );
  return command
    .addOption(readsEnv ? redis.env('REDIS_URL') : redis)
    .addOption(new Option('--redis-prefix <prefix>', 'begins every Redis key').argParser(keyName(true)).default(REDIS_DEFAULTS.prefix))
    .addOption(
      new Option('--redis-timeout <duration>', 'a call with no answer from Redis this long fails (connecting too)')
        .argParser(duration({ allowZero: false }))
        .default(REDIS_DEFAULTS.timeoutMs, formatDuration(REDIS_DEFAULTS.timeoutMs)),
    )
    .addOption(new Option('--redis-cluster', 'the Redis is a Redis Cluster, --redis one of its nodes (default: asked of the server)'))
    .addOption(new Option('--no-redis-cluster', 'the Redis is one server, even if it says it is a cluster node'))
    .addOption(
      new Option('--redis-ca <file>', "PEM file of the CA that signed the Redis server's certificate (rediss://; instead of Node's CAs)"),
    )
    .addOption(new Option('--redis-cert <file>', 'PEM file of a client certificate, for a Redis with tls-auth-clients (with --redis-key)'))
    .addOption(new Option('--redis-key <file>', "PEM file of --redis-cert's private key, unencrypted"));
}

/** Adds the flags of a shared quota: --redis and how to reach it, the quota key, the fallback, the budget key. `readsEnv` as for {@link addRedisConnectionOptions}. */
export function addRedisOptions(command: Command, { readsEnv = false }: { readonly readsEnv?: boolean } = {}): Command {
  return addRedisConnectionOptions(command, "share each provider's quota with every process using this Redis", { readsEnv })
    .addOption(new Option('--quota-key <name>', "the shared quota's name (the provider's name unless given)").argParser(keyName(false)))
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

/** A --redis value that is a Redis URL at all; `source` names where it came from (--redis or REDIS_URL). */
export function checkRedisUrl(url: string, source: string): void {
  // Not echoed: a URL may hold a password.
  if (!/^rediss?:\/\/./i.test(url)) throw new UsageError(`${source}: expected a redis:// or rediss:// URL (rediss:// for TLS)`);
}

/** Throws a UsageError for Redis flags that do not go together. */
export function validateRedisFlags(flags: RedisFlags, command: Command): void {
  const given = (option: string) => command.getOptionValueSource(option) === 'cli';
  if (flags.redis === undefined) {
    // A Redis answer cache (--cache redis://…) is reached with the same connection flags.
    const connection = isRedisUrl(flags.cache) ? CONNECTION_FLAGS : [];
    for (const option of [
      'quotaKey',
      'redisPrefix',
      'redisTimeout',
      'redisFallback',
      'fallbackShare',
      'redisCluster',
      'redisCa',
      'redisCert',
      'redisKey',
      'budgetKey',
    ].filter((option) => !connection.includes(option))) {
      if (given(option)) {
        const flag = option === 'redisCluster' && flags.redisCluster === false ? '--no-redis-cluster' : `--${kebab(option)}`;
        const redis = CONNECTION_FLAGS.includes(option)
          ? 'the Redis that keeps the shared quota, or a Redis --cache'
          : 'the Redis that keeps the shared quota';
        throw new UsageError(`${flag} needs --redis (${redis})`);
      }
    }
    return;
  }
  checkRedisUrl(flags.redis, redisSource(command));
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
  checkTlsFlags(flags, flags.redis, redisSource(command));
}

/** Throws a UsageError for TLS flags that do not go together, or that `url` (named as `source` says) cannot use. */
export function checkTlsFlags(flags: RedisConnectionFlags, url: string, source: string): void {
  if ((flags.redisCert === undefined) !== (flags.redisKey === undefined)) {
    throw new UsageError('--redis-cert and --redis-key go together: a client certificate and its private key');
  }
  const tlsFlag = flags.redisCa !== undefined ? '--redis-ca' : flags.redisCert !== undefined ? '--redis-cert' : undefined;
  if (tlsFlag !== undefined && !/^rediss:/i.test(url)) {
    throw new UsageError(`${tlsFlag} needs a rediss:// URL (TLS) in ${source}`);
  }
}

function redisSource(command: Command): string {
  return command.getOptionValueSource('redis') === 'env' ? 'REDIS_URL' : '--redis';
}

/** The connection the limits share: to close when the run is over. */
export interface SharedLimits {
  /** The connection the limits share, for whatever else the run keeps in the same Redis (the budget). */
  readonly connection: RedisConnection;
  close(): Promise<void>;
  /** For the summary: which quotas were shared, that the figures are this process's part, and how long the run went local. */
  note(): string;
  /** With --redis-fallback=local: how long the run went on without Redis (ms, all stretches) and in how many stretches. */
  fallback(): { readonly localMs: number; readonly stretches: number };
  /** Told each move to the local bucket and back (--redis-fallback=local), once the run has somewhere to say it. */
  onFallback: ((change: { readonly local: boolean; readonly message: string }) => void) | undefined;
}

/**
 * With --redis: connects (a UsageError naming the URL, the cause and the flag that fixes it when
 * Redis cannot be reached, before any call is made), puts each provider's limits in Redis under its
 * quota key, and checks that the Redis user may keep each quota there (a UsageError naming what it
 * lacks). `providers` is changed in place. Without --redis: nothing, undefined.
 */
export async function shareLimits(
  flags: RedisFlags,
  providers: ProviderSetup[],
  quotaKeys: ReadonlyMap<string, string>,
  logger: Logger,
): Promise<SharedLimits | undefined> {
  if (flags.redis === undefined) return undefined;
  const connection = await connectFlags(flags as RedisConnectionFlags & { redis: string }, logger);
  const shared: string[] = [];
  const limits: RedisLimits[] = [];
  const result: { onFallback: SharedLimits['onFallback'] } = { onFallback: undefined };
  // One connection for every quota: the first to notice Redis gone or back says it.
  let local = false;
  const onFallback = (change: { readonly local: boolean; readonly message: string }) => {
    if (change.local === local) return;
    local = change.local;
    result.onFallback?.(change);
  };
  providers.forEach((setup, index) => {
    const { name } = setup.provider;
    const quotaKey = quotaKeys.get(name) ?? flags.quotaKey ?? name;
    shared.push(quotaKey === name ? `"${name}"` : `"${quotaKey}" (${name})`);
    const redisLimits = new RedisLimits({
      connection,
      limits: setup.limits as readonly LimitSpec[],
      quotaKey,
      prefix: flags.redisPrefix,
      fallbackShare: flags.fallbackShare,
      logger,
      onFallback: flags.fallbackShare === undefined ? undefined : onFallback,
    });
    limits.push(redisLimits);
    providers[index] = { ...setup, limits: redisLimits };
  });
  try {
    for (const each of limits) await each.check();
    // The run makes its own budget later; this one only asks whether the user may keep it here.
    if (flags.budgetKey !== undefined && flags.maxCost !== undefined) {
      await new RedisBudget({ connection, key: flags.budgetKey, maxUsd: flags.maxCost, prefix: flags.redisPrefix }).check();
    }
  } catch (error) {
    await connection.close();
    throw checkUsageError(error, flags);
  }
  const fallback = () => limits.map((each) => each.fallback).reduce((a, b) => (b.localMs > a.localMs ? b : a));
  const note = () => {
    const went = fallback();
    const local =
      went.stretches === 0
        ? ''
        : `; Redis was unavailable for ${formatDuration(Math.max(1, Math.round(went.localMs)))}${went.stretches > 1 ? ` in ${went.stretches} stretches` : ''}, ` +
          `when this process went on alone at ${Math.round(flags.fallbackShare! * 100)}% of the quota`;
    return (
      `Shared quota ${shared.join(', ')} through Redis${connection.target.cluster ? ' Cluster' : ''}: the calls and the efficiency above are this process's; ` +
      `other processes on the same quota take their share of the rate${local}`
    );
  };
  return Object.assign(result, { connection, close: () => connection.close(), note, fallback });
}

/**
 * Connects to the Redis the flags name, with their cluster mode and TLS files; a UsageError naming
 * the URL, the cause and the flag that fixes it when Redis cannot be reached. Warns on stderr when
 * the server's certificate is not checked.
 */
export async function connectFlags(
  flags: RedisConnectionFlags & { readonly redis: string },
  logger?: Logger,
  /** The flag that named the URL, as the errors say it. */
  flag = '--redis',
): Promise<RedisConnection> {
  let connection: RedisConnection;
  try {
    connection = await connectRedis(flags.redis, {
      timeoutMs: flags.redisTimeout,
      logger,
      cluster: flags.redisCluster ?? 'auto',
      tls:
        flags.redisCa === undefined && flags.redisCert === undefined
          ? undefined
          : { caFile: flags.redisCa, certFile: flags.redisCert, keyFile: flags.redisKey },
    });
  } catch (error) {
    throw connectUsageError(error, flag);
  }
  if (!connection.target.verifiesServer) {
    process.stderr.write(
      `warning: ${flag}: rejectUnauthorized=false: the Redis server's certificate is not checked, so anyone on the way can pose as it\n`,
    );
  }
  return connection;
}

/** The flags that fix a connection that failed for a known reason. */
const CONNECT_REMEDIES: Readonly<Record<RedisConnectReason, string>> = {
  'untrusted-certificate': 'give the CA that signed it with --redis-ca FILE',
  'certificate-name': 'connect by a name the certificate holds',
  'client-certificate-required': 'it wants a client certificate: --redis-cert FILE --redis-key FILE',
  'client-certificate-refused': 'give one signed by a CA the server trusts (its tls-ca-cert-file)',
  'tls-port': 'if it is a TLS port, it wants a rediss:// URL',
  'plain-port': 'if it is a port without TLS, it wants a redis:// URL',
  'not-a-cluster': 'leave out --redis-cluster',
};

/** What connectRedis refused, as one line naming the flag to fix. Anything else is not a usage error. */
function connectUsageError(error: unknown, flag: string): unknown {
  if (error instanceof RedisConnectError) {
    const remedy = error.reason === undefined ? '' : `; ${CONNECT_REMEDIES[error.reason]}`;
    return new UsageError(`${flag}: cannot connect to Redis at ${error.url}: ${error.detail}${remedy}`);
  }
  if (error instanceof RedisTlsFileError) return new UsageError(`${TLS_FLAGS[error.option]} ${error.path}: ${error.detail}`);
  // A URL that does not parse (its message hides the password), or a parameter it may not carry.
  if (error instanceof TypeError) {
    const parameters = error.message.startsWith("Expected the URL's parameters")
      ? ` (the CA and a client certificate are flags: --redis-ca, --redis-cert, --redis-key)`
      : '';
    return new UsageError(`${flag}: ${error.message}${parameters}`);
  }
  return error;
}

/** What the start check found, as one line: the permission the user lacks, or the cluster flag to give. */
function checkUsageError(error: unknown, flags: RedisFlags): unknown {
  if (error instanceof RedisPermissionError) return new UsageError(`--redis: ${error.message}`);
  if (error instanceof RedisRedirectError) {
    const remedy = flags.redisCluster === false ? 'leave out --no-redis-cluster' : 'give --redis-cluster';
    return new UsageError(`--redis: ${error.message.replace(/: connect in cluster mode$/, '')}: ${remedy}`);
  }
  if (isLimiterUnavailableError(error)) return new UsageError(`--redis: ${error.message}`);
  return error;
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
