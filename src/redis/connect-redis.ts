import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { loadOptional } from '../optional-package.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkDurationMs, checkObject, checkOneOf, checkString, expected } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import { RedisConnection } from './redis-connection.ts';
import { RedisConnectError } from './redis-errors.ts';
import { connectReason, describeError } from './redis-failure.ts';
import { parseRedisUrl, RedisTarget, type RedisTlsOptions, readTlsSettings } from './redis-target.ts';
import { RATE_MEMORY_MS } from './scripts.ts';

/** What the Redis-backed limits do unless told otherwise. */
export const REDIS_DEFAULTS = Object.freeze({
  /** Every key begins with this, so other applications can share the Redis. */
  prefix: 'news-processor:',
  /**
   * A call to Redis with no answer within this many ms — waiting for a lost connection included —
   * fails with `LimiterUnavailableError`. Also the connect timeout. Long enough for a restart or a
   * failover, short enough that a stopped run says so within seconds.
   */
  timeoutMs: 2000,
  /**
   * A shared rate lowered by the adaptive rate is kept this long after the quota was last used,
   * in ms, even when the bucket is full again: a short pause must not bring back the rate that drew
   * the 429s. After it, the configured rate applies, as it does for a process that starts afresh.
   */
  rateMemoryMs: RATE_MEMORY_MS,
  /** Whether the Redis is a cluster: asked of the server at connect. */
  cluster: 'auto' as const,
});

/** Reconnection attempts are this far apart at most: a restarted Redis is found again well within the timeout. */
const MAX_RECONNECT_DELAY_MS = 200;

export interface RedisConnectOptions {
  /** Connect timeout, and how long any call waits for an answer, in ms, > 0. @default REDIS_DEFAULTS.timeoutMs (2000) */
  readonly timeoutMs?: number | undefined;
  /**
   * `true`: a Redis Cluster, reached through any of its nodes (the URL's); `false`: one server;
   * `'auto'`: asked of the server at connect (`INFO cluster`; a user that may not run it gets
   * `false`, and the start check's `MOVED` says so).
   * @default REDIS_DEFAULTS.cluster ("auto")
   */
  readonly cluster?: boolean | 'auto' | undefined;
  /** Certificates beyond the `rediss://` URL's defaults: a CA to trust, a client certificate. @default none (the URL's defaults) */
  readonly tls?: RedisTlsOptions | undefined;
  /** Told when Redis stops answering and when it answers again. @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

/**
 * Connects to Redis (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS, a Redis
 * Cluster through any node) and resolves once it answers. Rejects with a `TypeError` for a URL or
 * an option that cannot be used (a URL parameter ioredis would ignore, say), with
 * `RedisTlsFileError` for a TLS file that cannot serve, and with {@link RedisConnectError} naming
 * the URL, the cause and, when it can be told, the remedy when Redis cannot be reached within the
 * timeout.
 */
export async function connectRedis(url: string, options: RedisConnectOptions = {}): Promise<RedisConnection> {
  checkString('url', url);
  checkObject('options', options);
  const parsed = parseRedisUrl(url);
  const timeoutMs = options.timeoutMs ?? REDIS_DEFAULTS.timeoutMs;
  checkDurationMs('timeoutMs', timeoutMs, { positive: true });
  const mode = options.cluster ?? REDIS_DEFAULTS.cluster;
  checkOneOf('cluster', mode, [true, false, 'auto']);
  const tls = await readTlsSettings(parsed, options.tls);
  // Loaded here, so that importing the library costs nothing to those who never share a quota.
  const ioredis = await loadOptional('ioredis', 'sharing limits through Redis', () => import('ioredis'));
  const logger = options.logger ?? silentLogger;
  let target = new RedisTarget({ url: parsed, tls, cluster: mode === true, timeoutMs, ioredis });
  if (mode !== true) {
    const single = target.createClient(LIMITER_CLIENT);
    await connectWithin(single, target);
    if (mode === false || !(await isClusterNode(single as Redis, timeoutMs))) {
      return new RedisConnection(single, target, logger, ioredis.Command);
    }
    single.disconnect();
    target = target.withCluster(true);
  }
  if (target.db !== 0) throw expected('the database of a Redis Cluster', '0 (a cluster has no other)', `/${target.db}`);
  const cluster = target.createClient(LIMITER_CLIENT, LIMITER_CLUSTER);
  await connectWithin(cluster, target);
  return new RedisConnection(cluster, target, logger, ioredis.Command);
}

/** How the limiter's own client differs from ioredis's defaults. */
const LIMITER_CLIENT = Object.freeze({
  lazyConnect: true,
  // A call waits for a lost connection itself, up to its own deadline; queued inside the client
  // it would be sent after the caller gave up, spending what nobody uses.
  enableOfflineQueue: false,
  // A script whose reply was lost may have run: sent again it would spend twice.
  autoResendUnfulfilledCommands: false,
  // The ready check runs INFO, which a user limited to the limiter's commands may not run (and
  // ioredis would print a warning); a server still loading its data answers LOADING, which the
  // calls see as Redis unavailable until it is done.
  enableReadyCheck: false,
  retryStrategy: (attempt: number) => Math.min(attempt * 50, MAX_RECONNECT_DELAY_MS),
});

/** How the limiter's cluster client differs from ioredis's defaults: no call is ever sent again by the client itself. */
const LIMITER_CLUSTER = Object.freeze({
  // A command on a connection that closed may have run; resent on another node it would spend twice.
  retryDelayOnFailover: 0,
  // A cluster that is down fails the call at once (LimiterUnavailableError), rather than being
  // retried by the client past the call's deadline.
  retryDelayOnClusterDown: 0,
});

/** Resolves once `client` is ready; rejects with a RedisConnectError, the client disconnected, when it is not within the timeout. */
async function connectWithin(client: Redis | Cluster, target: RedisTarget): Promise<void> {
  let lastError: unknown;
  const remember = (error: unknown) => (lastError = error);
  client.on('error', remember);
  client.on('node error', remember);
  // connectTimeout bounds the TCP connection only: a server that accepts and never answers is
  // bounded here.
  const silence = new Error(`no answer within ${formatDuration(target.timeoutMs)}`);
  let timer: NodeJS.Timeout | undefined;
  const connected = client.connect();
  try {
    await Promise.race([connected, new Promise((_, reject) => (timer = setTimeout(() => reject(silence), target.timeoutMs)))]);
  } catch (error) {
    connected.catch(() => {});
    client.disconnect();
    // A cluster client that found no node to ask says so, and keeps what the last node said.
    const outer = lastError ?? error;
    const inner = (outer as { lastNodeError?: unknown } | null)?.lastNodeError;
    const cause = inner ?? outer;
    let detail = inner === undefined ? describeError(outer) : `${describeError(outer).replace(/\.$/, '')} (${describeError(inner)})`;
    const reason = connectReason(cause, error === silence, target);
    if (reason?.startsWith('client-certificate') && /ECONNRESET|EPIPE|alert/.test(detail)) {
      detail = `the server closed the connection in the TLS handshake (${detail})`;
    }
    throw new RedisConnectError(target.url, detail, reason, cause);
  } finally {
    clearTimeout(timer);
    client.off('error', remember);
    client.off('node error', remember);
  }
}

/** Whether the server says it is a Redis Cluster node; false when the user may not ask. */
async function isClusterNode(client: Redis, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const info = client.info('cluster');
  try {
    const text = await Promise.race([info, new Promise<string>((resolve) => (timer = setTimeout(() => resolve(''), timeoutMs)))]);
    return /^cluster_enabled:1\b/m.test(text);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
