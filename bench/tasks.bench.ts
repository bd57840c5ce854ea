// What tasks as data cost per call: calls/s of the built-in tasks through the tasks path (a
// template rendered, a request with its schema, every answer checked against it) against the
// pipeline that had the two tasks built in, side by side in one process, rounds interleaved.
//
//   npm run bench:tasks                          (BENCH_QUICK=1 for a shorter run)
//   npm run bench:tasks -- --baseline=<commit>   another revision to compare with
//
// The baseline is checked out as a git worktree under the system's temp folder (node_modules
// linked), its sources imported as they are.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateArticles, requestLimit, runPipeline, SimulatedProvider, type Provider } from '../src/index.ts';
import { formatRatio } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
/** The last revision whose pipeline had summarize and sentiment built in. */
const DEFAULT_BASELINE = '21c0914edb7b2a677b4b61f73c90b67887f7e349';
const baselineRev = process.argv.find((arg) => arg.startsWith('--baseline='))?.slice('--baseline='.length) ?? DEFAULT_BASELINE;
const ARTICLES = quick ? 10_000 : 40_000;
const ROUNDS = quick ? 3 : 7;
const WORKERS = 64;
const TARGET = 0.95;

/** The baseline's sources, checked out once per revision. */
function baselineTree(rev: string): string {
  const commit = execFileSync('git', ['rev-parse', rev], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `news-processor-baseline-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, 'src', 'index.ts'))) {
    execFileSync('git', ['worktree', 'add', '--detach', '--force', dir, commit], { cwd: root, stdio: 'ignore' });
  }
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

type RunPipeline = typeof runPipeline;
interface Side {
  readonly runPipeline: RunPipeline;
  readonly SimulatedProvider: typeof SimulatedProvider;
  readonly generateArticles: typeof generateArticles;
  readonly requestLimit: typeof requestLimit;
}

const current: Side = { runPipeline, SimulatedProvider, generateArticles, requestLimit };
const baseline = (await import(join(baselineTree(baselineRev), 'src', 'index.ts'))) as Side;

/** Calls per second of one run: `ARTICLES` generated articles through the simulation at no latency and no limit. */
async function callsPerSecond(side: Side): Promise<number> {
  // A side whose simulation loads something first (ajv, before it was compiled ahead) does so untimed.
  const provider: Provider = new side.SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 });
  await provider.ready?.();
  const started = performance.now();
  const summary = await side.runPipeline({
    source: side.generateArticles(ARTICLES),
    providers: [{ provider, limits: side.requestLimit(Infinity, 1) }],
    workers: WORKERS,
    timeoutMs: 600_000,
  });
  const elapsedMs = performance.now() - started;
  if (summary.succeeded !== ARTICLES) throw new Error(`${summary.succeeded} of ${ARTICLES} succeeded`);
  return (summary.calls * 1000) / elapsedMs;
}

console.error(
  `tasks path vs the built-in pipeline of ${baselineRev.slice(0, 12)}: ${ARTICLES} articles, ${ROUNDS} rounds each, interleaved …`,
);
// One run of each first, unmeasured: both sides load and compile what they need.
await callsPerSecond(baseline);
await callsPerSecond(current);
const rounds: { baseline: number; current: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const first = round % 2 === 0 ? 'baseline' : 'current';
  const a = await callsPerSecond(first === 'baseline' ? baseline : current);
  const b = await callsPerSecond(first === 'baseline' ? current : baseline);
  rounds.push(first === 'baseline' ? { baseline: a, current: b } : { baseline: b, current: a });
  console.error(
    `  round ${round + 1}: built-in ${rounds.at(-1)!.baseline.toFixed(0)} calls/s, tasks ${rounds.at(-1)!.current.toFixed(0)} calls/s`,
  );
}
const ratios = rounds.map((r) => r.current / r.baseline);
const ratio = median(ratios);
const table = markdownTable(
  ['pipeline', 'calls/s (median of rounds)', 'vs built-in (median of round ratios)', 'target', 'verdict'],
  [
    [`built-in tasks (${baselineRev.slice(0, 12)})`, median(rounds.map((r) => r.baseline)).toFixed(0), '1.00×', '', ''],
    [
      'tasks as data (the built-in file)',
      median(rounds.map((r) => r.current)).toFixed(0),
      formatRatio(ratio),
      `≥ ${TARGET}×`,
      ratio >= TARGET ? 'PASS' : 'MISS',
    ],
  ],
);
console.log(table);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(
  join(root, 'bench', 'results', 'tasks.json'),
  `${JSON.stringify({ baseline: baselineRev, articles: ARTICLES, workers: WORKERS, rounds, ratio, target: TARGET }, null, 2)}\n`,
);
writeFileSync(join(root, 'bench', 'results', 'tasks.txt'), `${table}\n`);
