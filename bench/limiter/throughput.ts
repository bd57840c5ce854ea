import { Bench, type Fn } from 'tinybench';
import { TokenBucket } from '../../src/limiter/token-bucket.ts';
import { NaiveGoBucket } from '../baselines/naive-go-bucket.ts';
import { createPackageBucket } from '../baselines/limiter-package.ts';
import type { ImplementationId } from './subjects.ts';

/**
 * Calls per tinybench sample. One call takes tens of nanoseconds, about what reading the timer
 * costs, so each sample times a batch and reports the per-call mean (`overriddenDuration`).
 */
const CALLS_PER_SAMPLE = 1000;

export interface ThroughputOptions {
  readonly repeats: number;
  readonly timeMs: number;
  readonly warmupMs: number;
}

/** Ops/s per implementation, one figure (1000 / median ms per call) per repeat. */
export type ThroughputRuns = Record<ImplementationId, number[]>;

/** Granted calls, summed so the loops' results are used and cannot be optimised away. */
let grantedTotal = 0;
export const checksum = (): number => grantedTotal;

function sampleOf(startMs: number, granted: number) {
  const elapsedMs = performance.now() - startMs;
  grantedTotal += granted;
  return { overriddenDuration: elapsedMs / CALLS_PER_SAMPLE, overriddenIterationCost: elapsedMs };
}

/** `tryAcquire()` at rate 1e9/s, burst 1e6: the bucket never runs dry, so this is the pure call cost. */
export function tryAcquireTasks(): Record<ImplementationId, Fn> {
  const ours = new TokenBucket({ rate: 1e9, burst: 1e6 });
  const naive = new NaiveGoBucket(1e9, 1e6);
  const limiter = createPackageBucket(1e9, 1e6);
  return {
    ours: () => {
      const startMs = performance.now();
      let granted = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) if (ours.tryAcquire()) granted++;
      return sampleOf(startMs, granted);
    },
    naive: () => {
      const startMs = performance.now();
      let granted = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) if (naive.tryAcquire()) granted++;
      return sampleOf(startMs, granted);
    },
    limiter: () => {
      const startMs = performance.now();
      let granted = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) if (limiter.tryRemoveTokens(1)) granted++;
      return sampleOf(startMs, granted);
    },
  };
}

/** `await acquire()` at rate 1e9/s, burst 1e9: tokens always available, so no wait, only the fast path. */
export function acquireTasks(): Record<ImplementationId, Fn> {
  const ours = new TokenBucket({ rate: 1e9, burst: 1e9 });
  const naive = new NaiveGoBucket(1e9, 1e9);
  const limiter = createPackageBucket(1e9, 1e9);
  return {
    ours: async () => {
      const startMs = performance.now();
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) await ours.acquire();
      return sampleOf(startMs, CALLS_PER_SAMPLE);
    },
    naive: async () => {
      const startMs = performance.now();
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) await naive.acquire();
      return sampleOf(startMs, CALLS_PER_SAMPLE);
    },
    limiter: async () => {
      const startMs = performance.now();
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) await limiter.removeTokens(1);
      return sampleOf(startMs, CALLS_PER_SAMPLE);
    },
  };
}

/**
 * Runs the three tasks `repeats` times, each repeat on fresh buckets and with the task order rotated
 * so no implementation always goes first (or always runs on the warmest heap).
 */
export async function measureThroughput(
  makeTasks: () => Record<ImplementationId, Fn>,
  options: ThroughputOptions,
): Promise<ThroughputRuns> {
  const runs: ThroughputRuns = { ours: [], naive: [], limiter: [] };
  const order: ImplementationId[] = ['ours', 'naive', 'limiter'];
  for (let repeat = 0; repeat < options.repeats; repeat++) {
    const tasks = makeTasks();
    const bench = new Bench({ time: options.timeMs, warmupTime: options.warmupMs, throws: true });
    const rotated = [...order.slice(repeat % order.length), ...order.slice(0, repeat % order.length)];
    for (const id of rotated) bench.add(id, tasks[id]);
    await bench.run();
    for (const task of bench.tasks) {
      const result = task.result;
      if (result.state !== 'completed') throw new Error(`tinybench task ${task.name} ended ${result.state}`);
      runs[task.name as ImplementationId].push(1000 / result.latency.p50);
    }
  }
  return runs;
}
