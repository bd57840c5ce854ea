import type { Clock } from '../clock.ts';
import { isTimeoutError, TimeoutError, type LlmRequest, type LlmResponse, type Provider } from '../provider/provider.ts';
import { formatDuration } from '../validation/duration.ts';

/**
 * Calls the provider with `timeoutMs` as its timeout, and enforces it too: a provider need not
 * (the simulated one's hangs last until the signal aborts). Running out of it rejects with a
 * retryable `TimeoutError`: the deadline is still ahead, so another attempt may be made.
 */
export async function callWithin(
  provider: Provider,
  clock: Clock,
  request: LlmRequest,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  maxOutputTokens: number,
): Promise<LlmResponse> {
  const timer = new AbortController();
  let timedOut!: (error: TimeoutError) => void;
  // A provider that does not heed its signal is left behind: the attempt ends on time regardless.
  const late = new Promise<never>((_, reject) => (timedOut = reject));
  const cancelTimer = clock.setTimer(timeoutMs, () => {
    const error = new TimeoutError(`no answer within ${formatDuration(timeoutMs)} (the call timeout)`, { timeoutMs, retryable: true });
    timer.abort(error);
    timedOut(error);
  });
  try {
    const callSignal = signal === undefined ? timer.signal : AbortSignal.any([signal, timer.signal]);
    const call = provider.call(request, { signal: callSignal, timeoutMs, maxOutputTokens });
    // Its outcome after the timeout is nobody's: it must not surface as an unhandled rejection.
    call.catch(() => {});
    return await Promise.race([call, late]);
  } catch (error) {
    // A provider's own timeout (an SDK's, set from timeoutMs, may fire before the timer) ended
    // the attempt, not the call: the deadline has not passed.
    if (isTimeoutError(error) && !error.retryable && signal?.aborted !== true) {
      throw new TimeoutError(error.message, { timeoutMs: error.timeoutMs, retryable: true, cause: error });
    }
    throw error;
  } finally {
    cancelTimer();
  }
}
