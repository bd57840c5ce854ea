import type { Command } from 'ioredis';
import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import type { RedisScript } from './scripts.ts';

// How a script call goes on the wire: batched writes and EVALSHA-or-EVAL per socket. It works with
// ioredis' Command as `connectRedis` loads it (its `toWritable`, the socket's cork and uncork):
// what saves the round trips and the writes that make a call cost what it does.

/**
 * Calls made in the same tick leave in one socket write, this many at most: a write is most of what
 * a call costs the client (and a batch read saves Redis as much), while a batch of every call in
 * flight would keep Redis idle while the client writes it, and the client idle while Redis answers.
 */
const CALLS_PER_WRITE = 8;

/** A socket, as far as batching writes goes. */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/** The sockets corked in this tick, with how many calls each holds so far. */
const corked = new Map<Corkable, number>();

/**
 * Holds a call's write on `socket` until the end of the tick, with the others of the tick on the
 * same socket (of a node, on a cluster), {@link CALLS_PER_WRITE} to a write. Called just before
 * the call is written.
 */
function batch(socket: Corkable): void {
  const held = corked.get(socket);
  if (held === undefined) {
    if (corked.size === 0) process.nextTick(uncorkAll);
    socket.cork();
    corked.set(socket, 1);
  } else if (held === CALLS_PER_WRITE) {
    socket.uncork();
    socket.cork();
    corked.set(socket, 1);
  } else {
    corked.set(socket, held + 1);
  }
}

function uncorkAll(): void {
  for (const socket of corked.keys()) socket.uncork();
  corked.clear();
}

/**
 * Per script, the sockets it was sent on as source, and when (the number of the write): there it
 * goes by SHA.
 */
const loadedOn = new WeakMap<RedisScript, WeakMap<object, number>>();
/** Calls written so far, numbered: what tells a source sent before a call from one sent after it. */
let writes = 0;

function socketsLoaded(script: RedisScript): WeakMap<object, number> {
  let loaded = loadedOn.get(script);
  if (loaded === undefined) {
    loaded = new WeakMap();
    loadedOn.set(script, loaded);
  }
  return loaded;
}

/**
 * `EVALSHA`, sent as `EVAL` with the source the first time on each socket (a new connection, a
 * node of a cluster): the calls that follow it on that socket find the script loaded, in the order
 * they were made — a settlement fired before a reservation is applied before it.
 * (Made from the Command class of ioredis as loaded by `connectRedis`.)
 */
export function scriptCommandClass(Base: typeof Command): ScriptCommandClass {
  return class ScriptCommand extends Base {
    readonly #script: RedisScript;
    #socket: object | undefined;
    #written = 0;
    /** When it must have been answered (`performance.now()` ms), once sent on a ready connection. */
    deadlineMs = Infinity;

    constructor(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]) {
      super('evalsha', [script.sha, keys.length, ...keys, ...args], { replyEncoding: 'utf8' });
      this.#script = script;
    }

    override toWritable(socket: object): string | Buffer {
      this.#socket = socket;
      this.#written = ++writes;
      batch(socket as Corkable);
      const loaded = socketsLoaded(this.#script);
      if (!loaded.has(socket)) {
        loaded.set(socket, this.#written);
        this.name = 'eval';
        this.args[0] = this.#script.lua;
      }
      return super.toWritable(socket);
    }

    /**
     * Whether `error` says this command did not run, so that sending it again cannot spend twice:
     * refused before it was written to any socket (the connection dropped an instant ago, a
     * cluster node not connected yet), or unknown by its SHA (a restart or `SCRIPT FLUSH`: the next
     * send on the socket carries the source). A call's own deadline is never a reason to send again.
     */
    notRun(error: unknown): boolean {
      if (isNoScript(error)) {
        // Forgotten by Redis since the source went on this socket — unless it went again after
        // this call, on another's NOSCRIPT: then the next send finds it loaded.
        const loaded = socketsLoaded(this.#script);
        const sourceAt = this.#socket === undefined ? undefined : loaded.get(this.#socket);
        if (sourceAt !== undefined && sourceAt < this.#written) loaded.delete(this.#socket!);
        return true;
      }
      return this.#socket === undefined && !(error instanceof LimiterUnavailableError);
    }
  };
}

/** A script call as it goes on the wire: a Command that knows when it must have been answered, and whether a failure means it never ran. */
export interface ScriptCommand extends Command {
  /** When it must have been answered (`performance.now()` ms), once sent on a ready connection. */
  deadlineMs: number;
  /** Whether `error` says this command did not run, so that sending it again cannot spend twice. */
  notRun(error: unknown): boolean;
}

/** The class {@link scriptCommandClass} makes: a script, its keys and its arguments in, a command out. */
export type ScriptCommandClass = new (script: RedisScript, keys: readonly string[], args: readonly (string | number)[]) => ScriptCommand;

/** Whether Redis answered that it does not know the script by its SHA (a restart, `SCRIPT FLUSH`). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
