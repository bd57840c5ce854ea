/**
 * Drives a fixed number of calls through the call gate — its limits, and with or without an
 * {@link AdaptiveRate} — into a SimulatedProvider that has its own, lower quota, and reports what
 * the server saw. Shared by the adaptive benchmark; not part of the library.
 */

import { ManualClock, sleep, systemClock, type Clock } from '../../src/clock.ts';
import type { AdaptiveTuning } from '../../src/quota/adaptive-rate.ts';
import { CallGate } from '../../src/gate/call-gate.ts';
import { CallLoop } from '../../src/route/call-loop.ts';
import { ProviderRoute } from '../../src/route/provider-route.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import type { HeaderStyle } from '../../src/vendors/rate-limit-headers.ts';
import type { CallOptions, LlmRequest, LlmResponse, Provider } from '../../src/provider/provider.ts';
import { SimulatedProvider, type ProviderQuota } from '../../src/simulator/simulated.ts';
import { builtinRequest } from '../../test/requests.ts';

export interface ScenarioOptions {
  /** Successful calls to make. */
  readonly calls: number;
  /** Concurrent workers, each: a call through the gate (which retries its 429s), then the next. */
  readonly workers: number;
  /** The client's configured rate, in calls per second. */
  readonly clientRate: number;
  readonly clientBurst: number;
  /** The provider's server-side quota. */
  readonly quota: ProviderQuota;
  readonly minLatencyMs: number;
  readonly maxLatencyMs: number;
  /** Controller tuning; `undefined` runs non-adaptive. */
  readonly adaptive: AdaptiveTuning | undefined;
  /** The provider states its limit in headers of this style (the adaptive rate then adopts it). Default: no headers. */
  readonly headers?: HeaderStyle | undefined;
  /** `'manual'`: a ManualClock advanced in `stepMs` steps (exact, fast); `'real'`: wall time. */
  readonly clock: 'manual' | 'real';
  /** ManualClock step, in ms. Default 10. */
  readonly stepMs?: number;
  /**
   * Extra delay between a token's grant and the call, in ms, drawn per attempt: a loaded event
   * loop's timer lateness, replayed on the ManualClock. Default none.
   */
  readonly sendLatenessMs?: (() => number) | undefined;
  /** Provider seed. Default 1. */
  readonly seed?: number;
}

export interface ScenarioResult {
  readonly succeeded: number;
  /** Calls that reached the provider: successes plus 429s. */
  readonly attempts: number;
  readonly rateLimited: number;
  /** 429s as a share of attempts, in [0, 1]. */
  readonly rateLimitedShare: number;
  /** From the first call to the last success, in ms. */
  readonly elapsedMs: number;
  /** Successful calls per second over `elapsedMs`. */
  readonly achievedRate: number;
  /** Successful calls per second over the second half of the run: where the search has settled. */
  readonly settledRate: number;
  readonly decreases: number;
  readonly increases: number;
  readonly finalRate: number;
  /** Wall time the run took, in ms (the ManualClock run is much faster than its simulated time). */
  readonly wallMs: number;
  /**
   * Send jitter, in ms: on the real clock how late a 10 ms timer fired during the run; on the
   * ManualClock the `sendLatenessMs` drawn; `undefined` on an exact ManualClock run.
   */
  readonly timerLatenessMs: { readonly p50: number; readonly p99: number; readonly max: number } | undefined;
  /** Every rate change: ms since the start and the new rate; the configured rate at 0. */
  readonly timeline: readonly (readonly [atMs: number, rate: number])[];
}

/** Sends each call late by a drawn lateness, as a loaded event loop would. */
class LateSender implements Provider {
  readonly name: string;

  constructor(
    private readonly inner: Provider,
    private readonly clock: Clock,
    private readonly latenessMs: () => number,
    private readonly samples: number[],
  ) {
    this.name = inner.name;
  }

  async call(request: LlmRequest, options?: CallOptions): Promise<LlmResponse> {
    const latenessMs = this.latenessMs();
    this.samples.push(latenessMs);
    if (latenessMs > 0) await sleep(this.clock, latenessMs);
    return this.inner.call(request, options);
  }
}

export async function runScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  const wallStartMs = performance.now();
  const manual = options.clock === 'manual' ? new ManualClock() : undefined;
  const clock: Clock = manual ?? systemClock;
  const limits = new LocalLimits({ limits: requestLimit(options.clientRate, options.clientBurst), clock });
  const simulated = new SimulatedProvider({
    minLatencyMs: options.minLatencyMs,
    maxLatencyMs: options.maxLatencyMs,
    quota: options.quota,
    seed: options.seed ?? 1,
    headerStyle: options.headers,
    clock,
  });
  let latenessSamples: number[] | undefined;
  let provider: Provider = simulated;
  if (options.sendLatenessMs !== undefined) {
    latenessSamples = [];
    provider = new LateSender(simulated, clock, options.sendLatenessMs, latenessSamples);
  }
  // Every 429 is retried after its retry-after, for as long as it takes: the run measures the rate, not give-ups.
  const gate = new CallGate({ provider, limits, adaptive: options.adaptive, clock });
  const loop = new CallLoop({ clock, retry: { maxAttempts: 1_000_000 } });
  const route = new ProviderRoute(gate);
  const controller = gate.adaptive;

  const startMs = clock.now();
  const timeline: [number, number][] = [[0, options.clientRate]];
  controller?.onChange(({ rate }) => timeline.push([clock.now() - startMs, rate]));
  const successesAtMs: number[] = [];
  let next = 0;

  const worker = async (): Promise<void> => {
    while (next < options.calls) {
      const request: LlmRequest = builtinRequest('sentiment', String(next++), 'Markets', 'Shares rose.');
      await loop.call(route, request);
      successesAtMs.push(clock.now() - startMs);
    }
  };

  const run = Promise.all(Array.from({ length: options.workers }, worker));
  if (manual !== undefined) {
    let done = false;
    let failure: unknown;
    run.then(
      () => (done = true),
      (error: unknown) => {
        failure = error;
        done = true;
      },
    );
    const stepMs = options.stepMs ?? 10;
    while (!done) await manual.advance(stepMs);
    if (failure !== undefined) throw failure;
  } else {
    const monitor = monitorTimerLateness();
    try {
      await run;
    } finally {
      latenessSamples = monitor.stop();
    }
  }

  const elapsedMs = successesAtMs.at(-1) ?? 0;
  const half = successesAtMs[Math.floor(successesAtMs.length / 2)] ?? 0;
  const succeeded = successesAtMs.length;
  return {
    succeeded,
    attempts: simulated.calls,
    rateLimited: simulated.rateLimited,
    rateLimitedShare: simulated.rateLimited / simulated.calls,
    elapsedMs,
    achievedRate: (succeeded * 1000) / elapsedMs,
    settledRate: ((succeeded - Math.floor(succeeded / 2)) * 1000) / (elapsedMs - half),
    decreases: controller?.decreases ?? 0,
    increases: controller?.increases ?? 0,
    finalRate: limits.rate,
    wallMs: performance.now() - wallStartMs,
    timerLatenessMs: latenessSamples === undefined ? undefined : summarize(latenessSamples),
    timeline,
  };
}

/**
 * Samples how late a chain of 10 ms timers fires. A token granted by a late timer is sent late, and
 * the bucket accounts the next grant from the due instant, so the gap between two sends shrinks
 * by the first one's lateness: against a burst-1 quota that alone draws 429s below the quota.
 */
function monitorTimerLateness(): { stop(): number[] } {
  const samples: number[] = [];
  let handle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    const dueMs = performance.now() + 10;
    handle = setTimeout(() => {
      samples.push(performance.now() - dueMs);
      arm();
    }, 10);
  };
  arm();
  return {
    stop() {
      clearTimeout(handle);
      return samples;
    },
  };
}

function summarize(samples: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (quantile: number) => sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}
