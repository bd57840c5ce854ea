// How long the compiled command takes to start: a one-article run on the simulated provider and
// `--help`, each against `node -e 0` (Node's own start-up) in the same rounds, run as a user runs
// them — a process each time, rounds interleaved so that a busy machine slows every command alike.
//
//   npm run bench:startup                              (BENCH_QUICK=1 for a shorter run)
//   npm run bench:startup -- --runs=40                 rounds (default 30)
//   npm run bench:startup -- --baseline=<commit>       that revision's command too, built under the system's temp folder
//
// Each figure is the median of the rounds: wall time from spawn to exit, and the CPU time the
// process used (user + system, as it reports at exit), which a shared machine disturbs less.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatRatio } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const option = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const RUNS = Number(option('runs') ?? (quick ? 10 : 30));
const baselineRev = option('baseline');
/** Reports the process's CPU time on fd 3 as it exits; preloaded in every command alike. */
const REPORT_CPU = join(root, 'bench', 'startup', 'report-cpu.cjs');

/** The one-article run: no limit, no simulated latency, the summary only. */
const RUN_FLAGS = ['--articles=1', '--rate=inf', '--min-latency=0', '--max-latency=0', '--quiet'];

interface Subject {
  readonly name: string;
  /** Arguments after `node`. */
  readonly args: readonly string[];
  readonly cwd: string;
}

/** The command a built tree runs: the bundle where the revision bundles it, else the compiled module. */
function binOf(tree: string): string {
  return existsSync(join(tree, 'scripts', 'build.mjs'))
    ? join('dist', 'cli', 'news-processor.js')
    : join('dist', 'cmd', 'news-processor.js');
}

/** The baseline revision's tree, extracted and built once per revision, as that revision builds itself. */
function baselineTree(rev: string): string {
  const tree = join(tmpdir(), `news-processor-startup-${rev.slice(0, 12)}`);
  if (!existsSync(join(tree, binOf(tree)))) {
    mkdirSync(tree, { recursive: true });
    execFileSync('sh', ['-c', `git -C "${root}" archive "${rev}" | tar -x -C "${tree}"`], { stdio: 'inherit' });
    if (!existsSync(join(tree, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
    if (existsSync(join(tree, 'scripts', 'build.mjs')))
      execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: tree, stdio: 'inherit' });
    else execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: tree, stdio: 'inherit' });
  }
  return tree;
}

const BIN = binOf(root);
const subjects: Subject[] = [
  { name: 'node -e 0', args: ['-e', '0'], cwd: root },
  { name: 'news-processor --help', args: [BIN, '--help'], cwd: root },
  { name: `news-processor ${RUN_FLAGS.join(' ')}`, args: [BIN, ...RUN_FLAGS], cwd: root },
];
if (baselineRev !== undefined) {
  const tree = baselineTree(baselineRev);
  subjects.push(
    { name: `${baselineRev.slice(0, 7)}: news-processor --help`, args: [binOf(tree), '--help'], cwd: tree },
    { name: `${baselineRev.slice(0, 7)}: news-processor ${RUN_FLAGS.join(' ')}`, args: [binOf(tree), ...RUN_FLAGS], cwd: tree },
  );
}

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One run of `subject` to its exit; it must exit 0. */
function runOnce(subject: Subject): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--require', REPORT_CPU, ...subject.args], {
      cwd: subject.cwd,
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let report = '';
    child.stdio[3]!.on('data', (chunk: Buffer) => (report += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) return reject(new Error(`${subject.name} exited ${code}`));
      const { user, system } = JSON.parse(report) as { user: number; system: number };
      resolve({ wallMs, cpuMs: (user + system) / 1000 });
    });
  });
}

const samples = new Map<Subject, Sample[]>(subjects.map((subject) => [subject, []]));
console.error(`start-up: ${subjects.length} commands, ${RUNS} rounds interleaved (and 2 to warm up) …`);
for (let round = -2; round < RUNS; round++) {
  // Each round in another order: no command always runs right after the same one.
  const order = subjects.map((_, index) => subjects[(index + Math.max(round, 0)) % subjects.length]!);
  for (const subject of order) {
    const sample = await runOnce(subject);
    if (round >= 0) samples.get(subject)!.push(sample);
  }
}

const node = subjects[0]!;
const figures = subjects.map((subject) => {
  const each = samples.get(subject)!;
  return {
    command: subject.name,
    wallMs: median(each.map((sample) => sample.wallMs)),
    cpuMs: median(each.map((sample) => sample.cpuMs)),
  };
});
const nodeFigures = figures[subjects.indexOf(node)]!;
const table = markdownTable(
  ['command', 'wall, median', '× node -e 0', 'CPU, median', '× node -e 0'],
  figures.map((figure) => [
    figure.command,
    `${figure.wallMs.toFixed(0)} ms`,
    formatRatio(figure.wallMs / nodeFigures.wallMs),
    `${figure.cpuMs.toFixed(0)} ms`,
    formatRatio(figure.cpuMs / nodeFigures.cpuMs),
  ]),
);
const heading = `Start-up, ${RUNS} rounds, Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at the end:`;
console.log(heading);
console.log(table);
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, 'bench/results/startup.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, baseline: baselineRev, results: figures }, null, 2)}\n`,
);
writeFileSync(join(root, 'bench/results/startup.txt'), `${heading}\n${table}\n`);
