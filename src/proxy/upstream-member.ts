import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { CircuitBreaker } from '../breaker/circuit-breaker.ts';
import type { ProviderPrice } from '../gate/provider-options.ts';
import type { ProviderLimits } from '../quota/provider-limits.ts';
import type { ProxyUpstream, UpstreamRequest, UpstreamTarget } from '../vendors/proxy-wire.ts';

/** One provider of the gateway's config as the proxy calls it: its wire, its limits, its breaker, its price. */
export interface UpstreamMember {
  readonly name: string;
  /** The client API it serves (`ProxyClientApi.name`). */
  readonly client: string;
  readonly wire: ProxyUpstream;
  readonly target: UpstreamTarget;
  /** Its quota: in this process, or shared through Redis with the other replicas and runs. */
  readonly limits: ProviderLimits;
  /** @default none (never taken out of the choice) */
  readonly breaker: CircuitBreaker | undefined;
  readonly price: ProviderPrice | undefined;
  /** The output cap when a request names none. */
  readonly maxOutputTokens: number;
  /** Ms an upstream call may take before it is given up. */
  readonly callTimeoutMs: number;
  /** Tokens its vendor adds to every request beyond its text: part of a request's worst case. */
  readonly perRequestTokens: number;
}

/** An upstream's answer as far as its head: the status, the headers, and the body still to read. */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: IncomingMessage;
}

/** Keep-alive connections to the members, made on the first call (importing the module makes nothing). */
let agents: { readonly http: HttpAgent; readonly https: HttpsAgent } | undefined;
const agentsNow = () =>
  (agents ??= {
    http: new HttpAgent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY }),
    https: new HttpsAgent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY }),
  });

/** Where an upstream URL goes, parsed once: a member's URL is the same on every call. */
interface Address {
  readonly secure: boolean;
  readonly hostname: string;
  readonly port: string;
  readonly path: string;
}
const addresses = new Map<string, Address>();

function addressOf(href: string): Address {
  let address = addresses.get(href);
  if (address === undefined) {
    const url = new URL(href);
    const secure = url.protocol === 'https:';
    // A URL's hostname keeps an IPv6 address's brackets; a request's options want it bare.
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    address = { secure, hostname, port: url.port || (secure ? '443' : '80'), path: `${url.pathname}${url.search}` };
    // Members' URLs are few; a wire whose URL varies per call is not kept past a bound.
    if (addresses.size < 1000) addresses.set(href, address);
  }
  return address;
}

/** Sends one request upstream; resolves at the response's head, rejects on a connection that fails or `signal`. */
export function sendUpstream(sent: UpstreamRequest, signal: AbortSignal, timeoutMs: number): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const { secure, hostname, port, path } = addressOf(sent.url);
    const body = Buffer.from(sent.body);
    const req = (secure ? httpsRequest : httpRequest)(
      {
        protocol: secure ? 'https:' : 'http:',
        hostname,
        port,
        path,
        method: 'POST',
        agent: secure ? agentsNow().https : agentsNow().http,
        headers: { ...sent.headers, 'content-length': String(body.length) },
        signal,
        timeout: Number.isFinite(timeoutMs) ? timeoutMs : undefined,
      },
      (res) => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: res }),
    );
    req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * Reads a body whole — at most `maxBytes`, resolving with undefined past them (the rest left
 * unread). By its events: an async iterator costs a promise per chunk.
 */
export function readAll(body: IncomingMessage, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        body.off('data', onData);
        body.pause();
        resolve(undefined);
      } else chunks.push(chunk);
    };
    body.on('data', onData);
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    body.once('error', reject);
    body.once('aborted', () => reject(new Error('the body was cut off')));
  });
}

/** Whether an upstream status is worth another member: its quota (429), or its failure (5xx). */
export const isRetryableStatus = (status: number): boolean => status === 429 || status === 408 || status >= 500;

/** Ms a 429 asks to wait (`retry-after-ms`, `retry-after` in seconds), when it says. */
export function retryAfterMsOf(headers: IncomingMessage['headers']): number | undefined {
  const ms = Number(headers['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = Number(headers['retry-after']);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}
