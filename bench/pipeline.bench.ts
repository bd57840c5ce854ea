// Pipeline benchmarks: whole CLI runs (throughput and memory, rate precision) and the pipeline
// alone in-process. Prints figures and PASS/MISS against the targets; writes bench/results/pipeline.json.
//
//   npm run bench:pipeline            (BENCH_QUICK=1 for a shorter run; BENCH_ONLY=otel for the --otel rows alone)
import { requestLimit } from '../src/quota/provider-limits.ts';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateArticles, LmdbAnswerCache, runPipeline, type Provider } from '../src/index.ts';
import { startOtlpCollector } from '../test/telemetry/otlp-collector.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';

interface CliFigures {
  articles: number;
  succeeded: number;
  calls: number;
  elapsedMs: number;
  leastElapsedMs: number;
  maxRssBytes: number;
}

/** Runs the command with `--json --quiet` and returns its figures. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'cmd/news-processor.ts', ...args, '--json', '--quiet'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`news-processor ${args.join(' ')} exited ${code}`));
      else resolve(JSON.parse(out) as CliFigures);
    });
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const rows: { scenario: string; figure: string; value: string; target: string; verdict: string }[] = [];
const results: Record<string, unknown> = {};

function row(scenario: string, figure: string, value: string, target: string, pass: boolean | undefined): void {
  rows.push({ scenario, figure, value, target, verdict: pass === undefined ? '' : pass ? 'PASS' : 'MISS' });
  console.error(`  ${scenario}: ${figure} = ${value}`);
}

const only = process.env.BENCH_ONLY;
const zero = ['--rate=inf', '--min-latency=0ms', '--max-latency=0ms', '--workers=64', '--timeout=60s'];
if (only === undefined) {
  // 1. Throughput and memory: N articles at rate=inf, zero latency, through the CLI.
  const big = quick ? 100_000 : 1_000_000;
  console.error(`CLI: ${big} articles, rate=inf, zero latency …`);
  const large = await cli([`--articles=${big}`, ...zero]);
  const small = await cli(['--articles=10000', ...zero]);
  const articlesPerSecond = (large.articles * 1000) / large.elapsedMs;
  const rssRatio = large.maxRssBytes / small.maxRssBytes;
  results.throughput = {
    articles: big,
    articlesPerSecond,
    maxRssBytes: large.maxRssBytes,
    smallRunMaxRssBytes: small.maxRssBytes,
    rssRatio,
  };
  row(`CLI ${big} articles, rate=inf, 0 ms`, 'articles/s', articlesPerSecond.toFixed(0), '≥ 100,000', articlesPerSecond >= 100_000);
  row(
    `CLI ${big} articles, rate=inf, 0 ms`,
    'peak RSS vs 10,000 articles',
    `${mb(large.maxRssBytes)} / ${mb(small.maxRssBytes)} = ${rssRatio.toFixed(2)}×`,
    '≤ 1.2×',
    rssRatio <= 1.2,
  );

  // 2. The pipeline alone: a provider that answers at once with fixed output (no text analysis),
  // each answer one that fits its task's schema, as every answer is checked against it.
  const instant: Provider = {
    name: 'instant',
    call: async (request) =>
      request.task === 'summarize' ? { output: { summary: 's', keywords: [] } } : { output: { sentiment: 'neutral', score: 0 } },
  };
  const inProcess: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const n = quick ? 100_000 : 300_000;
    await runPipeline({ source: generateArticles(n), providers: [{ provider: instant, limits: requestLimit(Infinity, 1) }], workers: 64 });
    inProcess.push((n * 1000) / (performance.now() - started));
  }
  results.pipelineAlone = { articlesPerSecond: inProcess };
  row(
    'in-process pipeline, instant provider',
    'articles/s (median of 3)',
    median(inProcess).toFixed(0),
    '(the pipeline without the simulated text analysis)',
    undefined,
  );

  // 2b. The same with the answer cache on (LMDB): a first run, every call a miss whose answer is
  // stored; then the same articles again, every call a hit. The rows above are the cache off.
  const cachedProvider: Provider = {
    ...instant,
    answerIdentity: (request, maxOutputTokens) => ({ task: request.task, prompt: request.prompt, maxOutputTokens }),
  };
  const cacheDir = mkdtempSync(join(tmpdir(), 'np-pipeline-cache-'));
  try {
    const n = quick ? 100_000 : 300_000;
    const cache = await LmdbAnswerCache.open(join(cacheDir, 'answers'));
    const timed = async (): Promise<{ articlesPerSecond: number; cacheHits: number }> => {
      const started = performance.now();
      const summary = await runPipeline({
        source: generateArticles(n),
        providers: [{ provider: cachedProvider, limits: requestLimit(Infinity, 1) }],
        workers: 64,
        cache,
      });
      return { articlesPerSecond: (n * 1000) / (performance.now() - started), cacheHits: summary.cacheHits ?? 0 };
    };
    const misses = await timed();
    const hits = await timed();
    await cache.close();
    results.pipelineCached = { articles: n, misses, hits };
    row('in-process pipeline, LMDB cache, every call a miss (stored)', 'articles/s', misses.articlesPerSecond.toFixed(0), '', undefined);
    row(
      'in-process pipeline, LMDB cache, the same articles again',
      `articles/s (${misses.cacheHits + hits.cacheHits} hits of ${2 * n} calls)`,
      hits.articlesPerSecond.toFixed(0),
      '',
      undefined,
    );
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }

  // 3. Precision: 2,000 articles (4,000 calls) at 500/s, burst 1, 64 workers, latency 1–5 ms.
  const precise = quick ? 500 : 2000;
  console.error(`CLI: ${precise} articles at 500/s, burst 1 …`);
  const ratios: number[] = [];
  for (let i = 0; i < 3; i++) {
    const run = await cli([`--articles=${precise}`, '--rate=500', '--burst=1', '--workers=64', '--min-latency=1ms', '--max-latency=5ms']);
    ratios.push(run.elapsedMs / run.leastElapsedMs);
  }
  results.precision = { articles: precise, ratios };
  row(
    `CLI ${precise} articles at 500/s, burst 1`,
    'elapsed / (floor + last call), median of 3',
    `${median(ratios).toFixed(4)} (runs ${ratios.map((r) => r.toFixed(4)).join(', ')})`,
    '≤ 1.005',
    median(ratios) <= 1.005,
  );
}

// 4. --otel to a local OTLP collector (http/protobuf, the SDK's default) against no --otel, runs
// interleaved: a run bound by its CPU (zero latency: spans and metrics are all the extra work there
// is) and a run bound by its rate (what a real run is). The CPU-bound run also with a sampler
// keeping a tenth of the articles' traces, and with none (the metrics alone): what the spans cost.
const collector = await startOtlpCollector();
const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint };
const cpuBound = quick ? 5000 : 20_000;
const otelCases = [
  {
    name: `CLI ${cpuBound} articles, rate=inf, 0 ms`,
    args: [`--articles=${cpuBound}`, ...zero],
    rounds: 5,
    variants: [
      { label: '', env: {} as Record<string, string> },
      {
        label: ', a tenth of the traces sampled',
        env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
      },
      { label: ', no trace sampled (metrics alone)', env: { OTEL_TRACES_SAMPLER: 'always_off' } },
    ],
  },
  {
    name: `CLI ${quick ? 500 : 1000} articles at 200/s, burst 1, latency 1–5 ms`,
    args: [`--articles=${quick ? 500 : 1000}`, '--rate=200', '--burst=1', '--workers=64', '--min-latency=1ms', '--max-latency=5ms'],
    rounds: 3,
    variants: [{ label: '', env: {} as Record<string, string> }],
  },
];
results.otel = [];
for (const { name, args, rounds, variants } of otelCases) {
  console.error(`${name}, with and without --otel …`);
  const without: number[] = [];
  const withOtel: number[][] = variants.map(() => []);
  for (let i = 0; i < rounds; i++) {
    without.push((await cli(args)).elapsedMs);
    for (const [v, variant] of variants.entries()) {
      withOtel[v]!.push((await cli(['--otel', ...args], { ...otlp, ...variant.env })).elapsedMs);
      // The collector keeps what it is sent; the bench needs none of it.
      collector.requests.length = 0;
    }
  }
  for (const [v, variant] of variants.entries()) {
    const overhead = median(withOtel[v]!) / median(without) - 1;
    (results.otel as unknown[]).push({
      name: `${name}${variant.label}`,
      env: variant.env,
      withoutMs: without,
      withOtelMs: withOtel[v],
      overhead,
    });
    row(
      `${name}${variant.label}`,
      `elapsed with --otel / without − 1, medians of ${rounds}`,
      `${(overhead * 100).toFixed(1)} % (${median(withOtel[v]!).toFixed(0)} / ${median(without).toFixed(0)} ms)`,
      '≤ 5 %',
      overhead <= 0.05,
    );
  }
}
await collector.close();

const width = (key: keyof (typeof rows)[number]) => Math.max(key.length, ...rows.map((r) => r[key].length));
const keys = ['scenario', 'figure', 'value', 'target', 'verdict'] as const;
console.log(keys.map((k) => k.padEnd(width(k))).join(' | '));
console.log(keys.map((k) => '-'.repeat(width(k))).join('-|-'));
for (const r of rows) console.log(keys.map((k) => r[k].padEnd(width(k))).join(' | '));
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, `bench/results/pipeline${only === undefined ? '' : `-${only}`}.json`),
  `${JSON.stringify({ date: new Date().toISOString(), quick, ...results }, null, 2)}\n`,
);
