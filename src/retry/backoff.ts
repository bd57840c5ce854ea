/**
 * How long to wait before the next attempt: pure functions of the attempt number (or the previous
 * delay) and an injected `random`, after the AWS Architecture Blog's "Exponential Backoff And
 * Jitter". Prefer full jitter (the default of {@link createBackoff}): without jitter, clients that
 * failed together retry together and meet the same rate limit again.
 *
 * `random` must return a number in [0, 1), like `Math.random`; tests inject fixed values so every
 * delay is exact.
 */

import { checkDurationMs, checkFunction, checkInteger, checkNumber, checkOneOf } from '../validation/checks.ts';

export interface BackoffOptions {
  /** Delay after the first failure, before jitter, in milliseconds; > 0. @default 100 */
  baseMs?: number;
  /** No delay exceeds this, in milliseconds; >= `baseMs`. @default 2000 */
  capMs?: number;
}

/**
 * Gives the delay before the next attempt. `attempt` is the 1-based number of the attempt that just
 * failed; `previousDelayMs` is the delay actually waited before it (0 when there was none yet).
 */
export type Backoff = (attempt: number, previousDelayMs: number) => number;

const BACKOFF_KINDS: readonly BackoffKind[] = ['exponential', 'full', 'decorrelated'];

/** A backoff formula by name: `exponential` (doubling, capped), `full` (full jitter) or `decorrelated` (decorrelated jitter). */
export type BackoffKind = 'exponential' | 'full' | 'decorrelated';

/** The backoff {@link createBackoff} makes unless told otherwise. */
export const BACKOFF_DEFAULTS = Object.freeze({ kind: 'full' as BackoffKind, baseMs: 100, capMs: 2000 });

/** No jitter: `min(capMs, baseMs · 2^(attempt − 1))`. For a single client or for tests. */
export function exponentialDelayMs(attempt: number, options: BackoffOptions = {}): number {
  checkInteger('attempt', attempt, 1);
  const { baseMs, capMs } = resolveOptions(options);
  // 2 ** attempt overflows to Infinity for huge attempts; min() then settles on the cap.
  return Math.min(capMs, baseMs * 2 ** (attempt - 1));
}

/** AWS "full jitter": uniform in [0, exponential delay). Spreads a herd of retries the most. */
export function fullJitterDelayMs(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  return random() * exponentialDelayMs(attempt, options);
}

/**
 * AWS "decorrelated jitter": `min(capMs, uniform(baseMs, previous · 3))`. Each delay grows from the
 * previous one rather than from the attempt count. A previous delay below `baseMs` (0 for "none
 * yet", or a short retry-after that replaced the backoff) counts as `baseMs`, so the window never
 * collapses below the base.
 */
export function decorrelatedJitterDelayMs(
  previousDelayMs: number | undefined,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  if (previousDelayMs !== undefined) checkDurationMs('previousDelayMs', previousDelayMs);
  const { baseMs, capMs } = resolveOptions(options);
  const previousMs = Math.max(baseMs, previousDelayMs ?? baseMs);
  return Math.min(capMs, baseMs + random() * (previousMs * 3 - baseMs));
}

/**
 * One of the strategies above as a {@link Backoff}. Options are checked here, at once, so a bad
 * configuration fails where it is written rather than on the first retry.
 */
export function createBackoff(kind: BackoffKind = 'full', options: BackoffOptions = {}, random: () => number = Math.random): Backoff {
  resolveOptions(options);
  checkFunction('random', random);
  checkOneOf('kind', kind, BACKOFF_KINDS);
  switch (kind) {
    case 'exponential':
      return (attempt) => exponentialDelayMs(attempt, options);
    case 'full':
      return (attempt) => fullJitterDelayMs(attempt, options, random);
    case 'decorrelated':
      return (attempt, previousDelayMs) => {
        checkInteger('attempt', attempt, 1);
        return decorrelatedJitterDelayMs(previousDelayMs, options, random);
      };
  }
}

function resolveOptions(options: BackoffOptions): { baseMs: number; capMs: number } {
  const baseMs = options.baseMs ?? BACKOFF_DEFAULTS.baseMs;
  const capMs = options.capMs ?? BACKOFF_DEFAULTS.capMs;
  checkDurationMs('baseMs', baseMs, { positive: true });
  checkNumber('capMs', capMs, { min: baseMs, unit: 'ms' });
  return { baseMs, capMs };
}
