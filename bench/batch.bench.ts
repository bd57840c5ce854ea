/**
 * `--batch` at scale: 100,000 articles (200,000 rows: summarize, then sentiment) through OpenAI's
 * Batch API as `news-processor serve` speaks it, with a short `--batch-duration`. What it measures
 * is the client's own work — building the rows, uploading them, downloading and decoding the
 * results, writing the lines — as the CPU time of the client process over the rows, and the
 * client's peak RSS, at a tenth of the articles and at all of them (`--batch-articles` at its
 * default, 50,000). A peak RSS left to itself is V8's choice of heap size more than what the run
 * holds (it grows the heap rather than collect while there is room), so memory is judged by two runs
 * with the old space capped at 96 MB (`--max-old-space-size`): a tenth of the articles, all in
 * progress at once, against all of them with `--batch-articles` a tenth — both must finish, and
 * what does not grow with the input stays level. Goals: ≤ 20 µs of CPU a row; a level peak RSS.
 * Then the same first articles live through serve's chat completions: the batch lines cost half.
 *
 *   npm run bench:batch            (BENCH_QUICK=1: 20,000 articles)
 *   npm run bench:batch -- --baseline=<commit> [--rounds=3]
 *
 * With `--baseline`, that revision is extracted and built under the system's temp folder, and only
 * the CPU a row is measured: its command and this one's, the same articles against the same serve,
 * alternately for `--rounds` rounds (a shared machine's load falls on both alike); medians printed.
 *
 * The client is the compiled command in a child process; a preloaded hook prints its
 * `process.resourceUsage()` on exit (user + system CPU, max RSS), so start-up is counted too.
 * serve runs in a child process of its own. Prints a table and writes bench/results/batch.json and
 * batch.txt.
 */

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe } from './lib/serve.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const option = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const baselineRev = option('baseline');
const ROUNDS = Number(option('rounds') ?? 3);
const ARTICLES = quick ? 20_000 : 100_000;
/** The articles run live too, for the price: the first of the same seeded set. */
const LIVE_ARTICLES = 1_000;
const TARGET_US_PER_ROW = 20;
/** The old space's cap of the runs that judge memory, in MB: what the run holds must fit, whatever the input. */
const HEAP_CAP_MB = 96;

/** A run's name in the figures: its articles, how many it holds at once, its old space's cap. */
function runName(articles: number, held: number | undefined, heapMb: number | undefined): string {
  return `articles_${articles}_held_${held ?? 'default'}_heap_${heapMb ?? 'v8'}`;
}
const KEY = 'sk-bench-batch';
const PRICE = ['--price-input=0.15', '--price-output=0.6'];
/** Printed by the client as it exits: its CPU time and peak RSS. */
const USAGE_HOOK =
  'data:text/javascript,process.on("exit",()=>process.stderr.write("RESOURCE_USAGE "+JSON.stringify(process.resourceUsage())+"\\n"))';

const output: string[] = [];
function progress(line: string): void {
  console.error(line);
  output.push(line);
}

interface ClientRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly cpuMs: number;
  readonly maxRssMb: number;
  readonly wallMs: number;
}

/** The command of `tree` (this checkout's by default) with `args`, its key in the environment; its CPU time and peak RSS from the hook. */
function client(args: readonly string[], nodeFlags: readonly string[] = [], tree = root): Promise<ClientRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, '--import', USAGE_HOOK, join(tree, 'dist/cli/news-processor.js'), ...args], {
    env: { ...process.env, NP_BENCH_KEY: KEY, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const usage = /RESOURCE_USAGE (\{.*\})/.exec(stderr)?.[1];
      if (usage === undefined) return reject(new Error(`the client said no resource usage (exit ${code}): ${stderr.slice(-2000)}`));
      const { userCPUTime, systemCPUTime, maxRSS } = JSON.parse(usage) as Record<string, number>;
      resolve({
        code,
        stdout,
        cpuMs: (userCPUTime! + systemCPUTime!) / 1000,
        maxRssMb: maxRSS! / 1024,
        wallMs: performance.now() - started,
      });
    });
  });
}

/** Each line's cost by article id. */
function costs(path: string): Map<string, number> {
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  return new Map(lines.map((line) => JSON.parse(line) as { id: string; costUsd: number }).map((line) => [line.id, line.costUsd]));
}

/** The baseline revision's tree, extracted and built once per revision under the system's temp folder. */
function baselineTree(rev: string): string {
  const tree = join(tmpdir(), `news-processor-batch-${rev.slice(0, 12)}`);
  if (!existsSync(join(tree, 'dist/cli/news-processor.js'))) {
    mkdirSync(tree, { recursive: true });
    execFileSync('sh', ['-c', `git -C "${root}" archive "${rev}" | tar -x -C "${tree}"`], { stdio: 'inherit' });
    if (!existsSync(join(tree, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: tree, stdio: 'inherit' });
  }
  return tree;
}

/** The CPU a row of the baseline's command and of this one, alternately, `ROUNDS` rounds; medians. */
async function sideBySide(rev: string, vendorFlags: readonly string[], dir: string): Promise<void> {
  const subjects = [
    { name: rev.slice(0, 7), tree: baselineTree(rev), usPerRow: [] as number[] },
    { name: 'this checkout', tree: root, usPerRow: [] as number[] },
  ];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const subject of subjects) {
      const out = join(dir, `side-${round}-${subject.usPerRow.length}-${subject.name.replace(/\W/g, '')}.jsonl`);
      const run = await client(
        ['--batch', '--batch-poll=250ms', `--articles=${ARTICLES}`, `--output=${out}`, '--json', ...PRICE, ...vendorFlags],
        [],
        subject.tree,
      );
      if (run.code !== 0) throw new Error(`${subject.name}: --batch ended ${run.code}: ${run.stdout}`);
      const { rows } = JSON.parse(run.stdout) as { rows: number };
      const usPerRow = (run.cpuMs * 1000) / rows;
      subject.usPerRow.push(usPerRow);
      progress(
        `round ${round}, ${subject.name}: ${rows} rows, CPU ${(run.cpuMs / 1000).toFixed(2)} s = ${usPerRow.toFixed(1)} µs a row, peak RSS ${run.maxRssMb.toFixed(0)} MB`,
      );
      rmSync(out, { force: true });
    }
  }
  const table = markdownTable(
    ['command', `CPU a row, median of ${ROUNDS}`, 'each round'],
    subjects.map((subject) => [
      subject.name,
      `${median(subject.usPerRow).toFixed(1)} µs`,
      subject.usPerRow.map((us) => us.toFixed(1)).join(', '),
    ]),
  );
  console.log(table);
  const results = join(root, 'bench/results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'batch-side.txt'), `${output.join('\n')}\n\n${table}\n`);
}

const serve = await startServe(['--rate=inf', '--min-latency=0ms', '--max-latency=0ms', '--batch-duration=2s', '--log-level=warn']);
const dir = mkdtempSync(join(tmpdir(), 'bench-batch-'));
const vendor = ['--provider=openai', `--base-url=${serve.url}/v1`, '--api-key-env=NP_BENCH_KEY'];
const rows: string[][] = [];
const figures: Record<string, unknown> = { articles: ARTICLES };
if (baselineRev !== undefined) {
  try {
    await sideBySide(baselineRev, vendor, dir);
  } finally {
    serve.run.send('SIGTERM');
    await serve.run.result;
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}
try {
  // Articles, the most in progress at once (undefined: the default), and the old space's cap in MB (undefined: V8's own).
  const runs: [number, number | undefined, number | undefined][] = [
    [ARTICLES / 10, undefined, undefined],
    [ARTICLES, undefined, undefined],
    [ARTICLES / 10, undefined, HEAP_CAP_MB],
    [ARTICLES, ARTICLES / 10, HEAP_CAP_MB],
  ];
  for (const [articles, held, heapMb] of runs) {
    const name = runName(articles, held, heapMb);
    const out = join(dir, `${name}.jsonl`);
    const holding = held === undefined ? [] : [`--batch-articles=${held}`];
    const run = await client(
      ['--batch', '--batch-poll=250ms', `--articles=${articles}`, ...holding, `--output=${out}`, '--json', ...PRICE, ...vendor],
      heapMb === undefined ? [] : [`--max-old-space-size=${heapMb}`],
    );
    if (run.code !== 0) throw new Error(`--batch with ${articles} articles ended ${run.code}: ${run.stdout}`);
    const summary = JSON.parse(run.stdout) as { rows: number; batches: number; succeeded: number; waitingMs: number; costUsd: number };
    const usPerRow = (run.cpuMs * 1000) / summary.rows;
    const heldLabel = held === undefined ? 'default' : held.toLocaleString('en-US');
    const capLabel = heapMb === undefined ? "V8's" : `${heapMb} MB`;
    progress(
      `${articles} articles, --batch-articles ${heldLabel}, old space ${capLabel}: ${summary.rows} rows, CPU ${(run.cpuMs / 1000).toFixed(2)} s = ${usPerRow.toFixed(1)} µs a row, peak RSS ${run.maxRssMb.toFixed(0)} MB, ${(run.wallMs / 1000).toFixed(1)} s wall (${(summary.waitingMs / 1000).toFixed(1)} s waiting)`,
    );
    rows.push([
      articles.toLocaleString('en-US'),
      heldLabel,
      capLabel,
      summary.rows.toLocaleString('en-US'),
      String(summary.batches),
      `${(run.cpuMs / 1000).toFixed(2)} s`,
      `${usPerRow.toFixed(1)} µs`,
      `${run.maxRssMb.toFixed(0)} MB`,
      `${(run.wallMs / 1000).toFixed(1)} s`,
    ]);
    figures[name] = {
      rows: summary.rows,
      batches: summary.batches,
      cpuMs: run.cpuMs,
      usPerRow,
      maxRssMb: run.maxRssMb,
      wallMs: run.wallMs,
    };
  }

  // The same first articles live: what each line costs at the live price.
  const live = join(dir, 'live.jsonl');
  const liveRun = await client([
    `--articles=${LIVE_ARTICLES}`,
    '--rate=inf',
    '--workers=32',
    `--output=${live}`,
    '--quiet',
    ...PRICE,
    ...vendor,
  ]);
  if (liveRun.code !== 0) throw new Error(`the live run ended ${liveRun.code}`);
  const liveCosts = costs(live);
  const batchCosts = costs(join(dir, `${runName(ARTICLES, undefined, undefined)}.jsonl`));
  let liveUsd = 0;
  let batchUsd = 0;
  for (const [id, cost] of liveCosts) {
    liveUsd += cost;
    batchUsd += batchCosts.get(id)!;
  }
  const ratio = batchUsd / liveUsd;
  progress(
    `the first ${LIVE_ARTICLES} articles: live $${liveUsd.toFixed(4)}, batch $${batchUsd.toFixed(4)}: batch/live ${ratio.toFixed(3)}`,
  );
  figures.price = { articles: LIVE_ARTICLES, liveUsd, batchUsd, ratio };
} finally {
  serve.run.send('SIGTERM');
  await serve.run.result;
  rmSync(dir, { recursive: true, force: true });
}

/** The figures of a run, as {@link runName} names it. */
function figuresOf(articles: number, held: number | undefined, heapMb: number | undefined): { usPerRow: number; maxRssMb: number } {
  return figures[runName(articles, held, heapMb)] as { usPerRow: number; maxRssMb: number };
}
const table = markdownTable(
  ['articles', '--batch-articles', 'old space', 'rows', 'batches', 'client CPU', 'CPU a row', 'peak RSS', 'wall'],
  rows,
);
const { price } = figures as { price: { ratio: number } };
const verdict = [
  `goal ≤ ${TARGET_US_PER_ROW} µs a row: ${figuresOf(ARTICLES, undefined, undefined).usPerRow <= TARGET_US_PER_ROW ? 'met' : 'not met'}`,
  `peak RSS (old space ${HEAP_CAP_MB} MB) of ${ARTICLES.toLocaleString('en-US')} articles holding ${(ARTICLES / 10).toLocaleString('en-US')} at once against ${(ARTICLES / 10).toLocaleString('en-US')} articles: ${(figuresOf(ARTICLES, ARTICLES / 10, HEAP_CAP_MB).maxRssMb / figuresOf(ARTICLES / 10, undefined, HEAP_CAP_MB).maxRssMb).toFixed(2)}× (goal 1, level)`,
  `batch/live cost ${price.ratio.toFixed(3)} (goal 0.5)`,
].join('; ');
console.log(`${table}\n\n${verdict}`);
const results = join(root, 'bench/results');
mkdirSync(results, { recursive: true });
writeFileSync(join(results, 'batch.json'), `${JSON.stringify(figures, null, 2)}\n`);
writeFileSync(join(results, 'batch.txt'), `${output.join('\n')}\n\n${table}\n\n${verdict}\n`);
