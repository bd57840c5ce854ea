import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** A `redis-server` of the test's own, on a free loopback port, with nothing persisted. */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** The server process now (a new one after `restart()`). */
  readonly process: ChildProcess;
  /** SIGKILL: gone at once, state lost, as a crash loses it. */
  kill(): Promise<void>;
  /** Starts a new server on the same port (after `kill()`), empty. */
  restart(): Promise<void>;
  /** Stops the server; safe to call twice. */
  stop(): Promise<void>;
}

/** A port no one listens on now: the kernel's pick for port 0, released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * Starts `redis-server` (Debian's, on the PATH) on a free loopback port and resolves once it
 * accepts connections. The port is picked by binding port 0 and releasing it, so another process
 * may take it first: then it tries another.
 */
export async function startRedis(
  options: { readonly args?: (port: number) => readonly string[]; readonly scheme?: 'redis' | 'rediss' } = {},
): Promise<TestRedis> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const args = options.args?.(port) ?? ['--port', String(port)];
    try {
      let child = await launch(port, args);
      const stopProcess = async (signal: NodeJS.Signals) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill(signal);
        await exited;
      };
      return {
        port,
        url: `${options.scheme ?? 'redis'}://127.0.0.1:${port}`,
        get process() {
          return child;
        },
        kill: () => stopProcess('SIGKILL'),
        restart: async () => {
          await stopProcess('SIGKILL');
          child = await launch(port, args);
        },
        stop: () => stopProcess('SIGKILL'),
      };
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

async function launch(port: number, args: readonly string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', [...args, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server on port ${port} exited (${code}): ${output.trim().split('\n').pop()}`)));
  });
  child.removeAllListeners('exit');
  return child;
}

const run = promisify(execFile);

/** A Redis Cluster of the test's own: three masters on free loopback ports, no replicas, every slot assigned. */
export interface TestCluster {
  /** The masters, in the order of their slot ranges (0–5460, 5461–10922, 10923–16383). */
  readonly nodes: readonly TestRedis[];
  /** The first node's URL: what a client is given. */
  readonly url: string;
  /** Stops every node and removes their cluster files; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts three `redis-server --cluster-enabled yes` on free loopback ports and joins them with
 * `redis-cli --cluster create`, resolving once every node says `cluster_state:ok`. A node that is
 * killed is marked failed by the others within the node timeout (1 s).
 */
export async function startRedisCluster(): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'np-cluster-'));
  const nodes: TestRedis[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      nodes.push(
        await startRedis({
          args: (port) => [
            '--port',
            String(port),
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            '1000',
          ],
        }),
      );
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-yes'], { timeout: 20_000 });
    const endMs = performance.now() + 20_000;
    for (const node of nodes) {
      for (;;) {
        const { stdout } = await run('redis-cli', ['-p', String(node.port), 'cluster', 'info']);
        if (/cluster_state:ok/.test(stdout)) break;
        if (performance.now() > endMs) throw new Error(`the cluster did not come up: node ${node.port} says ${stdout.split('\n')[0]}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // Every node must also know where every slot is, or a client may be sent the wrong way.
    return { nodes, url: nodes[0]!.url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Certificates made with `openssl` for a TLS test: a CA, a server certificate for 127.0.0.1 and localhost, client ones. */
export interface TestCertificates {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  /** Signed by the CA: what a server with `tls-auth-clients yes` accepts. */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** Self-signed: what such a server refuses. */
  readonly strangerCertFile: string;
  readonly strangerKeyFile: string;
  remove(): Promise<void>;
}

/** Makes a self-signed CA and certificates signed by it with `openssl` (2048-bit RSA, valid a day). */
export async function makeCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'np-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (args: readonly string[]) => run('openssl', args, { cwd: dir, timeout: 20_000 });
  const key = ['-newkey', 'rsa:2048', '-nodes'];
  await openssl(['req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=news-processor test CA']);
  await writeFile(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const name of ['server', 'client']) {
    await openssl(['req', ...key, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
    const extensions = name === 'server' ? ['-extfile', 'server.ext'] : [];
    await openssl([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '1',
      ...extensions,
    ]);
  }
  await openssl(['req', '-x509', ...key, '-keyout', 'stranger.key', '-out', 'stranger.crt', '-days', '1', '-subj', '/CN=stranger']);
  return {
    dir,
    caFile: file('ca.crt'),
    serverCertFile: file('server.crt'),
    serverKeyFile: file('server.key'),
    clientCertFile: file('client.crt'),
    clientKeyFile: file('client.key'),
    strangerCertFile: file('stranger.crt'),
    strangerKeyFile: file('stranger.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A `redis-server` that speaks TLS only, on a free loopback port, with `certificates`; checking client certificates or not. */
export function startTlsRedis(certificates: TestCertificates, options: { readonly authClients: boolean }): Promise<TestRedis> {
  return startRedis({
    scheme: 'rediss',
    args: (port) => [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      certificates.serverCertFile,
      '--tls-key-file',
      certificates.serverKeyFile,
      '--tls-ca-cert-file',
      certificates.caFile,
      '--tls-auth-clients',
      options.authClients ? 'yes' : 'no',
    ],
  });
}

/** Certificates of a test CA and the two TLS servers the tests use, stopped together. */
export interface TlsRedisPair {
  readonly certificates: TestCertificates;
  /** TLS only, any client. */
  readonly tls: TestRedis;
  /** TLS only, clients with a certificate signed by the test CA (`tls-auth-clients yes`). */
  readonly mutual: TestRedis;
  stop(): Promise<void>;
}

/** Makes a CA and starts a TLS server that takes any client and one that wants a client certificate. */
export async function startTlsRedisPair(): Promise<TlsRedisPair> {
  const certificates = await makeCertificates();
  const [tls, mutual] = await Promise.all([
    startTlsRedis(certificates, { authClients: false }),
    startTlsRedis(certificates, { authClients: true }),
  ]);
  return {
    certificates,
    tls,
    mutual,
    stop: async () => {
      await Promise.all([tls.stop(), mutual.stop()]);
      await certificates.remove();
    },
  };
}
