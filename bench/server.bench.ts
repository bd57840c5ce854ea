/**
 * `npm run bench:server`: what `rateLimit()` costs a server, side by side in one run, and the
 * memory a million clients take. Prints Markdown tables on stdout (progress on stderr) and writes
 * bench/results/server.json.
 *
 * - Throughput: autocannon (32 connections, a `key` header cycling through 10,000 keys) against
 *   servers each in a child process: bare node:http vs node:http with `rateLimit()`, and
 *   Express 5 with `rateLimit()` vs Express 5 with express-rate-limit (memory store, same limits);
 *   two references split the node:http cost into the limiter's and the response headers'.
 *   Rounds interleave the servers, each pair in turns, so both sides of a ratio share the
 *   machine's state; the ratio is the median of the rounds' ratios.
 * - Memory: 1,000,000 distinct clients, one request each at 200,000/s, against 60 a minute: keys
 *   held and heap grown, ours vs express-rate-limit's MemoryStore vs rate-limiter-flexible's
 *   RateLimiterMemory, each in a process of its own.
 *
 *   npm run bench:server     (BENCH_QUICK=1 for a shorter run)
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { formatRatio } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';
import type { ServerKind } from './server/app.ts';
import { MEMORY_IMPLEMENTATIONS, type MemoryFigures, type MemoryImplementation } from './server/memory.ts';

const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 2 : 8;
const RUN_SECONDS = quick ? 2 : 3;
const WARMUP_SECONDS = 2;
const CONNECTIONS = 32;
const KEYS = 10_000;
const MEMORY = { clients: 1_000_000, perSecond: 200_000 };

const APP = fileURLToPath(new URL('./server/app.ts', import.meta.url));
const MEMORY_SCRIPT = fileURLToPath(new URL('./server/memory.ts', import.meta.url));

/** The pairs measured side by side; those without a target are references that say where the cost lies. */
const PAIRS: readonly { name: string; baseline: ServerKind; ours: ServerKind; target: number | undefined }[] = [
  { name: 'node:http hello world: rateLimit() vs bare', baseline: 'bare', ours: 'ours', target: 0.9 },
  { name: 'reference: rateLimit({ headers: false }) vs bare', baseline: 'bare', ours: 'ours-no-headers', target: undefined },
  { name: 'reference: rateLimit() vs bare setting the same two headers', baseline: 'bare-headers', ours: 'ours', target: undefined },
  { name: 'Express 5: rateLimit() vs express-rate-limit', baseline: 'express-erl', ours: 'express-ours', target: 1.0 },
];

const MEMORY_LABELS: Record<MemoryImplementation, string> = {
  ours: 'ours (KeyedLimiter, rate 1/s, burst 60)',
  erl: 'express-rate-limit MemoryStore (60 per 60 s)',
  rlf: 'rate-limiter-flexible RateLimiterMemory (60 per 60 s)',
};

interface LoadFigures {
  readonly requests: number;
  readonly durationUs: number;
  readonly socketErrors: number;
  readonly non2xx: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
}

const progress = (message: string) => process.stderr.write(`[bench:server] ${message}\n`);
const children: ChildProcess[] = [];

/** Starts a server kind in a child process; resolves with its port once it listens. */
function startServer(kind: ServerKind): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', APP, kind], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`server ${kind} exited ${code} before listening`)));
  });
}

/** The part of autocannon's API the benchmark drives (it ships no types). */
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: readonly { setupRequest: (request: { headers?: Record<string, string> }) => object }[];
}) => Promise<{
  requests: { total: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  latency: { p50: number; p99: number };
}>;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

let nextKey = 0;
/** Every request carries the next of `KEYS` client keys, so the limiter holds as many buckets as a busy server. */
const withNextKey = (request: { headers?: Record<string, string> }): object => {
  nextKey = (nextKey + 1) % KEYS;
  return { ...request, headers: { ...request.headers, key: String(nextKey) } };
};

async function load(port: number, seconds: number): Promise<LoadFigures> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{ setupRequest: withNextKey }],
  });
  return {
    requests: result.requests.total,
    durationUs: result.duration * 1e6,
    socketErrors: result.errors,
    non2xx: result.non2xx,
    latencyP50Us: result.latency.p50 * 1000,
    latencyP99Us: result.latency.p99 * 1000,
  };
}

const requestsPerSecond = (figures: LoadFigures): number => figures.requests / (figures.durationUs / 1e6);

function memory(implementation: MemoryImplementation): MemoryFigures {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', MEMORY_SCRIPT, implementation, String(MEMORY.clients), String(MEMORY.perSecond)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return JSON.parse(out) as MemoryFigures;
}

const formatLoad = (): string =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  const startedMs = performance.now();
  const loadAtStart = formatLoad();
  const kinds = [...new Set(PAIRS.flatMap((pair) => [pair.baseline, pair.ours]))];
  const ports = new Map<ServerKind, number>();
  for (const kind of kinds) ports.set(kind, await startServer(kind));
  progress(`servers up: ${kinds.map((kind) => `${kind} on ${ports.get(kind)}`).join(', ')}`);
  for (const kind of kinds) await load(ports.get(kind)!, WARMUP_SECONDS);

  const runs = PAIRS.map(() => ({ baseline: [] as LoadFigures[], ours: [] as LoadFigures[] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, pair] of PAIRS.entries()) {
      // Each side goes first in every other round.
      const sides = round % 2 === 0 ? (['baseline', 'ours'] as const) : (['ours', 'baseline'] as const);
      for (const side of sides) runs[index]![side].push(await load(ports.get(pair[side])!, RUN_SECONDS));
    }
    progress(`round ${round + 1} of ${ROUNDS} done`);
  }

  const throughputRows: string[][] = [];
  const results: Record<string, unknown> = {};
  let passes = 0;
  let misses = 0;
  for (const [index, pair] of PAIRS.entries()) {
    const { baseline, ours } = runs[index]!;
    const ratios = ours.map((figures, round) => requestsPerSecond(figures) / requestsPerSecond(baseline[round]!));
    const ratio = median(ratios);
    const failed = [...baseline, ...ours].reduce((sum, figures) => sum + figures.non2xx + figures.socketErrors, 0);
    const pass = (pair.target === undefined || ratio >= pair.target) && failed === 0;
    if (pair.target !== undefined && pass) passes++;
    else if (!pass) misses++;
    const rps = (list: LoadFigures[]) => median(list.map(requestsPerSecond)).toFixed(0);
    const p99 = (list: LoadFigures[]) => `${(median(list.map((figures) => figures.latencyP99Us)) / 1000).toFixed(2)} ms`;
    throughputRows.push([
      pair.name,
      `${rps(ours)} vs ${rps(baseline)}`,
      `${p99(ours)} vs ${p99(baseline)}`,
      `${formatRatio(ratio)} (rounds: ${ratios.map((value) => value.toFixed(2)).join(', ')})`,
      String(failed),
      pair.target === undefined ? 'none refused' : `≥ ${pair.target}×, none refused`,
      pair.target === undefined ? (pass ? '—' : 'MISS') : pass ? 'PASS' : 'MISS',
    ]);
    results[pair.name] = { baseline: pair.baseline, ours: pair.ours, runs: { baseline, ours }, ratios, ratio };
  }

  progress(
    `memory: ${MEMORY.clients.toLocaleString('en')} clients at ${MEMORY.perSecond.toLocaleString('en')}/s, each in its own process …`,
  );
  const memoryFigures = Object.fromEntries(
    MEMORY_IMPLEMENTATIONS.map((implementation) => [implementation, memory(implementation)]),
  ) as Record<MemoryImplementation, MemoryFigures>;
  results.memory = { settings: MEMORY, figures: memoryFigures };
  const memoryRows = MEMORY_IMPLEMENTATIONS.map((implementation) => {
    const { keys, heapBytes, elapsedMs } = memoryFigures[implementation];
    return [
      MEMORY_LABELS[implementation],
      keys.toLocaleString('en'),
      `${(heapBytes / 2 ** 20).toFixed(1)} MB`,
      implementation === 'ours' ? '1×' : `${formatRatio(heapBytes / memoryFigures.ours.heapBytes, 1)} ours`,
      `${(elapsedMs / 1000).toFixed(1)} s`,
    ];
  });

  const elapsedS = (performance.now() - startedMs) / 1000;
  const loadAtEnd = formatLoad();
  const cpu = cpus();
  const machine = `${cpu[0]?.model ?? 'unknown CPU'} ×${cpu.length}, Node ${process.version}`;
  console.log(`Server benchmarks — ${machine}; load average ${loadAtStart} at start, ${loadAtEnd} at end`);
  console.log(
    `autocannon -c${CONNECTIONS} -d${RUN_SECONDS}, ${ROUNDS} interleaved rounds; a key header cycling through ${KEYS.toLocaleString('en')} keys; limits every request stays within`,
  );
  console.log('');
  console.log(
    markdownTable(
      ['pair', 'requests/s, ours vs baseline (median)', 'p99 latency', 'ratio (median of rounds)', 'refused or failed', 'target', ''],
      throughputRows,
    ),
  );
  console.log('');
  console.log(
    `${MEMORY.clients.toLocaleString('en')} distinct clients, one request each at ${MEMORY.perSecond.toLocaleString('en')}/s, ` +
      'against 60 a minute; keys held and heap grown (with ArrayBuffers) after full collections:',
  );
  console.log('');
  console.log(markdownTable(['implementation', 'keys held', 'heap', 'vs ours', 'elapsed'], memoryRows));
  console.log(`${passes} PASS, ${misses} MISS · ${elapsedS.toFixed(1)} s`);

  const outputPath = fileURLToPath(new URL('./results/server.json', import.meta.url));
  mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
  const report = {
    generatedAt: new Date().toISOString(),
    command: 'npm run bench:server',
    machine: { cpu: cpu[0]?.model, cores: cpu.length, node: process.version, platform: process.platform },
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    settings: { loadGenerator: 'autocannon', rounds: ROUNDS, runSeconds: RUN_SECONDS, connections: CONNECTIONS, keys: KEYS },
    elapsedSeconds: elapsedS,
    throughput: throughputRows,
    memory: memoryRows,
    scenarios: results,
  };
  writeFileSync(outputPath, `${JSON.stringify(report, null, 2)}\n`);
  progress(`wrote ${outputPath}`);
}

try {
  await main();
} finally {
  for (const child of children) child.kill();
}
