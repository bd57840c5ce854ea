import type { CallGate } from '../gate/call-gate.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import { isBudgetExhaustedError } from '../quota/budget.ts';
import { isLimiterUnavailableError } from '../limiter/limiter-unavailable-error.ts';
import { isBadRequestError, isNotAnApiError, stopsRun } from '../provider/provider.ts';
import { formatDuration } from '../validation/duration.ts';
import type { RunStop } from './metrics.ts';
import { isMissingPackageError } from '../optional-package.ts';

/** What a rule found: the provider concerned (when one is), and the failure, as `stoppedBy` shows it. */
export interface StopFinding {
  readonly provider?: string | undefined;
  /** The failure's class name: `AuthenticationError`, `LimiterUnavailableError`, … */
  readonly type: string;
  readonly message: string;
  /** The failure itself, for the logs and the error the run is stopped with. */
  readonly cause: Error;
}

/** The run as a stop rule watches it: every attempt, and each provider's gate. */
export interface WatchedRun {
  /** Calls `listener` after every attempt of the run; returns a function that stops it. */
  onAttempt(listener: (event: AttemptEvent) => void): () => void;
  /** Each provider's gate, and how long it may stay down before the run gives up on it (ms). */
  readonly gates: readonly { readonly gate: CallGate; readonly giveUpAfterMs: number }[];
}

/**
 * One reason to stop a whole run before its source is done: a provider no call can get through
 * to, limits that cannot be reached. Each rule watches the run and reports what it found; the run
 * stops as the rule says, and `stoppedBy.by` names the rule — which is what a caller maps to its
 * own response (the command line: an exit code and one line).
 */
export interface StopRule {
  /** The name the stop goes by in the summary's `stoppedBy`. */
  readonly by: RunStop['by'];
  /**
   * `run`: everything stops as on Ctrl-C — the articles in flight end `cancelled`, the rest are
   * not started. `intake`: no new article starts; those under way keep what they were granted.
   */
  readonly halts: 'run' | 'intake';
  /** Starts watching one run, calling `stop` when the rule is met. Returns a function that stops watching. */
  watch(run: WatchedRun, stop: (finding: StopFinding) => void): () => void;
}

const finding = (provider: string | undefined, error: Error): StopFinding => ({
  provider,
  type: error.name,
  message: error.message,
  cause: error,
});

/**
 * A provider refused what no retry can mend (the key, an empty account), or cannot be called at all
 * (its SDK is not installed): every further call would fail the same way.
 */
export const refusedEveryCall: StopRule = {
  by: 'provider',
  halts: 'run',
  watch: (run, stop) =>
    run.onAttempt((event) => {
      // A pool member dropped for it: the pool has other members or fallbacks to go on with.
      if (event.dropped === true) return;
      if (stopsRun(event.error) || isMissingPackageError(event.error)) stop(finding(event.provider, event.error));
    }),
};

/** Outcomes that prove a provider's address and model right: it answered the request itself. */
const ANSWERED: ReadonlySet<AttemptEvent['outcome']> = new Set(['ok', 'rate-limited', 'truncated', 'refused', 'malformed']);

/**
 * A 404, or a page that is not the API's (`NotAnApiError`), before the provider has answered
 * anything: the base URL or the model is wrong, and every call would meet it. After an answer,
 * either is that one request's.
 */
export const wrongAddress: StopRule = {
  by: 'provider',
  halts: 'run',
  watch(run, stop) {
    const answered = new Set<string>();
    return run.onAttempt((event) => {
      if (ANSWERED.has(event.outcome)) answered.add(event.provider);
      const { error } = event;
      const wrong = (isBadRequestError(error) && error.status === 404) || isNotAnApiError(error);
      if (wrong && !answered.has(event.provider)) stop(finding(event.provider, error!));
    });
  },
};

/**
 * Limits that cannot be reached (a shared quota whose Redis is gone) stop intake only: the articles
 * in flight keep what they were granted and fail at their next limiter call.
 */
export const limitsUnreachable: StopRule = {
  by: 'limits',
  halts: 'intake',
  watch: (run, stop) =>
    run.onAttempt((event) => {
      if (isLimiterUnavailableError(event.error)) stop(finding(event.provider, event.error));
    }),
};

/**
 * A provider that stays down — its circuit open, every probe failing since it opened from closed —
 * for its `giveUpAfterMs`: said with what it last failed with.
 */
export const providerDown: StopRule = {
  by: 'provider-down',
  halts: 'run',
  watch(run, stop) {
    const lastFailure = new Map<string, Error>();
    const stopWatching = [
      run.onAttempt((event) => {
        if (event.called && event.outcome !== 'ok' && event.error instanceof Error) lastFailure.set(event.provider, event.error);
      }),
    ];
    for (const { gate, giveUpAfterMs } of run.gates) {
      const { breaker } = gate;
      if (breaker === undefined) continue;
      const name = gate.provider.name;
      let downSinceMs: number | undefined;
      const stopListening = breaker.onStateChange(({ from, to, atMs }) => {
        if (to === 'closed') downSinceMs = undefined;
        else if (to === 'open' && from === 'closed') downSinceMs = atMs;
        else if (to === 'open' && downSinceMs !== undefined && atMs - downSinceMs >= giveUpAfterMs) {
          const last = lastFailure.get(name);
          const message = `down for ${formatDuration(atMs - downSinceMs)}, its circuit open and every probe failing${last === undefined ? '' : ` (the last: ${last.name}: ${last.message})`}`;
          const error = new Error(message);
          stop({ provider: name, type: last?.name ?? 'BrokenCircuitError', message, cause: error });
        }
      });
      stopWatching.push(stopListening);
    }
    return () => {
      for (const dispose of stopWatching) dispose();
    };
  },
};

/**
 * The budget cannot cover the next call's worst case: intake stops, the way it does when a provider
 * stays down, and the articles under way finish if their reservations fit.
 */
export const budgetSpent: StopRule = {
  by: 'budget',
  halts: 'intake',
  watch: (run, stop) =>
    run.onAttempt((event) => {
      if (isBudgetExhaustedError(event.error)) stop(finding(undefined, event.error));
    }),
};

/** The rules every run watches, in the order they are told of an attempt. */
export const STOP_RULES: readonly StopRule[] = Object.freeze([
  refusedEveryCall,
  wrongAddress,
  limitsUnreachable,
  providerDown,
  budgetSpent,
]);
