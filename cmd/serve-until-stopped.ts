import { systemErrorText } from './stdout.ts';
import { quitNow } from './terminal.ts';
import { UsageError } from './usage-error.ts';

/** A server a command runs (`serve`, `proxy`): it listens, counts the requests it is answering, and closes once they are answered. */
export interface CommandServer {
  listen(options: { host: string; port: number }): Promise<string>;
  readonly inFlight: number;
  close(): Promise<void>;
}

/**
 * Runs `server` until SIGINT or SIGTERM: listens — an address that cannot be had is a one-line
 * `UsageError`, once `listenFailed` has had its say (it may throw an error of its own, or let go of
 * what the command opened) — prints `listening on URL` on standard output, then on the first signal
 * stops taking connections and resolves once the requests in flight are answered; a second quits at once.
 */
export async function serveUntilStopped(
  server: CommandServer,
  host: string,
  port: number,
  listenFailed: (error: unknown) => void | Promise<void> = () => {},
): Promise<void> {
  // Listening for signals before the server listens: a stop asked for while it starts is not lost.
  const stop = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  let url: string;
  try {
    url = await server.listen({ host, port });
  } catch (error) {
    await listenFailed(error);
    throw new UsageError(`cannot listen on ${host}:${port}: ${(error as Error).message}`);
  }
  process.stdout.write(`listening on ${url}\n`, (error) => {
    // A script waiting for that line would wait forever: say where the server is on stderr.
    if (error !== null && error !== undefined && (error as NodeJS.ErrnoException).code !== 'EPIPE') {
      process.stderr.write(`warning: standard output: cannot write: ${systemErrorText(error)}; listening on ${url} all the same\n`);
    }
  });
  const signal = await stop;
  process.on('SIGINT', () => quitNow('SIGINT'));
  process.on('SIGTERM', () => quitNow('SIGTERM'));
  process.stderr.write(
    `${signal}: stopping, ${server.inFlight} ${server.inFlight === 1 ? 'request' : 'requests'} in flight (again to quit at once)\n`,
  );
  await server.close();
}
