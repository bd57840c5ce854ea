import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLimit } from '../../src/index.ts';
import { connectRedis, RedisLimits, RedisConnectError, type RedisConnection, RedisTlsFileError } from '../../src/redis/index.ts';
import { startTlsRedisPair, type TestCertificates, type TestRedis, type TlsRedisPair } from './redis-server.ts';

let pair: TlsRedisPair;
let certificates: TestCertificates;
/** TLS only, any client. */
let tls: TestRedis;
/** TLS only, clients with a certificate signed by the test CA (`tls-auth-clients yes`). */
let mutual: TestRedis;

beforeAll(async () => {
  pair = await startTlsRedisPair();
  ({ certificates, tls, mutual } = pair);
});

afterAll(async () => {
  await pair?.stop();
});

const ONE_CALL = { requests: 1, inputTokens: 0, outputTokens: 0 };

async function keepsAQuota(connection: RedisConnection): Promise<void> {
  try {
    const limits = new RedisLimits({ connection, limits: requestLimit(10, 2), quotaKey: 'tls' });
    await limits.check();
    await limits.acquire(ONE_CALL);
  } finally {
    await connection.close();
  }
}

async function connectError(url: string, options: Parameters<typeof connectRedis>[1]): Promise<RedisConnectError> {
  const error = await connectRedis(url, { timeoutMs: 1000, ...options }).catch((e: unknown) => e);
  expect(error instanceof RedisConnectError, String(error)).toBe(true);
  return error as RedisConnectError;
}

async function fileError(options: NonNullable<Parameters<typeof connectRedis>[1]>['tls']): Promise<RedisTlsFileError> {
  const error = await connectRedis(tls.url, { tls: options }).catch((e: unknown) => e);
  expect(error instanceof RedisTlsFileError, String(error)).toBe(true);
  return error as RedisTlsFileError;
}

describe('connectRedis over TLS', () => {
  it('trusts the CA of tls.caFile, and keeps a quota through it', async () => {
    const connection = await connectRedis(tls.url, { tls: { caFile: certificates.caFile } });
    expect(connection.target.tls).toBe(true);
    expect(connection.target.verifiesServer).toBe(true);
    await keepsAQuota(connection);
  });

  it('says the certificate is not trusted, and what to do, without the CA', async () => {
    const error = await connectError(tls.url, {});
    expect(error.reason).toBe('untrusted-certificate');
    expect(error.message).toBe(
      `cannot connect to Redis at ${tls.url}: self-signed certificate in certificate chain; trust the CA that signed it (tls.caFile)`,
    );
  });

  it('presents the client certificate of tls.certFile and tls.keyFile to a server that checks them', async () => {
    const { caFile, clientCertFile: certFile, clientKeyFile: keyFile } = certificates;
    await keepsAQuota(await connectRedis(mutual.url, { tls: { caFile, certFile, keyFile } }));
  });

  it('says the server wants a client certificate when it drops a client without one, instead of "write ECONNRESET"', async () => {
    const error = await connectError(mutual.url, { tls: { caFile: certificates.caFile } });
    expect(error.reason).toBe('client-certificate-required');
    // TLS 1.3: the server drops the client once the handshake is over on its side (ECONNRESET), or says why first.
    expect(error.message).toMatch(
      /^cannot connect to Redis at \S+: the server closed the connection in the TLS handshake \((write ECONNRESET|read ECONNRESET|write EPIPE|tlsv13 alert certificate required)\); it wants a client certificate \(tls\.certFile and tls\.keyFile\)$/,
    );
  });

  it('says the server refused a client certificate signed by a CA it does not trust', async () => {
    const { caFile, strangerCertFile: certFile, strangerKeyFile: keyFile } = certificates;
    const error = await connectError(mutual.url, { tls: { caFile, certFile, keyFile } });
    expect(error.reason).toBe('client-certificate-refused');
    expect(error.message).toMatch(/; give one signed by a CA the server trusts/);
  });

  it('checks no certificate with rejectUnauthorized=false, in the URL or as an option, and says so in the target', async () => {
    const fromUrl = await connectRedis(`${tls.url}?rejectUnauthorized=false`);
    expect(fromUrl.target.verifiesServer).toBe(false);
    await keepsAQuota(fromUrl);
    const fromOption = await connectRedis(tls.url, { tls: { rejectUnauthorized: false } });
    expect(fromOption.target.verifiesServer).toBe(false);
    await keepsAQuota(fromOption);
  });

  it('says a plain connection to a TLS port wants rediss://', async () => {
    const error = await connectError(`redis://127.0.0.1:${tls.port}`, {});
    expect(error.reason).toBe('tls-port');
  });

  it('builds further TLS clients with the same files from the target', async () => {
    const connection = await connectRedis(mutual.url, {
      tls: { caFile: certificates.caFile, certFile: certificates.clientCertFile, keyFile: certificates.clientKeyFile },
    });
    const client = connection.target.createClient({ maxRetriesPerRequest: null });
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
      await connection.close();
    }
  });
});

describe('connectRedis TLS files', () => {
  it('names a file that cannot be read', async () => {
    const missing = join(certificates.dir, 'missing.pem');
    const error = await fileError({ caFile: missing });
    expect([error.option, error.path, error.message]).toEqual([
      'caFile',
      missing,
      `tls.caFile ${missing}: cannot read it: ENOENT: no such file or directory`,
    ]);
  });

  it('names a file that holds no certificate, or one that does not parse', async () => {
    expect((await fileError({ caFile: certificates.clientKeyFile })).detail).toBe('holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
    const broken = join(certificates.dir, 'broken.crt');
    await writeFile(broken, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    expect((await fileError({ caFile: broken })).detail).toMatch(/^holds a certificate that does not parse \(/);
  });

  it('names a key that is not a key, or not the certificate’s', async () => {
    const { clientCertFile: certFile, strangerKeyFile, caFile } = certificates;
    expect((await fileError({ certFile, keyFile: caFile })).detail).toBe('holds no PEM private key (-----BEGIN PRIVATE KEY-----)');
    const mismatch = await fileError({ certFile, keyFile: strangerKeyFile });
    expect(mismatch.option).toBe('keyFile');
    expect(mismatch.detail).toBe(`is not the private key of the certificate in ${certFile} (key values mismatch)`);
  });

  it('refuses a certificate without its key, and TLS files for a redis:// URL', async () => {
    await expect(connectRedis(tls.url, { tls: { certFile: certificates.clientCertFile } })).rejects.toThrow(
      'Expected tls.certFile and tls.keyFile to be given together (a certificate and its private key)',
    );
    await expect(connectRedis(`redis://127.0.0.1:${tls.port}`, { tls: { caFile: certificates.caFile } })).rejects.toThrow(
      `Expected a URL with tls options to be a rediss:// URL, got "redis://127.0.0.1:${tls.port}"`,
    );
  });
});

describe('connectRedis URLs', () => {
  it.each([
    [
      'an unknown parameter',
      'rediss://127.0.0.1:1?timeout=5',
      `Expected the URL's parameters to be among: rejectUnauthorized, got "timeout=5"`,
    ],
    ['rejectUnauthorized on redis://', 'redis://127.0.0.1:1?rejectUnauthorized=false', 'to be a rediss:// URL (it is a TLS setting)'],
    [
      'rejectUnauthorized not true or false',
      'rediss://127.0.0.1:1?rejectUnauthorized=no',
      'Expected rejectUnauthorized in the URL to be true or false, got "no"',
    ],
    ['a path that is not a database', 'redis://127.0.0.1:1/zero', `Expected the URL's path to be a database number like /0, got "/zero"`],
    ['a fragment', 'redis://127.0.0.1:1#x', 'Expected url to be a redis:// or rediss:// URL'],
    ['a cluster option that is not one', 'redis://127.0.0.1:1', 'Expected cluster to be one of true, false, "auto", got "yes"'],
  ])('refuses %s, naming what it accepts', async (_, url, message) => {
    const options = url.includes('1#') || !message.includes('cluster') ? {} : { cluster: 'yes' as never };
    await expect(connectRedis(url, options)).rejects.toThrow(message);
  });
});
