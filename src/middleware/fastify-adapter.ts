import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Decide, isPromise, type Verdict } from './decide.ts';
import type { LimitedRequest } from './rate-limit-options.ts';

/** Fastify's request as the hook reads it. */
export interface FastifyLikeRequest {
  /** The request's Node message. */
  readonly raw: IncomingMessage;
}

/** Fastify's reply as the hook drives it. */
export interface FastifyLikeReply {
  /** The reply's Node response. */
  readonly raw: ServerResponse;
  /** Sets the status code. */
  code(statusCode: number): unknown;
  /** Sets a response header. */
  header(name: string, value: string): unknown;
  /** Sets the content type. */
  type(contentType: string): unknown;
  /** Sends the reply with this payload. */
  send(payload?: unknown): unknown;
  /** Tells Fastify the handler answers on `raw` itself. */
  hijack(): unknown;
}

/** A Fastify `onRequest` hook: `app.addHook('onRequest', hook)`. */
export type FastifyHook = (request: FastifyLikeRequest, reply: FastifyLikeReply, done: (error?: Error) => void) => void;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * The verdicts carried out through Fastify's reply: through with `done()`, answered with
 * `reply.send`, or handed to `handler` with `request.raw` and `reply.raw`, the reply hijacked (a
 * handler written for node:http writes to the raw response). The callbacks get `request.raw`;
 * the request's limit is set on the Fastify request as well. No closure per request while the
 * verdict is there at once.
 */
export function fastifyAdapter<Req extends IncomingMessage>(
  decide: Decide<Req>,
  handler: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined,
  requestPropertyName: string,
): FastifyHook {
  const respond = (request: FastifyLikeRequest, reply: FastifyLikeReply, done: (error?: Error) => void, verdict: Verdict): void => {
    if (verdict.info !== undefined) (request as unknown as Record<string, unknown>)[requestPropertyName] = verdict.info;
    const { headers } = verdict;
    if (verdict.kind === 'handle') {
      reply.hijack();
      const res = reply.raw;
      for (const name in verdict.headers) res.setHeader(name, verdict.headers[name]!);
      res.statusCode = verdict.statusCode;
      // A 'handle' verdict comes only with a handler.
      handler!(request.raw as Req, res, verdict.limited);
      return;
    }
    if (headers !== undefined) for (const name in headers) reply.header(name, headers[name]!);
    if (verdict.kind === 'pass') {
      done();
    } else {
      reply.code(verdict.statusCode);
      reply.type(verdict.contentType);
      reply.send(verdict.body);
    }
  };

  return (request, reply, done) => {
    let verdict: Verdict | Promise<Verdict>;
    try {
      verdict = decide(request.raw as Req, reply.raw);
    } catch (error) {
      done(asError(error));
      return;
    }
    if (isPromise(verdict))
      verdict.then(
        (value) => respond(request, reply, done, value),
        (error: unknown) => done(asError(error)),
      );
    else respond(request, reply, done, verdict);
  };
}
