import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Decide, isPromise, type Verdict } from './decide.ts';
import type { LimitedRequest } from './rate-limit-options.ts';

/** A Connect/Express middleware, which a plain `node:http` handler calls as `limit(req, res, () => handler(req, res))`. */
export type NodeMiddleware<Req extends IncomingMessage> = (req: Req, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * The verdicts carried out on a `node:http` response: through with `next()`, answered on `res`,
 * or handed to `handler`; a callback's error goes to `next(error)`. No closure per request while
 * the verdict is there at once: one only when it comes later.
 */
export function nodeAdapter<Req extends IncomingMessage>(
  decide: Decide<Req>,
  handler: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined,
): NodeMiddleware<Req> {
  const respond = (req: Req, res: ServerResponse, next: (error?: unknown) => void, verdict: Verdict): void => {
    const { headers } = verdict;
    if (headers !== undefined) for (const name in headers) res.setHeader(name, headers[name]!);
    if (verdict.kind === 'pass') {
      next();
    } else if (verdict.kind === 'answer') {
      res.statusCode = verdict.statusCode;
      res.setHeader('Content-Type', verdict.contentType);
      res.end(verdict.body);
    } else {
      res.statusCode = verdict.statusCode;
      // A 'handle' verdict comes only with a handler.
      handler!(req, res, verdict.limited);
    }
  };

  return (req, res, next) => {
    let verdict: Verdict | Promise<Verdict>;
    try {
      verdict = decide(req, res);
    } catch (error) {
      next(error);
      return;
    }
    if (isPromise(verdict)) verdict.then((value) => respond(req, res, next, value), next);
    else respond(req, res, next, verdict);
  };
}
