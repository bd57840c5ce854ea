import type { Cluster, Command, Redis } from 'ioredis';
import type { RedisScript } from './scripts.ts';

/**
 * The hash tags a cluster connection remembers its scripts' sources for, at most: past it they are
 * forgotten together, and the next call of each tag carries its source again — a few bytes more,
 * where remembering every tag of the middleware's per-client keys would grow without end.
 */
const MAX_TAGS = 10_000;

/**
 * Sends a connection's script calls, each a command of its own through ioredis' public
 * `sendCommand`: by its SHA (`EVALSHA`) once the connection has sent its source (`EVAL`, with the
 * first call of the script) to the server that runs it — on a Redis Cluster, per hash tag, since a
 * quota's keys share one and so a node. The calls after the source find the script loaded, in the
 * order they were made: a settlement fired before a reservation is applied before it. Sources are
 * sent again after the client connects anew (a restarted Redis has forgotten them).
 *
 * A call that meets `NOSCRIPT` (a restart not yet seen, `SCRIPT FLUSH`) did not run;
 * {@link ScriptSender.notRun} says so, and the source goes with the next call, once however many
 * calls met it.
 */
export class ScriptSender {
  readonly #client: Redis | Cluster;
  readonly #Command: typeof Command;
  readonly #cluster: boolean;
  /** Per hash tag ('' out of cluster mode), the scripts whose source went out, and with which send. */
  readonly #sourceAt = new Map<string, Map<RedisScript, number>>();
  #sends = 0;

  /** `command` is ioredis' `Command` class, as `connectRedis` loaded it. */
  constructor(client: Redis | Cluster, command: typeof Command, cluster: boolean) {
    this.#client = client;
    this.#Command = command;
    this.#cluster = cluster;
    const forget = () => this.#sourceAt.clear();
    client.on('ready', forget);
    client.on('+node', forget);
  }

  /** The number of the last send: what {@link notRun} is told of a call. */
  get sends(): number {
    return this.#sends;
  }

  /**
   * Sends `script` on `keys` and `args`; the command's promise settles with its reply. A command
   * settled when this returns was refused unwritten (a connection going down, a cluster node still
   * connecting): nothing is answered before it is written.
   */
  send(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Command {
    const sources = this.#sources(this.#cluster ? hashTag(keys[0] ?? '') : '');
    const sentAt = ++this.#sends;
    const bySha = sources.has(script);
    if (!bySha) sources.set(script, sentAt);
    const command = new this.#Command(bySha ? 'evalsha' : 'eval', [bySha ? script.sha : script.lua, keys.length, ...keys, ...args], {
      replyEncoding: 'utf8',
    });
    void this.#client.sendCommand(command);
    // A source refused unwritten has not been sent: the next call carries it.
    if (command.isSettled && !bySha) sources.delete(script);
    return command;
  }

  /**
   * Whether `error`, the failure of the call of `script` on `keys` sent as number `sentAt`, says
   * it did not run, so that sending it again cannot spend twice: refused unwritten (`unsent`: it was
   * settled when {@link send} returned), or unknown by its SHA. A call's own deadline is never a
   * reason to send again.
   */
  notRun(script: RedisScript, keys: readonly string[], sentAt: number, unsent: boolean, error: unknown): boolean {
    if (unsent) return true;
    if (!isNoScript(error)) return false;
    // Forgotten by Redis since its source went out — unless the source went again after this
    // call, on another's NOSCRIPT: then the next send finds it loaded.
    const sources = this.#sourceAt.get(this.#cluster ? hashTag(keys[0] ?? '') : '');
    const sourceAt = sources?.get(script);
    if (sourceAt !== undefined && sourceAt < sentAt) sources!.delete(script);
    return true;
  }

  #sources(tag: string): Map<RedisScript, number> {
    let sources = this.#sourceAt.get(tag);
    if (sources === undefined) {
      if (this.#sourceAt.size >= MAX_TAGS) this.#sourceAt.clear();
      sources = new Map();
      this.#sourceAt.set(tag, sources);
    }
    return sources;
  }
}

/** What Redis Cluster hashes of a key: the part between the first `{` and the next `}`, when not empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
