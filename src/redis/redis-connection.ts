import type { Cluster, Command, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { formatDuration } from '../validation/duration.ts';
import { CallWatchdog } from './call-watchdog.ts';
import { RedisPermissionError, RedisRedirectError } from './redis-errors.ts';
import { callFailure, describeError } from './redis-failure.ts';
import type { RedisTarget } from './redis-target.ts';
import { isNoScript, ScriptSender } from './script-sender.ts';
import { CHECK, PROBE, type RedisScript } from './scripts.ts';

/** A call refused unsent by a cluster node that is connecting is sent again after this many ms. */
const RESEND_PAUSE_MS = 10;
/** While calls fail, Redis is probed this often to know when it answers again. */
const PROBE_EVERY_MS = 250;

/**
 * One connection to Redis, shared by every provider's limits and store of a process. Each call is
 * one script, sent by its SHA (`EVALSHA`) once the connection has sent its source, and again only
 * when Redis answers `NOSCRIPT` (after a restart or `SCRIPT FLUSH`): no call is ever sent twice
 * otherwise, since one whose reply was lost may have run ({@link ScriptSender}).
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
  /** Where this connection goes, as settings that build more clients like it (`target.createClient()`). */
  readonly target: RedisTarget;
  readonly #client: Redis | Cluster;
  readonly #logger: Logger;
  readonly #sender: ScriptSender;
  readonly #watchdog = new CallWatchdog(() => this.#timeoutError());
  #lastError: unknown;
  #unavailable: LimiterUnavailableError | undefined;
  /** The keys of the call that found Redis unavailable: the probe asks the node that serves them. */
  #probeKeys: readonly string[] = [];
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  #ready: Promise<void> | undefined;
  #closed = false;

  /** Takes over a client made by `connectRedis`; use that. */
  constructor(client: Redis | Cluster, target: RedisTarget, logger: Logger, command: typeof Command) {
    this.#client = client;
    this.target = target;
    this.url = target.url;
    this.timeoutMs = target.timeoutMs;
    this.#logger = logger.child({ component: 'redis' });
    this.#sender = new ScriptSender(client, command, target.cluster);
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
    const unavailable = callFailure(error, keys, this.target);
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
      const message = describeError(error);
      // NOPERM from Redis itself (a key or a command refused); from inside a script, Redis 6 says it in other words.
      if (/^NOPERM|can't run this command/.test(message)) throw refused(message);
      throw callFailure(error, keys, this.target);
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
    this.#watchdog.stop();
  }

  /**
   * The call on a ready connection: sent at once, timed by the shared watchdog; any other case waits in
   * {@link #executeLater}. A failure that is final goes to `failed`.
   */
  #execute(
    script: RedisScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    failed: (error: unknown, keys: readonly string[]) => never,
  ): Promise<unknown> {
    const deadlineMs = performance.now() + this.timeoutMs;
    if (this.#client.status !== 'ready') return this.#executeLater(script, keys, args, deadlineMs).catch((error) => failed(error, keys));
    const command = this.#sender.send(script, keys, args);
    const sentAt = this.#sender.sends;
    const unsent = command.isSettled;
    if (!unsent) this.#watchdog.track(command, deadlineMs);
    return command.promise.catch((error: unknown) => {
      // Not run, so safe to send again; anything else is the caller's to see, including a timeout
      // (sent, maybe run: never sent twice).
      if (!this.#sender.notRun(script, keys, sentAt, unsent, error)) return failed(error, keys);
      return this.#executeLater(script, keys, args, deadlineMs).catch((later) => failed(later, keys));
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
      const command = this.#sender.send(script, keys, args);
      const sentAt = this.#sender.sends;
      const unsent = command.isSettled;
      try {
        return await this.#within(command.promise, deadlineMs);
      } catch (error) {
        if (!this.#sender.notRun(script, keys, sentAt, unsent, error)) throw error;
        // Refused unwritten: the connection is going down, though not yet said so, or (on a
        // cluster) the node is still connecting; wait until it is back, or a moment.
        if (!isNoScript(error))
          await (this.#client.status === 'ready' && this.target.cluster ? this.#pause(deadlineMs) : this.#whenReady(deadlineMs));
      }
    }
  }

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
        : ` (connection ${this.#client.status}${this.#lastError === undefined ? '' : `: ${describeError(this.#lastError)}`})`;
    return new LimiterUnavailableError(`Redis at ${this.url} did not answer within ${formatDuration(this.timeoutMs)}${status}`);
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

/** For calls whose caller reads the error itself. */
function rethrow(error: unknown): never {
  throw error;
}
