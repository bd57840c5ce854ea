import type { Cluster, Command, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkDurationMs, checkObject, checkOneOf, checkString, expected } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import { type RedisConnectReason, RedisConnectError, RedisPermissionError, RedisRedirectError } from './redis-errors.ts';
import { parseRedisUrl, RedisTarget, type RedisTlsOptions, readTlsSettings } from './redis-target.ts';
import { CHECK, PROBE, RATE_MEMORY_MS, type RedisScript } from './scripts.ts';
import { loadOptional } from '../optional-package.ts';
import { isNoScript, scriptCommandClass, type ScriptCommand, type ScriptCommandClass } from './script-command.ts';

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
/** A call refused unsent by a cluster node that is connecting is sent again after this many ms. */
const RESEND_PAUSE_MS = 10;
/** While calls fail, Redis is probed this often to know when it answers again. */
const PROBE_EVERY_MS = 250;

/** What `connectRedis()` takes besides the URL: the timeout, cluster mode, TLS files, a logger. */
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
    let detail = inner === undefined ? describe(outer) : `${describe(outer).replace(/\.$/, '')} (${describe(inner)})`;
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

/** Why a connection failed, told from the error when it can be: what the remedy is. */
function connectReason(error: unknown, silent: boolean, target: RedisTarget): RedisConnectReason | undefined {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  const message = describe(error);
  if (/cluster support disabled/i.test(message)) return 'not-a-cluster';
  // A plain server never drops a client that has said nothing wrong; a TLS port drops one that says "HELLO".
  if (!target.tls) return code === 'ECONNRESET' || code === 'EPIPE' ? 'tls-port' : undefined;
  if (
    [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    ].includes(code)
  ) {
    return 'untrusted-certificate';
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'certificate-name';
  const { clientCertificate } = target;
  if (code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED') return 'client-certificate-required';
  // TLS 1.3 ends the handshake on the client's side before the server has looked at its
  // certificate: a server that wants one and got none just drops the connection.
  if (!clientCertificate && (code === 'ECONNRESET' || code === 'EPIPE')) return 'client-certificate-required';
  if (clientCertificate && (/^ERR_SSL_(TLSV1|SSLV3)_ALERT_/.test(code) || code === 'ECONNRESET' || code === 'EPIPE')) {
    return 'client-certificate-refused';
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ETIMEDOUT' || silent) return 'plain-port';
  return undefined;
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

/**
 * One connection to Redis, shared by every provider's limits and store of a process. Each call is
 * one script, sent by its SHA (`EVALSHA`) and as source only when Redis answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`); no script is ever sent twice otherwise, since one whose reply was lost
 * may have run. Calls made in the same tick leave together, a few to a socket write.
 *
 * A call gets an answer within `timeoutMs` — waiting for a lost connection to come back included —
 * or fails with `LimiterUnavailableError`. From then on calls fail at once, without waiting, until a
 * probe every 250 ms gets an answer again. The client reconnects by itself; scripts are reloaded on
 * the new connection.
 */
export class RedisConnection {
  /** The URL with its password hidden: for messages and logs. */
  readonly url: string;
  /** The longest a call waits for an answer, in ms, before it fails with `LimiterUnavailableError`. */
  readonly timeoutMs: number;
  /** Where this connection goes, as settings that build more clients like it (`target.createClient()`). */
  readonly target: RedisTarget;
  readonly #client: Redis | Cluster;
  readonly #logger: Logger;
  readonly #ScriptCommand: ScriptCommandClass;
  /** Calls sent on a ready connection, oldest first: their deadlines come in the same order, so one timer serves them all. */
  readonly #inFlight: ScriptCommand[] = [];
  #inFlightHead = 0;
  #watchdog: NodeJS.Timeout | undefined;
  #lastError: unknown;
  #unavailable: LimiterUnavailableError | undefined;
  /** The keys of the call that found Redis unavailable: the probe asks the node that serves them. */
  #probeKeys: readonly string[] = [];
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  #ready: Promise<void> | undefined;
  #closed = false;

  /** Takes over a client made by {@link connectRedis}; use that. */
  constructor(client: Redis | Cluster, target: RedisTarget, logger: Logger, command: typeof Command) {
    this.#client = client;
    this.target = target;
    this.url = target.url;
    this.timeoutMs = target.timeoutMs;
    this.#logger = logger.child({ component: 'redis' });
    this.#ScriptCommand = scriptCommandClass(command);
    // Without a listener an 'error' event would crash the process; the cause is kept for the messages.
    const remember = (error: unknown) => {
      this.#lastError = error;
      this.#logger.debug({ err: error }, 'redis connection error');
    };
    client.on('error', remember);
    client.on('node error', remember);
  }

  /** False from a call that got no usable answer until Redis answers a probe again. */
  get available(): boolean {
    return this.#unavailable === undefined;
  }

  /**
   * Runs `script` on `keys` and `args` and resolves with its reply. Rejects with
   * `LimiterUnavailableError` when no answer comes within the timeout, when Redis answers with an
   * error, and at once while Redis is known to be unavailable or the connection is closed.
   */
  run(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(new LimiterUnavailableError(`the connection to Redis at ${this.url} is closed`));
    if (this.#unavailable !== undefined) return Promise.reject(this.#unavailable);
    return this.#execute(script, keys, args, this.#failed);
  }

  /** What a call that failed tells its caller, once Redis is marked unavailable (unless the reason is a setting). */
  readonly #failed = (error: unknown, keys: readonly string[]): never => {
    const unavailable = this.#unavailableError(error, keys);
    // A redirect is a setting to fix, not a Redis gone: nothing to wait for.
    if (!(unavailable instanceof RedisRedirectError)) this.#markUnavailable(unavailable, keys);
    throw unavailable;
  };

  /**
   * Checks, before the first call, that `scripts` can work on `keys`: that the user may run them
   * there (`EVALSHA`, `EVAL`) and what they run (`commands`, among `time`, `get`, `set`, `del`,
   * `incrby`, `decrby`), and, out of cluster mode, that this server serves the keys. Rejects with
   * {@link RedisPermissionError} (naming `keyPattern`, the pattern the user needs),
   * {@link RedisRedirectError} (a cluster node), or `LimiterUnavailableError`. Changes nothing
   * (before Redis 7, which cannot ask about a permission without using it, the writes go unchecked).
   */
  async checkAccess(
    keys: readonly string[],
    scripts: readonly RedisScript[],
    keyPattern: string,
    commands: readonly string[] = ['time', 'get', 'set', 'del'],
  ): Promise<void> {
    const refused = (detail: string) =>
      new RedisPermissionError(
        this.target.username ?? 'default',
        detail,
        `~${keyPattern}`,
        ['evalsha', 'eval', ...commands].map((c) => `+${c}`).join(' '),
      );
    let denied: unknown;
    try {
      denied = await this.#execute(CHECK, keys, [commands.join(' '), ...scripts.map((script) => script.sha)], rethrow);
    } catch (error) {
      const message = describe(error);
      // NOPERM from Redis itself (a key or a command refused); from inside a script, Redis 6 says it in other words.
      if (/^NOPERM|can't run this command/.test(message)) throw refused(message);
      throw this.#unavailableError(error, keys);
    }
    if (denied !== null) throw refused(`NOPERM this user has no permissions to run '${denied}'`);
  }

  /** Closes the connection; calls after it fail at once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopProbe();
    // QUIT lets the last refunds and settlements be applied first, unless Redis is not answering.
    if (this.#client.status === 'ready' && this.#unavailable === undefined) {
      await this.#within(this.#client.quit(), performance.now() + this.timeoutMs).catch(() => {});
    }
    this.#client.disconnect();
    clearTimeout(this.#watchdog);
  }

  /**
   * The call on a ready connection: sent at once, timed by the shared watchdog; any other case
   * waits in {@link #executeLater}. A failure that is final goes to `failed`.
   */
  #execute(
    script: RedisScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    failed: (error: unknown, keys: readonly string[]) => never,
  ): Promise<unknown> {
    const deadlineMs = performance.now() + this.timeoutMs;
    if (this.#client.status !== 'ready') return this.#executeLater(script, keys, args, deadlineMs).catch((error) => failed(error, keys));
    const command = this.#send(script, keys, args);
    command.deadlineMs = deadlineMs;
    this.#track(command);
    return command.promise.catch((error: unknown) => {
      // Not run, so safe to send again; anything else is the caller's to see, including a timeout
      // (sent, maybe run: never sent twice).
      if (!command.notRun(error)) return failed(error, keys);
      return this.#executeLater(script, keys, args, deadlineMs).catch((later) => failed(later, keys));
    });
  }

  /**
   * Puts a sent call under the watchdog. The answered calls at the head go first: replies come in
   * the order sent, so the queue holds about the calls in flight, not every call of the timeout.
   */
  #track(command: ScriptCommand): void {
    const queue = this.#inFlight;
    let head = this.#inFlightHead;
    while (head < queue.length && queue[head]!.isSettled) head++;
    if (head === queue.length) {
      queue.length = 0;
      head = 0;
    } else if (head >= 64 && head * 2 >= queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    this.#inFlightHead = head;
    queue.push(command);
    if (this.#watchdog === undefined) this.#armWatchdog(command.deadlineMs);
  }

  /** A call that must wait for the connection, or be sent as source: each step within the call's own deadline. */
  async #executeLater(
    script: RedisScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    deadlineMs: number,
  ): Promise<unknown> {
    for (;;) {
      while (this.#client.status !== 'ready') await this.#whenReady(deadlineMs);
      const command = this.#send(script, keys, args);
      try {
        return await this.#within(command.promise, deadlineMs);
      } catch (error) {
        if (!command.notRun(error)) throw error;
        // Refused unwritten: the connection is going down, though not yet said so, or (on a
        // cluster) the node is still connecting; wait until it is back, or a moment.
        if (!isNoScript(error))
          await (this.#client.status === 'ready' && this.target.cluster ? this.#pause(deadlineMs) : this.#whenReady(deadlineMs));
      }
    }
  }

  #send(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): ScriptCommand {
    const command = new this.#ScriptCommand(script, keys, args);
    void this.#client.sendCommand(command);
    return command;
  }

  #armWatchdog(atMs: number): void {
    this.#watchdog = setTimeout(this.#watch, Math.max(0, atMs - performance.now()));
    this.#watchdog.unref();
  }

  /** Fails the calls past their deadline, forgets the answered ones, and waits for the next deadline. */
  readonly #watch = () => {
    this.#watchdog = undefined;
    const nowMs = performance.now();
    const queue = this.#inFlight;
    let head = this.#inFlightHead;
    for (; head < queue.length; head++) {
      const command = queue[head]!;
      if (command.isSettled) continue;
      if (command.deadlineMs > nowMs) break;
      command.reject(this.#timeoutError());
    }
    if (head === queue.length) {
      queue.length = 0;
      head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    this.#inFlightHead = head;
    if (head < queue.length) this.#armWatchdog(queue[head]!.deadlineMs);
  };

  #within<T>(promise: Promise<T>, deadlineMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(this.#timeoutError()), Math.max(0, deadlineMs - performance.now()));
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** Resolves after a moment, or rejects at the deadline if that comes first. */
  #pause(deadlineMs: number): Promise<void> {
    if (performance.now() + RESEND_PAUSE_MS > deadlineMs) return Promise.reject(this.#timeoutError());
    return new Promise((resolve) => setTimeout(resolve, RESEND_PAUSE_MS));
  }

  /** Resolves when the client is ready again: one promise for every caller waiting, so no listener piles up. */
  #whenReady(deadlineMs: number): Promise<void> {
    this.#ready ??= new Promise<void>((resolve) => {
      const settle = () => {
        this.#client.off('ready', settle);
        this.#client.off('end', settle);
        this.#ready = undefined;
        resolve();
      };
      this.#client.once('ready', settle);
      this.#client.once('end', settle);
    });
    if (this.#client.status === 'end')
      return Promise.reject(new LimiterUnavailableError(`the connection to Redis at ${this.url} has ended`));
    return this.#within(this.#ready, deadlineMs);
  }

  #timeoutError(): LimiterUnavailableError {
    const status =
      this.#client.status === 'ready'
        ? ''
        : ` (connection ${this.#client.status}${this.#lastError === undefined ? '' : `: ${describe(this.#lastError)}`})`;
    return new LimiterUnavailableError(`Redis at ${this.url} did not answer within ${formatDuration(this.timeoutMs)}${status}`);
  }

  /** What a failed call tells its caller: a `LimiterUnavailableError` naming the URL. */
  #unavailableError(error: unknown, keys: readonly string[]): LimiterUnavailableError {
    if (error instanceof LimiterUnavailableError) return error;
    const message = describe(error);
    // A cluster client follows redirects itself; a plain one is talking to a cluster node.
    const redirect = /^(MOVED|ASK) (\d+) (\S+)/.exec(message);
    if (redirect !== null && !this.target.cluster) {
      return new RedisRedirectError(
        `Redis at ${this.url} is a Redis Cluster node, and ${keys[0]} (slot ${redirect[2]}) is served by ${redirect[3]} (${redirect[1]}): connect in cluster mode`,
        { cause: error },
      );
    }
    // Said by the client, not by Redis: the connection (on a cluster, to the node of the keys' slot) went down under the call.
    if (message === 'Connection is closed.') {
      const node = this.target.cluster ? ` to the node that serves ${keys[0]}` : '';
      return new LimiterUnavailableError(`the connection to Redis at ${this.url}${node} closed`, { cause: error });
    }
    return new LimiterUnavailableError(`Redis at ${this.url} answered with an error: ${message}`, { cause: error });
  }

  #markUnavailable(error: LimiterUnavailableError, keys: readonly string[]): void {
    if (this.#unavailable !== undefined || this.#closed) return;
    this.#unavailable = error;
    this.#probeKeys = keys;
    this.#logger.warn({ url: this.url, err: error }, 'Redis unavailable');
    this.#probe = setInterval(() => this.#ping(), PROBE_EVERY_MS);
    this.#probe.unref();
  }

  /** A script that does nothing, on the keys of the call that failed: the user may run it wherever it may run the limiter's. */
  #ping(): void {
    if (this.#probing || this.#client.status !== 'ready') return;
    this.#probing = true;
    this.#execute(PROBE, this.#probeKeys, [], rethrow).then(
      () => {
        this.#probing = false;
        if (this.#closed || this.#unavailable === undefined) return;
        this.#unavailable = undefined;
        this.#stopProbe();
        this.#logger.warn({ url: this.url }, 'Redis answers again');
      },
      () => {
        this.#probing = false;
      },
    );
  }

  #stopProbe(): void {
    clearInterval(this.#probe);
    this.#probe = undefined;
  }
}

/** Throws unless `value` is a {@link RedisConnection} (what the Redis limits and store are built on). */
export function checkConnection(value: unknown): asserts value is RedisConnection {
  if (value === null || typeof value !== 'object' || typeof (value as { run?: unknown }).run !== 'function') {
    throw expected('connection', 'a RedisConnection', value);
  }
}

/**
 * A part of a key name. Braces are refused: Redis Cluster hashes only what is between the first
 * `{` and the next `}`, and every key of a quota must hash alike (`{quotaKey}`) for its scripts to run.
 */
export function checkKeyPart(name: string, value: unknown, allowEmpty: boolean): asserts value is string {
  if (allowEmpty && value === '') return;
  checkString(name, value);
  if (/[{}]/.test(value)) throw expected(name, 'a name without { or }', value);
}

/** For calls whose caller reads the error itself. */
function rethrow(error: unknown): never {
  throw error;
}

/** An error's message; OpenSSL's (`808C…:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:…`) as its words alone. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return /:SSL routines:[^:]*:([^:]+):/.exec(message)?.[1] ?? message;
}
