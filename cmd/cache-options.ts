// --cache and --cache-ttl: the answer cache a run (or a queue worker) keeps its answers in.
import { Option, type Command } from 'commander';
import type { Logger } from 'pino';
import { LmdbAnswerCache, MissingPackageError, type AnswerCache } from '../src/index.ts';
import { RedisAnswerCache } from '../src/redis/index.ts';
import { duration } from './parse-values.ts';
import { checkRedisUrl, checkTlsFlags, connectFlags, isRedisUrl, type RedisConnectionFlags } from './redis-options.ts';
import { UsageError } from './usage-error.ts';

export interface CacheFlags extends RedisConnectionFlags {
  cache?: string;
  cacheTtl?: number;
}

/** Adds --cache and --cache-ttl. */
export function addCacheOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--cache <dir|url>',
        'keep every answer and take it from there next time, no call made: a directory (LMDB, made if missing), ' +
          'or a redis:// URL shared by every process (reached with the --redis-* connection flags)',
      ),
    )
    .addOption(
      new Option('--cache-ttl <duration>', 'with --cache: how long an answer is kept')
        .argParser(duration({ allowZero: false }))
        .default(undefined, 'for good'),
    );
}

/** Throws a UsageError for cache flags that do not go together. */
export function validateCacheFlags(flags: CacheFlags): void {
  if (flags.cache === undefined) {
    if (flags.cacheTtl !== undefined) throw new UsageError('--cache-ttl needs --cache (the cache whose answers it keeps)');
    return;
  }
  if (flags.cache.trim() === '') throw new UsageError('--cache: expected a directory or a redis:// URL, got nothing');
  // Any other scheme is a mistake, not a directory named "http:": said without the URL, which may hold a password.
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(flags.cache)?.[1];
  if (scheme !== undefined && !isRedisUrl(flags.cache)) {
    throw new UsageError(`--cache: expected a directory or a redis:// or rediss:// URL, got a ${scheme}:// URL`);
  }
  if (isRedisUrl(flags.cache)) {
    checkRedisUrl(flags.cache, '--cache');
    checkTlsFlags(flags, flags.cache, '--cache');
  }
}

/**
 * The cache --cache names, open: a Redis one reached with the connection flags (checked before any
 * call: a UsageError naming --cache when it cannot be reached or its user may not read and write
 * the answers), or an LMDB directory (a UsageError naming it when it cannot hold one). Undefined
 * without --cache.
 */
export async function openCache(flags: CacheFlags, logger: Logger): Promise<AnswerCache | undefined> {
  const { cache: location, cacheTtl: ttlMs } = flags;
  if (location === undefined) return undefined;
  if (isRedisUrl(location)) {
    const connection = await connectFlags({ ...flags, redis: location }, logger, '--cache');
    // The connection was for finding the Redis (cluster or not, TLS, the timeout); the cache makes its own client.
    const cache = new RedisAnswerCache({ target: connection.target, prefix: flags.redisPrefix, ttlMs });
    await connection.close();
    try {
      await cache.check();
    } catch (error) {
      await cache.close();
      throw new UsageError(`--cache: Redis at ${cache.location} cannot keep the answers: ${(error as Error).message}`);
    }
    return cache;
  }
  try {
    return await LmdbAnswerCache.open(location, { ttlMs });
  } catch (error) {
    if (error instanceof MissingPackageError) throw error;
    throw new UsageError(`--cache: ${(error as Error).message}`);
  }
}
