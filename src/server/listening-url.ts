import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** `http://HOST:PORT` of a listening `server` (an IPv6 host in brackets); undefined while it does not listen. */
export function listeningUrl(server: Server): string | undefined {
  const address = server.address() as AddressInfo | null;
  if (address === null) return undefined;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
