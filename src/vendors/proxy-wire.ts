/**
 * What `news-processor proxy` needs of a vendor, in the vendor's own words: the client side — the
 * chat route a client of the vendor's API calls, the few request fields the proxy acts on, its
 * errors — and the upstream side — a client's request sent on to a member of the vendor with the
 * member's model and key, and the usage read back from its answer or its stream. The proxy
 * (`src/proxy/`) names no vendor: it forwards bodies through these.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { TokenUsage } from '../provider/provider.ts';
import type { Failure } from './serve/chat-api.ts';

/** The fields of a client's request the proxy acts on. */
export interface ProxyRequestFacts {
  /** The model the client asks for: what the gateway's `models` map routes. */
  readonly model: string;
  /** Whether the answer is streamed. */
  readonly stream: boolean;
  /** The most output tokens the request allows, when it names them. */
  readonly maxOutputTokens: number | undefined;
}

/** A client API the proxy serves: its chat route, keys, request fields and errors. */
export interface ProxyClientApi {
  /** Its name: what a member's vendor must speak (`VendorProxy.client`). */
  readonly name: string;
  /** The chat route's path (`POST`). */
  readonly path: string;
  /** The key a request carries: `Authorization: Bearer` or `x-api-key`, whichever the client sent. */
  keyOf(headers: IncomingHttpHeaders): string | undefined;
  /** The fields the proxy acts on, or an `InvalidRequestError` naming the one at fault. The rest is the upstream's to judge. */
  read(body: unknown): ProxyRequestFacts;
  /** The status and body of a failure in the API's words (403, 402/429 for money included). */
  fail(failure: Failure, requestId: string): { status: number; body: unknown };
  /** The response header that carries the request's id. */
  readonly requestIdHeader: string;
}

/** A member as the upstream request is made for it. */
export interface UpstreamTarget {
  readonly baseUrl: string;
  /** The model (a deployment, for an API that names it so) the member asks for. */
  readonly model: string;
  readonly apiKey: string;
  readonly apiVersion?: string | undefined;
}

/** One request to a member: where, with which headers, and the body. */
export interface UpstreamRequest {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** What a stream's events say as they pass: which to forward, and the usage at the end. */
export interface StreamWatch {
  /** Whether to forward the event whose `data:` is `data` (false: the usage chunk the proxy asked for and the client did not). */
  pass(data: string): boolean;
  /** The usage the stream reported, once it has. */
  usage(): TokenUsage | undefined;
}

/** The upstream side: a client's body sent to one member, and its usage read back. */
export interface ProxyUpstream {
  /**
   * The request for `body` at `target`: the member's model, `maxOutputTokens` when the client named
   * none (so the answer cannot pass what was held for it), and, streaming, the final usage asked for.
   */
  request(
    body: Record<string, unknown>,
    target: UpstreamTarget,
    facts: ProxyRequestFacts,
    maxOutputTokens: number,
    /** The client's request headers: those of the API's own that shape the answer (a version, a beta) go on. */
    clientHeaders: IncomingHttpHeaders,
  ): UpstreamRequest;
  /** The usage of a whole answer's body. */
  usageOf(body: unknown): TokenUsage | undefined;
  /** Watches one stream of the client's request `body`. */
  watchStream(body: Record<string, unknown>): StreamWatch;
}

/** A vendor's proxy side, loaded when `proxy` starts. */
export interface ProxyWire {
  readonly client: ProxyClientApi;
  readonly upstream: ProxyUpstream;
}

/** How the proxy speaks a vendor: the client API its members serve, and the wire, loaded on use. */
export interface VendorProxy {
  /** The client API a member of this vendor serves (`ProxyClientApi.name`). */
  readonly client: string;
  load(): Promise<ProxyWire>;
}

/** `Authorization: Bearer KEY` or `x-api-key: KEY`: a proxy's clients send either. */
export function proxyKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const bearer = /^Bearer\s+(\S.*)$/i.exec(headers.authorization ?? '')?.[1]?.trim();
  if (bearer !== undefined && bearer !== '') return bearer;
  const key = headers['x-api-key'];
  return typeof key === 'string' && key.trim() !== '' ? key.trim() : undefined;
}

/** Parses one stream event's JSON data, or undefined. */
export function eventJson(data: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** A usage from counts an answer reports, when both are whole counts. */
export function proxyUsage(inputTokens: unknown, outputTokens: unknown, read: unknown = 0, write: unknown = 0): TokenUsage | undefined {
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined;
  return {
    inputTokens,
    outputTokens,
    ...(isCount(read) && read > 0 && { cacheReadTokens: read }),
    ...(isCount(write) && write > 0 && { cacheWriteTokens: write }),
  };
}
