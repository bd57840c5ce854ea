import { Bench, type Fn } from 'tinybench';
import { systemClock } from '../../src/clock.ts';
import { KEYED_LIMITER_DEFAULTS, KeyedLimiter } from '../../src/limiter/keyed-limiter.ts';
import { formatOpsPerSecond, formatSpread } from '../lib/format.ts';
import { canMeasureHeap, retainedHeapBytes } from '../lib/heap.ts';
import { median } from '../lib/stats.ts';

/** Takes per tinybench sample: one take costs tens of nanoseconds, about what reading the timer costs. */
const CALLS_PER_SAMPLE = 1000;

export interface KeyedOptions {
  readonly repeats: number;
  readonly timeMs: number;
  readonly warmupMs: number;
  /** Live keys for the bytes-per-key figure. */
  readonly liveKeys: number;
  /** Distinct keys in the flood, and the `maxKeys` it must not push the limiter past. */
  readonly floodKeys: number;
  readonly floodMaxKeys: number;
}

const SCENARIOS = {
  clock: 'reference: the system clock read alone (every take reads it once)',
  existing: 'take(), one existing key',
  existing100k: 'take(), 100,000 existing keys round-robin',
  fresh100k: 'take(), a fresh key each call, 100,000 held (maxKeys: every take evicts)',
  fresh1M: 'take(), a fresh key each call, 1,000,000 held (default maxKeys: every take evicts)',
} as const;
type ScenarioId = keyof typeof SCENARIOS;

export interface KeyedFigures {
  /** Takes per second, one figure per repeat. */
  readonly opsPerSecond: Record<ScenarioId, number[]>;
  /** Heap and ArrayBuffer bytes per live key beyond the key strings; NaN without --expose-gc. */
  readonly bytesPerKey: number;
  /** The most keys held while the flood went through. */
  readonly floodMostKeys: number;
}

/** Takes granted, summed so the loops' results are used and cannot be optimised away. */
let grantedTotal = 0;
export const keyedChecksum = (): number => grantedTotal;

/**
 * Distinct key strings, handed out in a ring larger than any limiter here holds: by the time a key
 * comes round again it was evicted long ago, so every take in the fresh scenarios is on a key the
 * limiter does not hold. (The limiter hashes each key itself, so reusing the strings saves it nothing.)
 */
class KeyRing {
  readonly #keys: string[];
  #next = 0;

  constructor(size: number) {
    this.#keys = Array.from({ length: size }, (_, i) => `client-${i}`);
  }

  next(): string {
    const key = this.#keys[this.#next]!;
    this.#next = this.#next + 1 === this.#keys.length ? 0 : this.#next + 1;
    return key;
  }

  at(index: number): string {
    return this.#keys[index]!;
  }
}

function timed(run: () => number): Fn {
  return () => {
    const startMs = performance.now();
    grantedTotal += run();
    const elapsedMs = performance.now() - startMs;
    return { overriddenDuration: elapsedMs / CALLS_PER_SAMPLE, overriddenIterationCost: elapsedMs };
  };
}

/** A limiter holding `held` keys that never refill, fed fresh keys from the ring. */
function freshTask(ring: KeyRing, held: number): Fn {
  const limiter = new KeyedLimiter({ rate: 1e-6, burst: 10, maxKeys: held });
  for (let i = 0; i < held; i++) limiter.take(ring.next());
  return timed(() => {
    let granted = 0;
    for (let i = 0; i < CALLS_PER_SAMPLE; i++) if (limiter.take(ring.next()).allowed) granted++;
    return granted;
  });
}

/** Separate rings, so one scenario's takes never make another's keys come round early. */
interface Rings {
  readonly held: KeyRing;
  readonly fresh100k: KeyRing;
  readonly fresh1M: KeyRing;
}

function tasks(rings: Rings): Record<ScenarioId, Fn> {
  const one = new KeyedLimiter({ rate: 1e9, burst: 1e6 });
  // Never full again (so never dropped) and never short: every take is allowed on a held key.
  const many = new KeyedLimiter({ rate: 1, burst: 1e12 });
  const ring = rings.held;
  for (let i = 0; i < 100_000; i++) many.take(ring.at(i));
  let next = 0;
  return {
    clock: timed(() => {
      let sum = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) sum += systemClock.now();
      return sum > 0 ? 1 : 0;
    }),
    existing: timed(() => {
      let granted = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) if (one.take('client-1').allowed) granted++;
      return granted;
    }),
    existing100k: timed(() => {
      let granted = 0;
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) {
        if (many.take(ring.at(next)).allowed) granted++;
        next = next + 1 === 100_000 ? 0 : next + 1;
      }
      return granted;
    }),
    fresh100k: freshTask(rings.fresh100k, 100_000),
    fresh1M: freshTask(rings.fresh1M, KEYED_LIMITER_DEFAULTS.maxKeys),
  };
}

/** `KeyedLimiter`'s figures: take() throughput on held and fresh keys, bytes per live key, `maxKeys` under a flood. */
export async function measureKeyed(options: KeyedOptions): Promise<KeyedFigures> {
  const bytesPerKey = measureBytesPerKey(options.liveKeys);
  const floodMostKeys = flood(options.floodKeys, options.floodMaxKeys);
  const rings: Rings = { held: new KeyRing(100_000), fresh100k: new KeyRing(300_000), fresh1M: new KeyRing(3_000_000) };
  const opsPerSecond: Record<ScenarioId, number[]> = { clock: [], existing: [], existing100k: [], fresh100k: [], fresh1M: [] };
  const order = Object.keys(SCENARIOS) as ScenarioId[];
  for (let repeat = 0; repeat < options.repeats; repeat++) {
    const scenarioTasks = tasks(rings);
    const bench = new Bench({ time: options.timeMs, warmupTime: options.warmupMs, throws: true });
    const shift = repeat % order.length;
    for (const id of [...order.slice(shift), ...order.slice(0, shift)]) bench.add(id, scenarioTasks[id]);
    await bench.run();
    for (const task of bench.tasks) {
      if (task.result.state !== 'completed') throw new Error(`tinybench task ${task.name} ended ${task.result.state}`);
      opsPerSecond[task.name as ScenarioId].push(1000 / task.result.latency.p50);
    }
  }
  return { opsPerSecond, bytesPerKey, floodMostKeys };
}

function measureBytesPerKey(liveKeys: number): number {
  const keys = Array.from({ length: liveKeys }, (_, i) => `live-${i}`);
  let limiter: KeyedLimiter | undefined;
  // A discarded small pass first, so collections it triggers do not land in the measured one.
  retainedHeapBytes(() => {
    limiter = new KeyedLimiter({ rate: 1e-6, burst: 10 });
    for (let i = 0; i < 1000; i++) limiter.take(keys[i]!);
  });
  const bytes = retainedHeapBytes(() => {
    limiter = new KeyedLimiter({ rate: 1e-6, burst: 10 });
    for (const key of keys) limiter.take(key);
  });
  return bytes / limiter!.size;
}

function flood(keys: number, maxKeys: number): number {
  const limiter = new KeyedLimiter({ rate: 1e-6, burst: 10, maxKeys });
  let most = 0;
  for (let i = 0; i < keys; i++) {
    limiter.take(`flood-${i}`);
    if (limiter.size > most) most = limiter.size;
  }
  return most;
}

/** The section's rows: scenario, figure, value, target, verdict. */
export function keyedRows(figures: KeyedFigures, options: KeyedOptions): string[][] {
  const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const rows = (Object.keys(SCENARIOS) as ScenarioId[]).map((id) => {
    const runs = figures.opsPerSecond[id];
    const value = median(runs);
    const target = id === 'existing' ? 10e6 : id === 'fresh1M' ? 2e6 : undefined;
    return [
      SCENARIOS[id],
      `ops/s, median of ${runs.length} (±half-range)`,
      `${formatOpsPerSecond(value)} ${formatSpread(runs, value)}`,
      target === undefined ? '' : `≥ ${formatOpsPerSecond(target)}`,
      target === undefined ? '—' : verdict(value >= target),
    ];
  });
  const measured = canMeasureHeap();
  rows.push([
    `${options.liveKeys.toLocaleString('en')} live keys`,
    'heap + ArrayBuffer bytes per live key, beyond the key strings',
    measured ? `${figures.bytesPerKey.toFixed(0)} B` : 'n/a (no --expose-gc)',
    '≤ 200 B',
    measured ? verdict(figures.bytesPerKey <= 200) : '—',
  ]);
  rows.push([
    `${options.floodKeys.toLocaleString('en')} distinct keys, maxKeys ${options.floodMaxKeys.toLocaleString('en')}`,
    'most keys held',
    figures.floodMostKeys.toLocaleString('en'),
    `≤ ${options.floodMaxKeys.toLocaleString('en')}`,
    verdict(figures.floodMostKeys <= options.floodMaxKeys),
  ]);
  return rows;
}
