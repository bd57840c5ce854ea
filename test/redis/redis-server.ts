import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

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
export async function startRedis(): Promise<TestRedis> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      let child = await launch(port);
      const stopProcess = async (signal: NodeJS.Signals) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill(signal);
        await exited;
      };
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        get process() {
          return child;
        },
        kill: () => stopProcess('SIGKILL'),
        restart: async () => {
          await stopProcess('SIGKILL');
          child = await launch(port);
        },
        stop: () => stopProcess('SIGKILL'),
      };
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
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
