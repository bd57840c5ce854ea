/**
 * The HTTP client path: what a call costs through `runPipeline` with the OpenAI and the Anthropic
 * provider (the official SDKs over loopback HTTP) and the Gemini provider (`fetch` over loopback
 * HTTP) against `news-processor serve`, next to the
 * in-process simulated provider doing the same text analysis without HTTP. Targets: ≥ 3,000
 * calls/s through the HTTP path with serve beside it on this 2-core machine, and an added latency
 * per call under 1 ms at the median.
 *
 *   npm run bench:client            (BENCH_QUICK=1 for a shorter run)
 *
 * serve runs in a child process (the compiled command: zero latency, `--rate=inf`, logs at warn),
 * so that it has a core of its own; the client runs here, with no limit of its own
 * (`requestLimit(Infinity)`). Two figures, each in interleaved rounds (the order rotating, so that
 * drift in the machine's load falls on all alike), medians over the rounds:
 *
 * - throughput: 64 workers, calls per second over a whole run;
 * - latency: 1 worker, so that no call waits behind another: each call's latency as the pipeline
 *   measures it (the summary's `callLatencyMs`, from provider call to answer), and the HTTP
 *   path's minus the in-process one's: what HTTP adds to a call.
 *
 * Two more rows read rate-limit headers: serve stating a quota too large to bind (`--rate=1e9`) in
 * OpenAI's words and, as `serve --headers=groq`, in Groq's, the client syncing to them
 * (`syncHeaders`, which parses every answer's headers): beside the plain OpenAI row, what reading
 * a host's dialect costs a call.
 *
 * Prints a table and writes bench/results/client.json and client.txt.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHttpProvider, generateArticles, type Provider, type RunSummary, runPipeline, SimulatedProvider } from '../src/index.ts';
import { AnthropicProvider, OpenAiProvider } from '../src/vendors/index.ts';
import { HOST_DIALECTS } from '../src/vendors/openai/host-dialects/host-dialects.ts';
import { requestLimit } from '../src/quota/provider-limits.ts';
import { formatRatio } from './lib/format.ts';
import { startServe } from './lib/serve.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 2 : 5;
const WORKERS = 64;
/** Articles per throughput run (two calls each): a few seconds through HTTP. */
const THROUGHPUT_ARTICLES = quick ? 2000 : 5000;
/** Articles per latency run, one worker. */
const LATENCY_ARTICLES = quick ? 300 : 1000;
const TARGET_CALLS_PER_SECOND = 3000;
const TARGET_ADDED_P50_MS = 1;
const KEY = 'sk-bench-client';

const output: string[] = [];
/** Progress on stderr, and into the .txt with the table. */
function progress(line: string): void {
  console.error(line);
  output.push(line);
}

const QUICK_SERVE = ['--min-latency=0ms', '--max-latency=0ms', '--log-level=warn'];
const serve = await startServe(['--rate=inf', ...QUICK_SERVE]);
// A quota no run comes near, so that every answer states it: headers to read, never a wait.
const stating = ['--rate=1e9', '--burst=1000000000', ...QUICK_SERVE];
const [serveStating, serveGroq] = await Promise.all([startServe(stating), startServe(['--headers=groq', ...stating])]);
/** Each client: its provider, and whether the run syncs to its headers (reading every answer's). */
const CLIENTS = {
  'in-process simulated provider': () => ({ provider: new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 }), syncHeaders: false }),
  'OpenAI client → serve': () => ({ provider: new OpenAiProvider({ apiKey: KEY, baseUrl: `${serve.url}/v1` }), syncHeaders: false }),
  'OpenAI client → serve, OpenAI headers synced': () => ({
    provider: new OpenAiProvider({ apiKey: KEY, baseUrl: `${serveStating.url}/v1` }),
    syncHeaders: true,
  }),
  'OpenAI client → serve --headers=groq, Groq headers synced': () => ({
    provider: new OpenAiProvider({ apiKey: KEY, baseUrl: `${serveGroq.url}/v1`, headers: 'groq' }),
    syncHeaders: true,
  }),
  'Anthropic client → serve': () => ({ provider: new AnthropicProvider({ apiKey: KEY, baseUrl: serve.url }), syncHeaders: false }),
  'Gemini client → serve': () => ({ provider: createHttpProvider('gemini', { apiKey: KEY, baseUrl: serve.url }), syncHeaders: false }),
} as const;
/** The Gemini path's client CPU per call is held to within this of the OpenAI path's, measured side by side. */
const GEMINI_CPU_VS_OPENAI = 1.1;
type Client = keyof typeof CLIENTS;
const NAMES = Object.keys(CLIENTS) as Client[];
// One provider per client for the whole run, as a run of the command has: its SDK and connections stay warm.
const providers = Object.fromEntries(NAMES.map((name) => [name, CLIENTS[name]()])) as unknown as Record<
  Client,
  { provider: Provider; syncHeaders: boolean }
>;

/** A run's summary, and the CPU time this process spent on it per call. */
async function run(name: Client, articles: number, workers: number): Promise<RunSummary & { cpuPerCallUs: number }> {
  const cpu = process.cpuUsage();
  const summary = await runPipeline({
    source: generateArticles(articles),
    // A synced run's limit is the quota serve states (a rate to sync to, never waited on); the others have none.
    providers: [{ ...providers[name], limits: providers[name].syncHeaders ? requestLimit(1e9, 1e9) : requestLimit(Infinity, 1) }],
    workers,
    timeoutMs: 60_000,
  });
  const { user, system } = process.cpuUsage(cpu);
  if (summary.succeeded !== articles)
    throw new Error(`${name}: ${summary.succeeded} of ${articles} succeeded (${JSON.stringify(summary.failureReasons)})`);
  return { ...summary, cpuPerCallUs: (user + system) / summary.calls };
}

interface Round {
  callsPerSecond: number;
  /** CPU time of this process (the client; serve runs apart) per call, at 64 workers. */
  cpuPerCallUs: number;
  /** Per-call latency at 64 workers: mostly waiting behind the other calls. */
  loadedP50Ms: number;
  loadedP99Ms: number;
  /** Per-call latency with one worker: the path's own cost. */
  p50Ms: number;
  p99Ms: number;
}
const rounds: Record<Client, Round[]> = Object.fromEntries(NAMES.map((name) => [name, []])) as unknown as Record<Client, Round[]>;

/**
 * What reading one answer's rate-limit headers costs, alone: each dialect's provider reading the
 * headers serve sends in it (requests and tokens), the best of three runs of many reads.
 */
function headerReadUs(): Record<string, number> {
  const status = [
    { kind: 'requests' as const, limit: 600, remaining: 597, resetMs: 300 },
    { kind: 'tokens' as const, limit: 60_000, remaining: 59_000, resetMs: 1000 },
  ];
  const reads = quick ? 50_000 : 200_000;
  const figures: Record<string, number> = {};
  for (const name of ['openai', 'groq', 'together', 'mistral', 'none'] as const) {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': 'req_1', ...OPENAI_STYLE };
    HOST_DIALECTS[name].headers.write(headers, status, Date.now());
    const provider = new OpenAiProvider({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9/v1', headers: name });
    let bestUs = Infinity;
    for (let run = 0; run < 3; run++) {
      const startedMs = performance.now();
      for (let i = 0; i < reads; i++) provider.rateLimits(headers);
      bestUs = Math.min(bestUs, ((performance.now() - startedMs) * 1000) / reads);
    }
    figures[name] = bestUs;
  }
  return figures;
}
/** What any answer carries besides the limits. */
const OPENAI_STYLE = { 'openai-processing-ms': '12', 'openai-version': '2020-10-01', date: 'Mon, 07 Dec 2026 13:00:00 GMT' };
const readUs = headerReadUs();
progress(
  `reading one answer's rate-limit headers: ${Object.entries(readUs)
    .map(([name, us]) => `${name} ${us.toFixed(2)} µs`)
    .join(', ')}`,
);

const started = performance.now();
try {
  progress('warming up (one short run of each) …');
  for (const name of NAMES) {
    await run(name, 500, WORKERS);
    await run(name, 100, 1);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order, so that no client always runs first or last.
    const order = NAMES.map((_, index) => NAMES[(index + round) % NAMES.length]!);
    for (const name of order) {
      const loaded = await run(name, THROUGHPUT_ARTICLES, WORKERS);
      const single = await run(name, LATENCY_ARTICLES, 1);
      const figures: Round = {
        callsPerSecond: (loaded.calls * 1000) / loaded.elapsedMs,
        cpuPerCallUs: loaded.cpuPerCallUs,
        loadedP50Ms: loaded.callLatencyMs.p50,
        loadedP99Ms: loaded.callLatencyMs.p99,
        p50Ms: single.callLatencyMs.p50,
        p99Ms: single.callLatencyMs.p99,
      };
      rounds[name].push(figures);
      progress(
        `  round ${round + 1}, ${name}: ${figures.callsPerSecond.toFixed(0)} calls/s, ${figures.cpuPerCallUs.toFixed(0)} µs of client CPU per call; one worker: p50 ${figures.p50Ms.toFixed(3)} ms, p99 ${figures.p99Ms.toFixed(3)} ms`,
      );
    }
  }
} finally {
  for (const server of [serve, serveStating, serveGroq]) server.run.send('SIGTERM');
}

const med = (name: Client, field: keyof Round) => median(rounds[name].map((round) => round[field]));
const baseline: Client = 'in-process simulated provider';
const rows: string[][] = [];
const summary: Record<string, unknown> = {};
let allPass = true;
for (const name of NAMES) {
  const callsPerSecond = med(name, 'callsPerSecond');
  const ratio = callsPerSecond / med(baseline, 'callsPerSecond');
  const addedP50Ms = med(name, 'p50Ms') - med(baseline, 'p50Ms');
  const addedP99Ms = med(name, 'p99Ms') - med(baseline, 'p99Ms');
  const http = name !== baseline;
  let target = '';
  if (http) {
    const throughputOk = callsPerSecond >= TARGET_CALLS_PER_SECOND;
    const latencyOk = addedP50Ms < TARGET_ADDED_P50_MS;
    allPass &&= throughputOk && latencyOk;
    target = `≥ ${TARGET_CALLS_PER_SECOND.toLocaleString('en')}/s: ${throughputOk ? 'PASS' : 'MISS'}; added p50 < ${TARGET_ADDED_P50_MS} ms: ${latencyOk ? 'PASS' : 'MISS'}`;
  }
  rows.push([
    name,
    callsPerSecond.toFixed(0),
    http ? formatRatio(ratio) : '1.00×',
    `${med(name, 'cpuPerCallUs').toFixed(0)} µs`,
    `${med(name, 'loadedP50Ms').toFixed(2)} / ${med(name, 'loadedP99Ms').toFixed(2)} ms`,
    `${med(name, 'p50Ms').toFixed(3)} / ${med(name, 'p99Ms').toFixed(3)} ms`,
    http ? `${addedP50Ms.toFixed(3)} / ${addedP99Ms.toFixed(3)} ms` : '',
    target,
  ]);
  summary[name] = {
    callsPerSecond,
    ratioToInProcess: ratio,
    clientCpuPerCallUs: med(name, 'cpuPerCallUs'),
    latencyMs: { p50: med(name, 'p50Ms'), p99: med(name, 'p99Ms') },
    loadedLatencyMs: { p50: med(name, 'loadedP50Ms'), p99: med(name, 'loadedP99Ms') },
    addedLatencyMs: http ? { p50: addedP50Ms, p99: addedP99Ms } : undefined,
    rounds: rounds[name],
  };
}

const geminiCpuRatio = med('Gemini client → serve', 'cpuPerCallUs') / med('OpenAI client → serve', 'cpuPerCallUs');
const geminiCpuOk = geminiCpuRatio <= GEMINI_CPU_VS_OPENAI;
allPass &&= geminiCpuOk;
summary.geminiCpuVsOpenAi = { ratio: geminiCpuRatio, target: GEMINI_CPU_VS_OPENAI, pass: geminiCpuOk };
const geminiLine = `Gemini client CPU per call ÷ OpenAI's: ${geminiCpuRatio.toFixed(3)} (≤ ${GEMINI_CPU_VS_OPENAI}: ${geminiCpuOk ? 'PASS' : 'MISS'})`;

const heading =
  `runPipeline, zero latency, no client limit; serve (--rate=inf) in a child process; medians of ${ROUNDS} interleaved rounds: ` +
  `${THROUGHPUT_ARTICLES.toLocaleString('en')} articles at ${WORKERS} workers, then ${LATENCY_ARTICLES.toLocaleString('en')} at 1 worker`;
const table = markdownTable(
  [
    'client',
    `calls/s, ${WORKERS} workers`,
    'vs in-process',
    'client CPU per call',
    `call p50 / p99, ${WORKERS} workers`,
    'call p50 / p99, 1 worker',
    'added p50 / p99',
    'target',
  ],
  rows,
);
console.log(heading);
console.log(table);
console.log(geminiLine);
output.push(
  '',
  heading,
  table,
  '',
  geminiLine,
  `${allPass ? 'all targets met' : 'a target was missed'}; ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, 'bench/results/client.json'),
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      node: process.version,
      quick,
      rounds: ROUNDS,
      workers: WORKERS,
      throughputArticles: THROUGHPUT_ARTICLES,
      latencyArticles: LATENCY_ARTICLES,
      targets: { callsPerSecond: TARGET_CALLS_PER_SECOND, addedP50Ms: TARGET_ADDED_P50_MS },
      headerReadUs: readUs,
      results: summary,
    },
    null,
    2,
  )}\n`,
);
writeFileSync(join(root, 'bench/results/client.txt'), `${output.join('\n')}\n`);
