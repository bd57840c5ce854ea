import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';

/**
 * The ways Redis can be wrong for the limiter, each its own class with a type guard: the CLI turns
 * each into one line and exit 2 before any call, a library caller into whatever it does with a
 * configuration error.
 */

/** Why a connection could not be made, when it can be told: each has a remedy to show. */
export type RedisConnectReason =
  /** The server's certificate is signed by a CA this process does not trust. */
  | 'untrusted-certificate'
  /** The server's certificate names other hosts than the one connected to. */
  | 'certificate-name'
  /** A server that checks client certificates closed the connection of a client without one. */
  | 'client-certificate-required'
  /** The server refused the client certificate given. */
  | 'client-certificate-refused'
  /** A plain connection was dropped at once, as a TLS port drops it. */
  | 'tls-port'
  /** A TLS handshake got no answer, as from a plain port. */
  | 'plain-port'
  /** Cluster mode was asked of a server that is not part of a cluster. */
  | 'not-a-cluster';

/** The remedies in the library's terms (the CLI has its own, in flags). */
const REMEDIES: Readonly<Record<RedisConnectReason, string>> = {
  'untrusted-certificate': 'trust the CA that signed it (tls.caFile)',
  'certificate-name': 'connect by a name the certificate holds',
  'client-certificate-required': 'it wants a client certificate (tls.certFile and tls.keyFile)',
  'client-certificate-refused': 'give one signed by a CA the server trusts (its tls-ca-cert-file)',
  'tls-port': 'if it is a TLS port, it wants a rediss:// URL',
  'plain-port': 'if it is a port without TLS, it wants a redis:// URL',
  'not-a-cluster': 'connect without cluster: true',
};

/** Redis could not be reached at start (refused, unknown host, timed out, a password or certificate refused). */
export class RedisConnectError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RedisConnectError';

  constructor(
    /** The URL with its password hidden. */
    readonly url: string,
    /** What went wrong, as the client or the server said it. */
    readonly detail: string,
    /** Why, when it can be told. */
    readonly reason: RedisConnectReason | undefined,
    cause: unknown,
  ) {
    super(`cannot connect to Redis at ${url}: ${detail}${reason === undefined ? '' : `; ${REMEDIES[reason]}`}`, { cause });
  }
}

/** A TLS file given to {@link connectRedis} that cannot be used: missing, unreadable, not PEM, a key not the certificate's. */
export class RedisTlsFileError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RedisTlsFileError';

  constructor(
    /** Which option named the file. */
    readonly option: 'caFile' | 'certFile' | 'keyFile',
    /** The file, as given. */
    readonly path: string,
    /** What is wrong with it: `cannot read it: ENOENT: no such file or directory`, `holds no PEM certificate`. */
    readonly detail: string,
  ) {
    super(`tls.${option} ${path}: ${detail}`);
  }
}

/**
 * The Redis user may not do what the limiter does on its keys: run its scripts (`EVALSHA`, and
 * `EVAL` to load them), or, inside them, `TIME`, `GET`, `SET`, `DEL` on keys matching the pattern.
 */
export class RedisPermissionError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'RedisPermissionError';

  constructor(
    /** The Redis user (`default` when the URL names none). */
    readonly user: string,
    /** What Redis refused, in its words or as the command line refused. */
    readonly detail: string,
    /** The key pattern the user needs, as an ACL writes it: `~news-processor:*`. */
    readonly keyPattern: string,
    /** The commands it needs, as an ACL grants them: `+evalsha +eval +time +get +set +del` (`+@scripting` covers the first two). */
    readonly commands: string,
  ) {
    super(`Redis user "${user}" may not run the limiter: ${detail}; it needs ${keyPattern} ${commands}`);
  }
}

/**
 * Redis answered `MOVED` or `ASK` on a connection not in cluster mode: it is a Redis Cluster node,
 * and the key lives on another. Not a Redis that went away — going on with a local bucket would
 * not share the quota — but a configuration to fix; a `LimiterUnavailableError` (by that name),
 * so that a run that meets it mid-way stops as it does for a lost Redis.
 */
export class RedisRedirectError extends LimiterUnavailableError {}
