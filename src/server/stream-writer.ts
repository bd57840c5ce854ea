import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { sleep, type Clock } from '../clock.ts';
import { formatEvent, type StreamEvent } from '../vendors/serve/chat-api.ts';

/** How a stream ended: every event sent; the client went away; the connection dropped (the fault); the provider went down midway. */
export type StreamOutcome = 'completed' | 'client-closed' | 'dropped' | 'failed';

export const STREAM_OUTCOMES: readonly StreamOutcome[] = ['completed', 'client-closed', 'dropped', 'failed'];

export interface StreamPacing {
  readonly clock: Clock;
  /** Output tokens sent per second after the first, which goes at once. `Infinity`: all at once. */
  readonly tokensPerSecond: number;
  /** The event after which the connection drops; undefined for none. */
  readonly dropAfter: number | undefined;
  /** The event that ends the stream when the provider is down now; undefined while it is up. */
  failure(): StreamEvent | undefined;
}

/**
 * Writes `events` as server-sent events, paced as a model writes: the first token at once (its
 * latency was spent before the stream began), each next one `1 / tokensPerSecond` later, due times
 * counted from the start so that late timers do not slow the stream down; whatever is due goes in
 * one write. Waits for the socket to drain when it is full. Ends the response, or destroys it to
 * drop the connection; a client that goes away ends the generation at once.
 */
export async function writeStream(res: ServerResponse, events: readonly StreamEvent[], pacing: StreamPacing): Promise<StreamOutcome> {
  const { clock, tokensPerSecond, dropAfter } = pacing;
  const gone = new AbortController();
  const onClose = () => gone.abort(new Error('the client closed the connection'));
  res.once('close', onClose);
  const startMs = clock.now();
  let tokensSent = 0;
  let batch = '';
  const flush = async (): Promise<boolean> => {
    if (batch === '') return !gone.signal.aborted;
    const text = batch;
    batch = '';
    if (gone.signal.aborted) return false;
    if (!res.write(text)) {
      try {
        await once(res, 'drain', { signal: gone.signal });
      } catch {
        return false;
      }
    }
    return !gone.signal.aborted;
  };
  try {
    for (const [index, event] of events.entries()) {
      if (event.tokens > 0) {
        const dueMs = startMs + (tokensSent * 1000) / tokensPerSecond;
        tokensSent += event.tokens;
        if (dueMs > clock.now()) {
          if (!(await flush())) return 'client-closed';
          try {
            await sleep(clock, dueMs - clock.now(), gone.signal);
          } catch {
            return 'client-closed';
          }
        }
        const failure = pacing.failure();
        if (failure !== undefined) {
          batch += formatEvent(failure);
          if (!(await flush())) return 'client-closed';
          res.end();
          return 'failed';
        }
      }
      batch += formatEvent(event);
      if (index === dropAfter) {
        // Destroyed once what went before is on the wire: the client sees the tokens, then the cut.
        await new Promise<void>((resolve) => res.write(batch, () => resolve()));
        res.destroy();
        return 'dropped';
      }
    }
    if (!(await flush())) return 'client-closed';
    res.end();
    return 'completed';
  } finally {
    res.off('close', onClose);
  }
}
