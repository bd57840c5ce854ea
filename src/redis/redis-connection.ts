import { Command, type Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkDurationMs, checkString, expected } from '../validation/checks.ts';
import { formatDuration } from '../validation/duration.ts';
import { PROBE, RATE_MEMORY_MS, type RedisScript } from './scripts.ts';

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
});

/** Reconnection attempts are this far apart at most: a restarted Redis is found again well within the timeout. */
const MAX_RECONNECT_DELAY_MS = 200;
/** While calls fail, Redis is pinged this often to know when it answers again. */
const PROBE_EVERY_MS = 250;

export interface RedisConnectOptions {
  /** Connect timeout, and how long any call waits for an answer, in ms, > 0. Default {@link REDIS_DEFAULTS}. */
  readonly timeoutMs?: number | undefined;
  /** Told when Redis stops answering and when it answers again. Default: silent. */
  readonly logger?: Logger | undefined;
}

/** Redis could not be reached at start (refused, unknown host, timed out, a password refused). */
export class RedisConnectError extends Error {
  override readonly name = 'RedisConnectError';

  constructor(
    /** The URL with its password hidden. */
    readonly url: string,
    cause: unknown,
  ) {
    super(`cannot connect to Redis at ${url}: ${describe(cause)}`, { cause });
  }
}

export const isRedisConnectError = (error: unknown): error is RedisConnectError => error instanceof RedisConnectError;

/**
 * Connects to Redis (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS) and resolves
 * once it answers; rejects with {@link RedisConnectError} naming the URL and the cause when it does
 * not within the timeout.
 */
export async function connectRedis(url: string, options: RedisConnectOptions = {}): Promise<RedisConnection> {
  checkString('url', url);
  const shown = redactRedisUrl(url);
  const timeoutMs = options.timeoutMs ?? REDIS_DEFAULTS.timeoutMs;
  checkDurationMs('timeoutMs', timeoutMs, { positive: true });
  // Loaded here, so that importing the library costs nothing to those who never share a quota.
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    // A call waits for a lost connection itself, up to its own deadline; queued inside the client
    // it would be sent after the caller gave up, spending what nobody uses.
    enableOfflineQueue: false,
    // A script whose reply was lost may have run: sent again it would spend twice.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * 50, MAX_RECONNECT_DELAY_MS),
  });
  let lastError: unknown;
  client.on('error', (error) => (lastError = error));
  // connectTimeout bounds the TCP connection only: a server that accepts and never answers is
  // bounded here.
  const silence = new Error(`no answer within ${formatDuration(timeoutMs)}`);
  let timer: NodeJS.Timeout | undefined;
  const connected = client.connect();
  try {
    await Promise.race([connected, new Promise((_, reject) => (timer = setTimeout(() => reject(silence), timeoutMs)))]);
  } catch (error) {
    connected.catch(() => {});
    client.disconnect();
    throw new RedisConnectError(shown, error === silence ? silence : (lastError ?? error));
  } finally {
    clearTimeout(timer);
  }
  return new RedisConnection(client, shown, timeoutMs, options.logger ?? silentLogger);
}

/**
 * One connection to Redis, shared by every provider's limits and store of a process. Each call is
 * one script, sent by its SHA (`EVALSHA`) and as source only when Redis answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`); no script is ever sent twice otherwise, since one whose reply was lost
 * may have run. Calls made in the same tick leave in one write: a socket write is most of what a
 * call costs the client, and a batch read most of what it saves Redis.
 *
 * A call gets an answer within `timeoutMs` — waiting for a lost connection to come back included —
 * or fails with `LimiterUnavailableError`. From then on calls fail at once, without waiting, until a
 * probe every 250 ms gets an answer again. The client reconnects by itself; scripts are reloaded on
 * the new connection.
 */
export class RedisConnection {
  /** The URL with its password hidden: for messages and logs. */
  readonly url: string;
  readonly timeoutMs: number;
  readonly #client: Redis;
  readonly #logger: Logger;
  /** Calls sent on a ready connection, oldest first: their deadlines come in the same order, so one timer serves them all. */
  readonly #inFlight: InFlight[] = [];
  #inFlightHead = 0;
  #watchdog: NodeJS.Timeout | undefined;
  #corked: { uncork(): void } | undefined;
  readonly #uncork = () => {
    const stream = this.#corked;
    this.#corked = undefined;
    stream?.uncork();
  };
  #lastError: unknown;
  #unavailable: LimiterUnavailableError | undefined;
  /** The keys of the call that found Redis unavailable: the probe asks the node that serves them. */
  #probeKeys: readonly string[] = [];
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  #ready: Promise<void> | undefined;
  #closed = false;

  /** Takes over a client made by {@link connectRedis}; use that. */
  constructor(client: Redis, url: string, timeoutMs: number, logger: Logger) {
    this.#client = client;
    this.url = url;
    this.timeoutMs = timeoutMs;
    this.#logger = logger.child({ component: 'redis' });
    client.removeAllListeners('error');
    // Without a listener an 'error' event would crash the process; the cause is kept for the messages.
    client.on('error', (error) => {
      this.#lastError = error;
      this.#logger.debug({ err: error }, 'redis connection error');
    });
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
    return this.#execute(script, keys, args).catch((error: unknown) => {
      const unavailable = this.#unavailableError(error);
      this.#markUnavailable(unavailable, keys);
      throw unavailable;
    });
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

  /** The call on a ready connection: sent at once, timed by the shared watchdog; any other case waits in {@link #executeLater}. */
  #execute(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (this.#client.status !== 'ready') return this.#executeLater(script, keys, args, performance.now() + this.timeoutMs);
    const deadlineMs = performance.now() + this.timeoutMs;
    const command = this.#send(script, keys, args);
    this.#inFlight.push({ command, deadlineMs });
    if (this.#watchdog === undefined) this.#armWatchdog(deadlineMs);
    return command.promise.catch((error: unknown) => {
      // Not run, so safe to send again; anything else is the caller's to see, including a timeout
      // (sent, maybe run: never sent twice).
      if (!command.notRun(error)) throw error;
      return this.#executeLater(script, keys, args, deadlineMs);
    });
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
        // Refused unwritten: the connection is going down, though not yet said so; wait until it is back.
        if (!isNoScript(error)) await this.#whenReady(deadlineMs);
      }
    }
  }

  #send(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): ScriptCommand {
    const command = new ScriptCommand(script, keys, args);
    const stream = this.#client.stream;
    if (this.#corked === undefined && stream !== undefined) {
      stream.cork();
      this.#corked = stream;
      process.nextTick(this.#uncork);
    }
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
      const { command, deadlineMs } = queue[head]!;
      if (command.isSettled) continue;
      if (deadlineMs > nowMs) break;
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
  #unavailableError(error: unknown): LimiterUnavailableError {
    if (error instanceof LimiterUnavailableError) return error;
    return new LimiterUnavailableError(`Redis at ${this.url} answered with an error: ${describe(error)}`, { cause: error });
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
    this.#execute(PROBE, this.#probeKeys, []).then(
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

/** `redis://user:secret@host:6379/0` → `redis://user:***@host:6379/0`; refuses anything but a redis:// or rediss:// URL. */
function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL, so no telling where a password would be: anything between a colon and an @ goes.
    throw expected('url', 'a redis:// or rediss:// URL', url.replace(/:[^:@/]*@/, ':***@'));
  }
  let shown = url;
  if (parsed.password !== '') {
    parsed.password = '***';
    shown = parsed.toString();
  }
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    throw expected('url', 'a redis:// or rediss:// URL', shown);
  }
  return shown;
}

/** Per script, the sockets it was sent on as source: there it goes by SHA. */
const loadedOn = new WeakMap<RedisScript, WeakSet<object>>();

function socketsLoaded(script: RedisScript): WeakSet<object> {
  let loaded = loadedOn.get(script);
  if (loaded === undefined) {
    loaded = new WeakSet();
    loadedOn.set(script, loaded);
  }
  return loaded;
}

/**
 * `EVALSHA`, sent as `EVAL` with the source the first time on each socket (a new connection, a
 * node of a cluster): the calls that follow it on that socket find the script loaded, in the order
 * they were made — a settlement fired before a reservation is applied before it.
 */
class ScriptCommand extends Command {
  readonly #script: RedisScript;
  #socket: object | undefined;

  constructor(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]) {
    super('evalsha', [script.sha, keys.length, ...keys, ...args], { replyEncoding: 'utf8' });
    this.#script = script;
  }

  override toWritable(socket: object): string | Buffer {
    this.#socket = socket;
    const loaded = socketsLoaded(this.#script);
    if (!loaded.has(socket)) {
      loaded.add(socket);
      this.name = 'eval';
      this.args[0] = this.#script.lua;
    }
    return super.toWritable(socket);
  }

  /**
   * Whether `error` says this command did not run, so that sending it again cannot spend twice:
   * refused before it was written (the connection dropped an instant ago), or unknown by its SHA
   * (a restart or `SCRIPT FLUSH`: the next send on the socket carries the source).
   */
  notRun(error: unknown): boolean {
    if (isNoScript(error)) {
      if (this.#socket !== undefined) socketsLoaded(this.#script).delete(this.#socket);
      return true;
    }
    return error instanceof Error && error.message.includes("Stream isn't writeable");
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** A call sent on a ready connection, and when it must have been answered (`performance.now()` ms). */
interface InFlight {
  readonly command: Command;
  readonly deadlineMs: number;
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
