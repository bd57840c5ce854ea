import { readFile } from 'node:fs/promises';
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { checkBoolean, checkObject, checkString, expected } from '../validation/checks.ts';
import { fileErrorDetail } from '../validation/file-error.ts';
import { RedisTlsFileError } from './redis-errors.ts';

/** TLS settings beyond what a `rediss://` URL says. Files are read once, at connect, and kept. */
export interface RedisTlsOptions {
  /**
   * PEM file of the CA certificate(s) that signed the server's: trusted instead of Node's bundled
   * CAs (and `NODE_EXTRA_CA_CERTS`).
   * @default none (Node's CAs)
   */
  readonly caFile?: string | undefined;
  /**
   * PEM file of this client's certificate, for a server that checks them (`tls-auth-clients yes`). Needs `keyFile`.
   * @default none (no client certificate)
   */
  readonly certFile?: string | undefined;
  /** PEM file of the private key of `certFile`, unencrypted. Needs `certFile`. @default none */
  readonly keyFile?: string | undefined;
  /**
   * `false`: accept any certificate from the server, without checking who signed it or for which
   * host — anyone on the path can then pose as the server. The URL may say
   * `?rejectUnauthorized=false` instead.
   * @default true, unless the URL says `?rejectUnauthorized=false`
   */
  readonly rejectUnauthorized?: boolean | undefined;
}

/** The only URL parameters a Redis URL may carry: anything else would be ignored, so it is refused. */
export const REDIS_URL_PARAMETERS: readonly string[] = Object.freeze(['rejectUnauthorized']);

/**
 * Where the Redis is and how to reach it — host, credentials, database, TLS material, cluster or
 * not, connect timeout — resolved once, by `connectRedis`, into one value that builds any number of
 * ioredis clients with the same settings: for the limiter's own connection, and for any other
 * component that needs its own clients on the same Redis (a BullMQ queue wants connections of its
 * own with `maxRetriesPerRequest: null`, and, on a cluster, a `{hash-tagged}` prefix).
 */
export class RedisTarget {
  /** The URL with its password hidden: for messages and logs. */
  readonly url: string;
  /** The host clients connect to (a seed node in a cluster). */
  readonly host: string;
  /** The port clients connect to. */
  readonly port: number;
  /** The database of the URL's path; always 0 on a cluster. */
  readonly db: number;
  /** The ACL user, when the URL names one. */
  readonly username: string | undefined;
  /** Whether connections use TLS (`rediss://`). */
  readonly tls: boolean;
  /** False when the server's certificate is not checked (`rejectUnauthorized=false`). */
  readonly verifiesServer: boolean;
  /** Whether connections present a client certificate. */
  readonly clientCertificate: boolean;
  /** Whether this is a Redis Cluster (told by the server at connect, unless forced). */
  readonly cluster: boolean;
  /** Connect timeout of every client made, in ms. */
  readonly timeoutMs: number;
  readonly #settings: RedisTargetSettings;

  /** Made by `connectRedis`: use `connection.target`. */
  constructor(settings: RedisTargetSettings) {
    const { url } = settings;
    this.url = url.shown;
    this.host = url.host;
    this.port = url.port;
    this.db = url.db;
    this.username = url.username;
    this.tls = url.tls;
    this.verifiesServer = settings.tls?.rejectUnauthorized ?? true;
    this.clientCertificate = settings.tls?.cert !== undefined;
    this.cluster = settings.cluster;
    this.timeoutMs = settings.timeoutMs;
    this.#settings = settings;
  }

  /** The same target, in cluster mode or not. */
  withCluster(cluster: boolean): RedisTarget {
    return new RedisTarget({ ...this.#settings, cluster });
  }

  /**
   * A new ioredis client for this Redis — a `Cluster` on a cluster, a `Redis` otherwise — with the
   * target's host, credentials, database, TLS and connect timeout, then `options` on top (ioredis's
   * own defaults for the rest). On a cluster, `options` apply to every node's connection, except
   * those ioredis takes at the cluster's level: `enableOfflineQueue`, `enableReadyCheck`,
   * `lazyConnect`, and `retryStrategy` (as `clusterRetryStrategy`); `clusterOptions` adds others
   * (`natMap`, `scaleReads`, ...).
   *
   * @example A BullMQ worker's connection: `target.createClient({ maxRetriesPerRequest: null })`,
   *   with `prefix: target.cluster ? '{jobs}' : 'jobs'` so that a queue's keys share one slot.
   */
  createClient(options: RedisOptions = {}, clusterOptions: ClusterOptions = {}): Redis | Cluster {
    const { url, tls, ioredis } = this.#settings;
    const node: RedisOptions = {
      username: url.username,
      password: url.password,
      connectTimeout: this.timeoutMs,
      ...(tls === undefined ? {} : { tls: { ...tls } }),
    };
    if (!this.cluster) return new ioredis.Redis({ host: this.host, port: this.port, db: this.db, ...node, ...options });
    const { enableOfflineQueue, enableReadyCheck, lazyConnect, retryStrategy, ...rest } = options;
    const cluster: ClusterOptions = { slotsRefreshTimeout: this.timeoutMs, ...clusterOptions };
    if (enableOfflineQueue !== undefined) cluster.enableOfflineQueue = enableOfflineQueue;
    if (enableReadyCheck !== undefined) cluster.enableReadyCheck = enableReadyCheck;
    if (lazyConnect !== undefined) cluster.lazyConnect = lazyConnect;
    if (retryStrategy !== undefined) cluster.clusterRetryStrategy = retryStrategy;
    return new ioredis.Cluster([{ host: this.host, port: this.port }], {
      ...cluster,
      redisOptions: { ...node, ...rest, ...clusterOptions.redisOptions },
    });
  }
}

/** What a {@link RedisTarget} is made of (internal: `connectRedis` makes them). */
export interface RedisTargetSettings {
  /** The URL, read into its parts. */
  readonly url: ParsedRedisUrl;
  /** The TLS files' contents, when the connection uses TLS. */
  readonly tls: TlsMaterial | undefined;
  /** Whether Redis is a Redis Cluster. */
  readonly cluster: boolean;
  /** How long a connection may take, in ms. */
  readonly timeoutMs: number;
  /** The ioredis classes, loaded by `connectRedis` (so that importing the library costs nothing to those who never share a quota). */
  readonly ioredis: { readonly Redis: typeof Redis; readonly Cluster: typeof Cluster };
}

/** TLS files as read, and whether the server's certificate is checked: what `tls.connect` takes. */
export type TlsMaterial = Readonly<{ ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean }>;

/** A Redis URL taken apart: what ioredis would read from it, and nothing it would ignore. */
export interface ParsedRedisUrl {
  /** The URL with its password hidden. */
  readonly shown: string;
  /** The host name or address. */
  readonly host: string;
  /** The port, 6379 when the URL names none. */
  readonly port: number;
  /** The database number (`/2`), 0 when the URL names none. */
  readonly db: number;
  /** The ACL user name, when the URL has one. */
  readonly username: string | undefined;
  /** The password, when the URL has one. */
  readonly password: string | undefined;
  /** Whether the URL asks for TLS (`rediss://`). */
  readonly tls: boolean;
  /** From `?rejectUnauthorized=`; true unless it says false. */
  readonly rejectUnauthorized: boolean;
}

/**
 * `redis://[user:password@]host[:port][/db][?rejectUnauthorized=false]`, `rediss://` for TLS. The
 * user and password are URL-decoded. Refuses anything ioredis would read otherwise or ignore: a
 * scheme other than these two, a path that is not a database number, a parameter other than
 * {@link REDIS_URL_PARAMETERS}, a fragment.
 */
export function parseRedisUrl(url: string): ParsedRedisUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL, so no telling where a password would be: anything between a colon and an @ goes.
    throw expected('url', 'a redis:// or rediss:// URL', url.replace(/:[^:@/]*@/, ':***@'));
  }
  let shown = url;
  if (parsed.password !== '') {
    const copy = new URL(url);
    copy.password = '***';
    shown = copy.toString();
  }
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '' || parsed.hash !== '') {
    throw expected('url', 'a redis:// or rediss:// URL', shown);
  }
  const tls = parsed.protocol === 'rediss:';
  const path = parsed.pathname;
  if (path !== '' && path !== '/' && !/^\/\d{1,5}$/.test(path)) {
    throw expected("the URL's path", 'a database number like /0', path);
  }
  let rejectUnauthorized = true;
  for (const [name, value] of parsed.searchParams) {
    if (!REDIS_URL_PARAMETERS.includes(name)) {
      throw expected("the URL's parameters", `among: ${REDIS_URL_PARAMETERS.join(', ')}`, `${name}=${value}`);
    }
    if (value !== 'true' && value !== 'false') throw expected('rejectUnauthorized in the URL', 'true or false', value);
    if (!tls) throw expected('a URL with rejectUnauthorized', 'a rediss:// URL (it is a TLS setting)', shown);
    rejectUnauthorized = value === 'true';
  }
  return {
    shown,
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db: path.length > 1 ? Number(path.slice(1)) : 0,
    username: parsed.username === '' ? undefined : decodeURIComponent(parsed.username),
    password: parsed.password === '' ? undefined : decodeURIComponent(parsed.password),
    tls,
    rejectUnauthorized,
  };
}

/** Checks the TLS options against the URL and reads their files: one clear error for each file that cannot serve. */
export async function readTlsSettings(url: ParsedRedisUrl, options: RedisTlsOptions | undefined): Promise<TlsMaterial | undefined> {
  if (options !== undefined) {
    checkObject('tls', options);
    for (const name of ['caFile', 'certFile', 'keyFile'] as const) {
      if (options[name] !== undefined) checkString(`tls.${name}`, options[name]);
    }
    if (options.rejectUnauthorized !== undefined) checkBoolean('tls.rejectUnauthorized', options.rejectUnauthorized);
    const given = Object.entries(options).some(([, value]) => value !== undefined);
    if (given && !url.tls) throw expected('a URL with tls options', 'a rediss:// URL', url.shown);
    if ((options.certFile === undefined) !== (options.keyFile === undefined)) {
      throw expected(
        'tls.certFile and tls.keyFile',
        'given together (a certificate and its private key)',
        options.certFile ?? options.keyFile,
      );
    }
  }
  if (!url.tls) return undefined;
  const ca = options?.caFile === undefined ? undefined : await readCertificates('caFile', options.caFile);
  const cert = options?.certFile === undefined ? undefined : await readCertificates('certFile', options.certFile);
  const key = options?.keyFile === undefined ? undefined : await readPrivateKey(options.keyFile);
  if (cert !== undefined && key !== undefined) {
    // node:tls (and node:crypto below) loaded only here: a run without TLS to Redis never needs them.
    const { createSecureContext } = await import('node:tls');
    try {
      createSecureContext({ cert, key });
    } catch (error) {
      throw new RedisTlsFileError(
        'keyFile',
        options!.keyFile!,
        `is not the private key of the certificate in ${options!.certFile} (${describe(error)})`,
      );
    }
  }
  const rejectUnauthorized = options?.rejectUnauthorized ?? url.rejectUnauthorized;
  return Object.freeze({ ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }), rejectUnauthorized });
}

async function readPem(option: RedisTlsFileError['option'], path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new RedisTlsFileError(option, path, `cannot read it: ${fileErrorDetail(error)}`);
  }
}

/** A PEM file of one or more certificates, each of which must parse. */
async function readCertificates(option: 'caFile' | 'certFile', path: string): Promise<Buffer> {
  const pem = await readPem(option, path);
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (blocks === null) throw new RedisTlsFileError(option, path, 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  const { X509Certificate } = await import('node:crypto');
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new RedisTlsFileError(option, path, `holds a certificate that does not parse (${describe(error)})`);
    }
  }
  return pem;
}

async function readPrivateKey(path: string): Promise<Buffer> {
  const pem = await readPem('keyFile', path);
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem.toString('latin1'))) {
    throw new RedisTlsFileError('keyFile', path, 'holds no PEM private key (-----BEGIN PRIVATE KEY-----)');
  }
  const { createPrivateKey } = await import('node:crypto');
  try {
    createPrivateKey(pem);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const detail = code === 'ERR_MISSING_PASSPHRASE' ? 'is encrypted: give it without a passphrase' : `does not parse (${describe(error)})`;
    throw new RedisTlsFileError('keyFile', path, detail);
  }
  return pem;
}

/** An error's message, without OpenSSL's `error:05800074:x509 certificate routines::` before its words. */
function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^error:[0-9A-F]+:[^:]*::?/, '');
}
