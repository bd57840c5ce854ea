import { LimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { type RedisConnectReason, RedisRedirectError } from './redis-errors.ts';
import type { RedisTarget } from './redis-target.ts';

/** An error's message; OpenSSL's (`808C…:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:…`) as its words alone. */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return /:SSL routines:[^:]*:([^:]+):/.exec(message)?.[1] ?? message;
}

/** Why a connection failed, told from the error when it can be: what the remedy is. */
export function connectReason(error: unknown, silent: boolean, target: RedisTarget): RedisConnectReason | undefined {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  const message = describeError(error);
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

/** What a failed call on `keys` tells its caller: a `LimiterUnavailableError` naming the URL. */
export function callFailure(error: unknown, keys: readonly string[], target: RedisTarget): LimiterUnavailableError {
  if (error instanceof LimiterUnavailableError) return error;
  const message = describeError(error);
  // A cluster client follows redirects itself; a plain one is talking to a cluster node.
  const redirect = /^(MOVED|ASK) (\d+) (\S+)/.exec(message);
  if (redirect !== null && !target.cluster) {
    return new RedisRedirectError(
      `Redis at ${target.url} is a Redis Cluster node, and ${keys[0]} (slot ${redirect[2]}) is served by ${redirect[3]} (${redirect[1]}): connect in cluster mode`,
      { cause: error },
    );
  }
  // Said by the client, not by Redis: the connection (on a cluster, to the node of the keys' slot) went down under the call.
  if (message === 'Connection is closed.') {
    const node = target.cluster ? ` to the node that serves ${keys[0]}` : '';
    return new LimiterUnavailableError(`the connection to Redis at ${target.url}${node} closed`, { cause: error });
  }
  return new LimiterUnavailableError(`Redis at ${target.url} answered with an error: ${message}`, { cause: error });
}
