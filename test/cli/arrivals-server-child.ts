// An LlmServer that answers at once, in a process of its own, noting when each chat request with
// one API key arrives: `node --import tsx arrivals-server-child.ts '<ArrivalsServerSettings>'`,
// forked with IPC. It says { type: 'listening', url } once it listens; on any message it sends
// { type: 'arrivals', arrivalsMs } and closes.
//
// A process of its own, because the test's process is busy (vitest, the commands' pipes) and an
// arrival read there lags whenever its event loop does, bunching calls that came evenly. Each
// arrival is read from Node's `http.server.request.start` diagnostics channel, published as the
// request's head is parsed, in the same turn as the server's quota takes its token: what is noted
// is the instant the server's quota judged.
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import { LlmServer } from '../../src/server/index.ts';

export interface ArrivalsServerSettings {
  /** The server's own quota per API key. */
  readonly rate: number;
  readonly burst: number;
  /** The API key whose arrivals are noted. */
  readonly key: string;
}

const settings = JSON.parse(process.argv[2]!) as ArrivalsServerSettings;
/** This process's `performance.now()` at each arrival, in arrival order. */
const arrivalsMs: number[] = [];
const authorization = `Bearer ${settings.key}`;
subscribe('http.server.request.start', (message) => {
  const { request } = message as { request: IncomingMessage };
  if (request.url === '/v1/chat/completions' && request.headers.authorization === authorization) arrivalsMs.push(performance.now());
});
const server = new LlmServer({ rate: settings.rate, burst: settings.burst, simulation: { minLatencyMs: 0, maxLatencyMs: 0 } });
const url = await server.listen({ port: 0 });
process.send!({ type: 'listening', url });
process.once('message', () => {
  process.send!({ type: 'arrivals', arrivalsMs }, () => {
    void server.close().then(() => process.disconnect());
  });
});
