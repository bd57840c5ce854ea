import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitDecision } from '../../limiter/keyed-limiter.ts';
import { brandedGuard } from '../../error-brand.ts';
import type { ChatApi, Failure } from './chat-api.ts';

/** One request on its way through the server. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly api: ChatApi;
  /** The route as metrics label it: a known path (ids as `{id}`), or `unknown`. */
  readonly route: string;
  readonly requestId: string;
  readonly startedMs: number;
  key: string | undefined;
  /** A key the server does not accept: logged by its fingerprint, as the exchange's key is, and given nothing else. */
  refusedKey: string | undefined;
}

/** What a failure's headers describe: the decisions that refused it (else the key's quota as it stands), its wait, whether to close. */
export interface LimitContext {
  readonly requests?: RateLimitDecision | undefined;
  readonly tokens?: RateLimitDecision | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly close?: boolean;
}

/** A request the server answers with a failure, thrown by the step that finds it. */
export class Refusal extends Error {
  override readonly name = 'Refusal';

  constructor(
    readonly failure: Failure,
    readonly limits: LimitContext = {},
  ) {
    super(failure.message);
  }
}

/** Whether `value` is a {@link Refusal}: what a dialect's handler throws, the server answers in the route's words. */
export const isRefusal = brandedGuard(Refusal, 'Refusal');

/** The client went away before the answer: nothing to send, counted as 499. */
export class ClientGone extends Error {
  override readonly name = 'ClientGone';
}
