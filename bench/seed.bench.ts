// The seed's own command against the Go pipeline it ports, each run as a user runs it — a process
// from spawn to exit, rounds interleaved so that a busy machine slows both alike — at the settings
// the seed was measured at, both on a simulated provider answering in 1–2 ms:
//
//   npm run bench:seed                  (needs Go: apt-get install golang-go; BENCH_QUICK=1 for 3 rounds)
//   npm run bench:seed -- --runs=10     rounds (default 7)
//
// The Go program is bench/go-seed/main.go, rebuilt from the seed's description (its token bucket is
// bench/baselines/naive-go-bucket.ts, ported line for line), built under the system's temp folder.
// Each row also gives the floor no schedule can beat: the last of n calls at `rate` with `burst`
// leaves (n − burst) / rate after the first. Both commands pay it; what one pays beyond it is its
// start-up, its scheduling and its exit.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatRatio } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const runsOption = process.argv.find((arg) => arg.startsWith('--runs='))?.slice('--runs='.length);
const RUNS = Number(runsOption ?? (quick ? 3 : 7));

/** The seed's settings: its README's command, and a faster one where start-up weighs more. */
const SETTINGS = [
  { articles: 5, workers: 5, rate: 3, burst: 1 },
  { articles: 20, workers: 5, rate: 50, burst: 5 },
];

function goBinary(): string | undefined {
  const out = join(tmpdir(), 'news-processor-go-seed', 'news-processor-go');
  mkdirSync(dirname(out), { recursive: true });
  try {
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: join(root, 'bench', 'go-seed'),
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, GOCACHE: process.env.GOCACHE ?? join(tmpdir(), 'news-processor-go-cache') },
    });
    return out;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Wall time of one run of `command` to its exit, ms; it must exit 0. */
function runOnce(command: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command[0]!, command.slice(1), { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`${command.join(' ')} exited ${code}`)),
    );
  });
}

const go = goBinary();
if (go === undefined) {
  console.log('Go is not installed here (apt-get install golang-go): the seed comparison needs it; nothing measured.');
  process.exit(0);
}
execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
const BIN = join(root, 'dist', 'cli', 'news-processor.js');

const rows: string[][] = [];
const figures: unknown[] = [];
for (const { articles, workers, rate, burst } of SETTINGS) {
  const ours = [process.execPath, BIN, `--articles=${articles}`, `--workers=${workers}`, `--rate=${rate}`, `--burst=${burst}`];
  const subjects = {
    go: [go, `-articles=${articles}`, `-workers=${workers}`, `-rate=${rate}`, `-burst=${burst}`, '-min-latency=1ms', '-max-latency=2ms'],
    ours: [...ours, '--min-latency=1ms', '--max-latency=2ms', '--quiet'],
    // Node's own start and exit, which any command in Node pays before its first line runs.
    node: [process.execPath, '-e', '0'],
  };
  const wall = { go: [] as number[], ours: [] as number[], node: [] as number[] };
  console.error(`--articles=${articles} --workers=${workers} --rate=${rate} --burst=${burst}: ${RUNS} rounds …`);
  for (let round = -1; round < RUNS; round++) {
    // Each round the other first: neither always runs on the machine the other just warmed.
    const order = round % 2 === 0 ? (['go', 'ours', 'node'] as const) : (['ours', 'go', 'node'] as const);
    for (const name of order) {
      const ms = await runOnce(subjects[name]);
      if (round >= 0) wall[name].push(ms);
    }
  }
  const floorMs = ((2 * articles - burst) / rate) * 1000;
  const goMs = median(wall.go);
  const oursMs = median(wall.ours);
  const nodeMs = median(wall.node);
  figures.push({ articles, workers, rate, burst, floorMs, goMs, oursMs, nodeMs, go: wall.go, ours: wall.ours, node: wall.node });
  rows.push([
    `--articles=${articles} --workers=${workers} --rate=${rate} --burst=${burst}`,
    `${floorMs.toFixed(0)} ms`,
    `${goMs.toFixed(0)} ms`,
    `${oursMs.toFixed(0)} ms`,
    formatRatio(oursMs / goMs),
    `${(oursMs - goMs).toFixed(0)} ms`,
    `${nodeMs.toFixed(0)} ms`,
  ]);
}

const table = markdownTable(
  ['settings (2 calls an article)', 'floor', 'Go, median', 'news-processor, median', '× Go', 'beyond Go', '`node -e 0`'],
  rows,
);
const heading = `The seed's command against the Go pipeline, ${RUNS} rounds, Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at the end:`;
console.log(heading);
console.log(table);
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, 'bench/results/seed.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, figures }, null, 2)}\n`,
);
writeFileSync(join(root, 'bench/results/seed.txt'), `${heading}\n${table}\n`);
