/**
 * `npm run bench:limiter`: our TokenBucket next to a literal port of the original Go pipeline's polling bucket
 * and the `limiter` package's TokenBucket, in one process, each scenario with its target.
 * Prints a Markdown table on stdout (progress on stderr) and writes bench/results/limiter.json.
 *
 * Run under `node --expose-gc` (the npm script does) so the bytes-per-waiter figure can be taken.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { formatMs, formatOpsPerSecond, formatRatio, formatSpread } from './lib/format.ts';
import { canMeasureHeap } from './lib/heap.ts';
import type { ScheduleFigures } from './lib/schedule.ts';
import { maxOf, median, minOf } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';
import { measureTimerReference, type TimerReference } from './lib/timer-reference.ts';
import { runMoveUp, runRefund, type AbortOptions, type MoveUpFigures, type RefundFigures } from './limiter/abort.ts';
import { measureBytesPerWaiter, runDrain, type DrainFigures, type DrainOptions } from './limiter/drain.ts';
import { runFifo, type FifoFigures, type FifoOptions } from './limiter/fifo.ts';
import { runRateAccuracy, type RateAccuracyOptions } from './limiter/rate-accuracy.ts';
import { keyedChecksum, keyedRows, measureKeyed, type KeyedOptions } from './limiter/keyed.ts';
import { IMPLEMENTATIONS, LABELS, type ImplementationId } from './limiter/subjects.ts';
import {
  acquireTasks,
  checksum,
  measureThroughput,
  tryAcquireTasks,
  type ThroughputOptions,
  type ThroughputRuns,
} from './limiter/throughput.ts';

const THROUGHPUT: ThroughputOptions = { repeats: 15, timeMs: 120, warmupMs: 40 };
const RATE_ACCURACY: RateAccuracyOptions & { repeats: number } = {
  rate: 100,
  burst: 1,
  grants: 300,
  callers: 50,
  repeats: 3,
};
const FIFO: FifoOptions & { repeats: number } = { rate: 100, burst: 1, callers: 20, staggerMs: 1, repeats: 3 };
const DRAIN: DrainOptions & { repeats: number } = {
  waiters: 100_000,
  rate: 1e5,
  burst: 1,
  capMs: 1500,
  repeats: 3,
};
const ABORT: AbortOptions & { repeats: number } = { rate: 20, abortAfterMs: 5, repeats: 3 };
const KEYED: KeyedOptions = { ...THROUGHPUT, liveKeys: 200_000, floodKeys: 1_000_000, floodMaxKeys: 100_000 };

type PerImplementation<T> = Record<ImplementationId, T>;
type Verdict = 'PASS' | 'MISS' | '—';

interface Row {
  readonly scenario: string;
  readonly figure: string;
  readonly cells: PerImplementation<string>;
  readonly versus: string;
  readonly target: string;
  readonly verdict: Verdict;
}

const rows: Row[] = [];
const results: Record<string, unknown> = {};

const progress = (message: string) => process.stderr.write(`[bench:limiter] ${message}\n`);
const verdict = (pass: boolean): Verdict => (pass ? 'PASS' : 'MISS');

/** The implementations in a different order each repeat, so none always runs first. */
const rotation = (repeat: number): ImplementationId[] => {
  const shift = repeat % IMPLEMENTATIONS.length;
  return [...IMPLEMENTATIONS.slice(shift), ...IMPLEMENTATIONS.slice(0, shift)];
};

async function perRepeat<T>(
  repeats: number,
  run: (id: ImplementationId) => Promise<T>,
  beforeEachRepeat: () => Promise<void> = async () => {},
): Promise<PerImplementation<T[]>> {
  const runs: PerImplementation<T[]> = { ours: [], naive: [], limiter: [] };
  for (let repeat = 0; repeat < repeats; repeat++) {
    await beforeEachRepeat();
    for (const id of rotation(repeat)) runs[id].push(await run(id));
  }
  return runs;
}

function mapImplementations<T, U>(values: PerImplementation<T>, map: (value: T, id: ImplementationId) => U) {
  return { ours: map(values.ours, 'ours'), naive: map(values.naive, 'naive'), limiter: map(values.limiter, 'limiter') };
}

/**
 * The median over repeats of ours ÷ baseline within the same repeat. Whole repeats run in one of
 * two or three machine-wide speed modes (all three implementations together), so ratios taken side
 * by side are far steadier than a ratio of separate medians.
 */
const pairedRatio = (ours: readonly number[], baseline: readonly number[]): number =>
  median(ours.map((value, repeat) => value / baseline[repeat]!));

function throughputRows(scenario: string, runs: ThroughputRuns, limiterFactor: number | undefined): void {
  const medians = mapImplementations(runs, (values) => median(values));
  const versusNaive = pairedRatio(runs.ours, runs.naive);
  const versusLimiter = pairedRatio(runs.ours, runs.limiter);
  const passNaive = versusNaive >= 1;
  const passLimiter = limiterFactor === undefined || versusLimiter >= limiterFactor;
  rows.push({
    scenario,
    figure: 'ops/s (median ±half-range)',
    cells: mapImplementations(runs, (values, id) => `${formatOpsPerSecond(medians[id])} ${formatSpread(values, medians[id])}`),
    versus: `${formatRatio(versusNaive)} naive, ${formatRatio(versusLimiter)} limiter (paired)`,
    target: limiterFactor === undefined ? '≥ 1× naive' : `≥ 1× naive, ≥ ${limiterFactor}× limiter`,
    verdict: verdict(passNaive && passLimiter),
  });
  results[scenario] = {
    opsPerSecond: { runs, median: medians, best: mapImplementations(runs, (values) => maxOf(values)) },
    oursOverNaive: versusNaive,
    oursOverLimiter: versusLimiter,
  };
}

function rateAccuracyRows(scenario: string, runs: PerImplementation<ScheduleFigures[]>): void {
  const { rate, burst } = RATE_ACCURACY;
  const med = (pick: (figures: ScheduleFigures) => number) => mapImplementations(runs, (list) => median(list.map(pick)));
  const worstMin = (pick: (figures: ScheduleFigures) => number) => mapImplementations(runs, (list) => minOf(list.map(pick)));
  const worstMax = (pick: (figures: ScheduleFigures) => number) => mapImplementations(runs, (list) => maxOf(list.map(pick)));
  const n = RATE_ACCURACY.repeats;

  const ratio = med((f) => f.rateRatio);
  rows.push({
    scenario,
    figure: 'achieved rate / configured',
    cells: mapImplementations(ratio, (value) => value.toFixed(4)),
    versus: '',
    target: '≥ 0.999',
    verdict: verdict(ratio.ours >= 0.999),
  });
  const lateness: [string, (f: ScheduleFigures) => number, number][] = [
    ['lateness p50', (f) => f.latenessP50Ms, Infinity],
    ['lateness p99', (f) => f.latenessP99Ms, 1.5],
    ['lateness max', (f) => f.latenessMaxMs, 3],
  ];
  for (const [figure, pick, limitMs] of lateness) {
    const values = med(pick);
    rows.push({
      scenario,
      figure: `${figure} (median of ${n})`,
      cells: mapImplementations(values, (value) => formatMs(value)),
      versus: '',
      target: Number.isFinite(limitMs) ? `≤ ${limitMs} ms` : '',
      verdict: Number.isFinite(limitMs) ? verdict(values.ours <= limitMs) : '—',
    });
  }
  const worstLate = worstMax((f) => f.latenessMaxMs);
  rows.push({
    scenario,
    figure: `lateness max (worst of ${n})`,
    cells: mapImplementations(worstLate, (value) => formatMs(value)),
    versus: '',
    target: '≤ 3 ms',
    verdict: verdict(worstLate.ours <= 3),
  });
  const earliest = worstMin((f) => f.earliestMs);
  rows.push({
    scenario,
    figure: `earliest grant vs ideal (worst of ${n})`,
    cells: mapImplementations(earliest, (value) => formatMs(value)),
    versus: '',
    target: '≥ −0.01 ms (never early)',
    verdict: verdict(earliest.ours >= -0.01),
  });
  const inOneSecond = worstMax((f) => f.maxInOneSecond);
  rows.push({
    scenario,
    figure: `max grants in any 1 s (worst of ${n})`,
    cells: mapImplementations(inOneSecond, String),
    versus: '',
    target: `≤ ${rate + burst} (rate + burst)`,
    verdict: verdict(inOneSecond.ours <= rate + burst),
  });
  // Each run's excess against that run's own bound; the cell shows the run with the least headroom.
  const tightest = mapImplementations(runs, (list) =>
    list.reduce((a, b) => (b.envelopeExcess - b.envelopeBound > a.envelopeExcess - a.envelopeBound ? b : a)),
  );
  rows.push({
    scenario,
    figure: `envelope excess, tokens (tightest of ${n})`,
    cells: mapImplementations(tightest, (f) => `${f.envelopeExcess.toFixed(3)} (bound ${f.envelopeBound.toFixed(3)})`),
    versus: '',
    target: '≤ rate × max lateness',
    verdict: verdict(runs.ours.every((f) => f.envelopeExcess <= f.envelopeBound + 1e-9)),
  });
  results[scenario] = { settings: RATE_ACCURACY, runs };
}

function fifoRows(scenario: string, runs: PerImplementation<FifoFigures[]>): void {
  const worst = mapImplementations(runs, (list) => maxOf(list.map((f) => f.inversions)));
  const med = mapImplementations(runs, (list) => median(list.map((f) => f.inversions)));
  rows.push({
    scenario,
    figure: `FIFO inversions, median (worst) of ${FIFO.repeats}`,
    cells: mapImplementations(med, (value, id) => `${value} (${worst[id]})`),
    versus: '',
    target: '0',
    verdict: verdict(worst.ours === 0),
  });
  results[scenario] = { settings: FIFO, runs };
}

function drainRows(scenario: string, drains: PerImplementation<DrainFigures[]>, bytes: PerImplementation<number[]>): void {
  const ratios = mapImplementations(drains, (list) => median(list.map((f) => f.drainOverFloor)));
  const drainCell = (list: DrainFigures[], id: ImplementationId) => {
    const capped = list.filter((f) => f.capped);
    if (capped.length === 0) return `${formatRatio(ratios[id], 4)} (${formatMs(median(list.map((f) => f.drainMs)), 0)})`;
    const granted = median(capped.map((f) => f.grantedBeforeCap));
    const elapsedS = median(capped.map((f) => f.drainMs)) / 1000;
    return `~${formatRatio(ratios[id], 1)} projected (capped: ${granted} of ${DRAIN.waiters} in ${elapsedS.toFixed(1)} s)`;
  };
  rows.push({
    scenario,
    figure: 'drain time / floor',
    cells: mapImplementations(drains, drainCell),
    versus: '',
    target: '≤ 1.05×',
    verdict: verdict(ratios.ours <= 1.05),
  });
  const perWaiter = mapImplementations(bytes, (list) => median(list));
  const measured = canMeasureHeap();
  rows.push({
    scenario,
    figure: 'heap bytes per waiter',
    cells: mapImplementations(perWaiter, (value) => (measured ? `${value.toFixed(0)} B` : 'n/a (no --expose-gc)')),
    versus: measured ? `${formatRatio(perWaiter.naive / perWaiter.ours)} less than naive` : '',
    target: '≤ 600 B',
    verdict: measured ? verdict(perWaiter.ours <= 600) : '—',
  });
  results[scenario] = { settings: DRAIN, floorMs: drains.ours[0]?.floorMs, drains, bytesPerWaiter: bytes };
}

function abortRows(
  scenario: string,
  moveUps: PerImplementation<(MoveUpFigures | undefined)[]>,
  refunds: PerImplementation<RefundFigures | undefined>,
): void {
  const moveUpCell = (list: (MoveUpFigures | undefined)[]) => {
    const figures = list.filter((f) => f !== undefined);
    if (figures.length === 0) return 'n/a (no abort)';
    const all = figures.every((f) => f.movedUp);
    return `${all ? 'yes' : 'no'}: at ${formatMs(median(figures.map((f) => f.grantedAfterMs)), 1)}`;
  };
  const slot = 1000 / ABORT.rate;
  rows.push({
    scenario,
    figure: `next moves up? (real clock, median of ${ABORT.repeats})`,
    cells: mapImplementations(moveUps, moveUpCell),
    versus: '',
    target: `yes: at ~${slot} ms (own slot ${2 * slot} ms)`,
    verdict: verdict(moveUps.ours.every((f) => f?.movedUp === true)),
  });
  const refundCell = (figures: RefundFigures | undefined) =>
    figures === undefined
      ? 'n/a (no abort)'
      : `${figures.exact ? 'yes' : 'no'}: ${figures.tokensAfterAbort.toFixed(6)} vs ${figures.tokensExpected.toFixed(6)}; ` +
        `next granted at ${figures.grantedAtMs.toFixed(6)} ms`;
  rows.push({
    scenario,
    figure: 'refund exact? tokens() vs twin never-called (manual clock)',
    cells: mapImplementations(refunds, refundCell),
    versus: '',
    target: `yes; granted at ${slot} ms`,
    verdict: verdict(refunds.ours?.exact === true && refunds.ours.grantedAtFreedSlot),
  });
  results[scenario] = { settings: ABORT, moveUps, refunds };
}

const formatLoad = (): string =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(' ');

function timerReferenceLine(references: readonly TimerReference[]): string {
  const first = references[0]!;
  return (
    `Reference — bare setTimeout(${first.delayMs} ms) ×${first.waits}, run before each repeat of the ` +
    `${RATE_ACCURACY.rate}/s scenario (what Node timers alone deliver meanwhile): lateness ` +
    `p50 ${formatMs(median(references.map((r) => r.latenessP50Ms)))}, ` +
    `p99 ${formatMs(median(references.map((r) => r.latenessP99Ms)))} (medians of ${references.length}), ` +
    `max ${formatMs(maxOf(references.map((r) => r.latenessMaxMs)))} (worst)`
  );
}

async function main(): Promise<void> {
  const startedMs = performance.now();
  const loadAtStart = formatLoad();
  if (!canMeasureHeap()) progress('global.gc is missing: run under node --expose-gc for bytes per waiter');

  progress('tryAcquire() throughput …');
  throughputRows('tryAcquire(), rate 1e9/s, burst 1e6', await measureThroughput(tryAcquireTasks, THROUGHPUT), 1.2);

  progress('await acquire() throughput …');
  throughputRows('await acquire(), tokens available', await measureThroughput(acquireTasks, THROUGHPUT), undefined);

  progress('300 grants at 100/s, 50 callers, with a bare-timer reference (≈ 3 s per run) …');
  const timerReferences: TimerReference[] = [];
  const scheduleRuns = await perRepeat(
    RATE_ACCURACY.repeats,
    (id) => runRateAccuracy(id, RATE_ACCURACY),
    async () => {
      timerReferences.push(await measureTimerReference(RATE_ACCURACY.grants, 1000 / RATE_ACCURACY.rate));
    },
  );
  results['timer reference'] = timerReferences;
  rateAccuracyRows('300 grants at 100/s, burst 1, 50 callers', scheduleRuns);

  progress('20 staggered callers …');
  fifoRows('20 callers, 1 ms apart, 100/s burst 1', await perRepeat(FIFO.repeats, (id) => runFifo(id, FIFO)));

  progress('100,000 waiters: bytes per waiter …');
  const bytes = await perRepeat(DRAIN.repeats, (id) => measureBytesPerWaiter(id, DRAIN));
  progress(`100,000 waiters at 1e5/s: drain (baselines capped at ${DRAIN.capMs} ms) …`);
  const drains = await perRepeat(DRAIN.repeats, (id) => runDrain(id, DRAIN));
  drainRows('100,000 waiters at 1e5/s, burst 1', drains, bytes);

  progress('abort one of two waiters …');
  const moveUps = await perRepeat(ABORT.repeats, (id) => runMoveUp(id, ABORT));
  const refunds = {
    ours: await runRefund('ours', ABORT),
    naive: await runRefund('naive', ABORT),
    limiter: await runRefund('limiter', ABORT),
  };
  abortRows(`abort 1 of 2 waiters, ${ABORT.rate}/s burst 1`, moveUps, refunds);

  progress('KeyedLimiter: take() on held and fresh keys, bytes per key, a flood past maxKeys …');
  const keyedFigures = await measureKeyed(KEYED);
  const keyed = keyedRows(keyedFigures, KEYED);
  results.keyed = { settings: KEYED, ...keyedFigures };

  const elapsedS = (performance.now() - startedMs) / 1000;
  const loadAtEnd = formatLoad();
  const header = ['scenario', 'figure', 'ours', 'naive', 'limiter', 'ours vs baselines', 'target (ours)', 'ours'];
  const table = markdownTable(
    header,
    rows.map((row) => [row.scenario, row.figure, row.cells.ours, row.cells.naive, row.cells.limiter, row.versus, row.target, row.verdict]),
  );
  const cpu = cpus();
  const machine = `${cpu[0]?.model ?? 'unknown CPU'} ×${cpu.length}, Node ${process.version}`;
  const misses = rows.filter((row) => row.verdict === 'MISS').length + keyed.filter((row) => row.at(-1) === 'MISS').length;
  const passes = rows.filter((row) => row.verdict === 'PASS').length + keyed.filter((row) => row.at(-1) === 'PASS').length;
  console.log(`Limiter benchmarks — ${machine}; load average ${loadAtStart} at start, ${loadAtEnd} at end`);
  console.log(
    Object.entries(LABELS)
      .map(([id, label]) => `  ${id}: ${label}`)
      .join('\n'),
  );
  console.log('');
  console.log(table);
  console.log('');
  console.log(timerReferenceLine(timerReferences));
  console.log('');
  console.log('KeyedLimiter (src/limiter/keyed-limiter.ts), one token bucket per key:');
  console.log(markdownTable(['scenario', 'figure', 'value', 'target', 'verdict'], keyed));
  console.log(`${passes} PASS, ${misses} MISS · ${elapsedS.toFixed(1)} s`);

  const outputPath = fileURLToPath(new URL('./results/limiter.json', import.meta.url));
  mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
  const report = {
    generatedAt: new Date().toISOString(),
    command: 'npm run bench:limiter',
    machine: { cpu: cpu[0]?.model, cores: cpu.length, node: process.version, platform: process.platform },
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    implementations: LABELS,
    elapsedSeconds: elapsedS,
    table: rows,
    scenarios: results,
    checksum: checksum() + keyedChecksum(),
  };
  writeFileSync(outputPath, `${JSON.stringify(report, null, 2)}\n`);
  progress(`wrote ${outputPath}`);
}

await main();
