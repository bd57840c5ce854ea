/**
 * The article queue (BullMQ) measured with the compiled command, as it is run: what the queue
 * costs per article, whether worker processes on one shared quota hold it at the server, and how
 * long the jobs of a worker killed with kill -9 take to come back.
 *
 *   npm run bench:queue [-- --rounds=3 --articles=5000 --quota-articles=1500 --recovery-articles=1500]
 *   (BENCH_QUICK=1 for a shorter run; --only=cost,quota,recovery runs some and writes no results file)
 *
 * Builds the command (`npm run build`) and starts its own redis-server on a free loopback
 * port (see test/redis/redis-server.ts); every process is `node dist/cli/news-processor.js …`.
 *
 * 1. Cost per article: a fresh queue of `--articles` generated articles, then 1, 2 or 4 worker
 *    processes (`--workers=20` each, an instant simulated provider, `--rate=inf`,
 *    `--exit-when-drained`) started together; wall time from the first one's spawn to the last
 *    one's exit, against one local run of the same articles with the same `--workers`, spawn to
 *    exit. `--rounds` rounds, the order reversed every other round, medians. Also the span over
 *    which the jobs were processed (first job's processedOn to last job's finishedOn, from Redis),
 *    against the local run's own elapsedMs: the cost per article without process start-up and the
 *    workers' drain check.
 * 2. The shared quota: 4 worker processes (`--workers=10`) at a shared `--rate=50 --burst=5`
 *    against one `serve --rate=50 --burst=5` (latency 10–50 ms), every worker on the same API key
 *    (serve's quota is per key). Arrivals are read from serve's request log (`time` − `ms`, as
 *    test/cli/limiter-over-http.test.ts reads them): achieved / configured rate, 429s, and the
 *    largest excess of the arrivals over the envelope burst + rate·t in any window. Then, for
 *    reference, the same articles from 4 local runs (`--redis`, `--workers=10`, a quarter of the
 *    articles each) on the same quota through the same Redis: the same processes without the
 *    queue. Meanwhile this process times 10 ms timers: how late they fire says how long a process
 *    ready to run waits for a core.
 * 3. Recovery from kill -9: 3 worker processes (`--workers=20`, `--lock-duration=2s
 *    --stalled-interval=1s`) against `serve --rate=inf` (latency 100–200 ms, so that the server
 *    counts every call made); once a third of the jobs are done, one is killed with SIGKILL — or,
 *    for reference, stopped with SIGTERM and `--grace=0s`, which puts its jobs back at once — or
 *    left alone. The killed worker's jobs are those active under its name (BullMQ's processedBy)
 *    once it is dead; when each was put back is read from the queue's event stream (`stalled`),
 *    when it finished from its job (finishedOn). `status --json` gives calls and repeatedCalls;
 *    serve's log gives the calls that were made.
 *
 * Prints a table for each and writes bench/results/queue.json and queue.txt.
 */

import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { RunSummary } from '../src/index.ts';
import { OpenAiProvider } from '../src/vendors/index.ts';
import { QUEUE_DEFAULTS, type QueueStatus } from '../src/queue/index.ts';
import { keyFingerprint } from '../src/server/server-metrics.ts';
import { type CliResult, type CliRun, linesOf, runCli, startCli } from '../test/cli/run-cli.ts';
import { startRedis } from '../test/redis/redis-server.ts';
import { builtinRequest } from '../test/requests.ts';
import { delay } from './lib/delay.ts';
import { formatRatio } from './lib/format.ts';
import { startServe } from './lib/serve.ts';
import { measureTimerReference } from './lib/timer-reference.ts';
import { analyseSchedule } from './lib/schedule.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const quick = process.env.BENCH_QUICK === '1';
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: quick ? '1' : '3' },
    articles: { type: 'string', default: quick ? '2000' : '5000' },
    'quota-articles': { type: 'string', default: quick ? '300' : '1500' },
    'recovery-articles': { type: 'string', default: quick ? '900' : '1500' },
    only: { type: 'string' },
  },
});
const SECTIONS = ['cost', 'quota', 'recovery'] as const;
const only = values.only?.split(',');
for (const name of only ?? []) {
  if (!(SECTIONS as readonly string[]).includes(name)) throw new TypeError(`Expected --only to list ${SECTIONS.join(', ')}, got ${name}`);
}
const runs = (section: (typeof SECTIONS)[number]) => only === undefined || only.includes(section);
const count = (name: 'rounds' | 'articles' | 'quota-articles' | 'recovery-articles'): number => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`Expected --${name} to be an integer >= 1, got ${values[name]}`);
  return value;
};
const ROUNDS = count('rounds');
const ARTICLES = count('articles');
const QUOTA_ARTICLES = count('quota-articles');
const RECOVERY_ARTICLES = count('recovery-articles');

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** The generated articles' seed, the same for the queue and the local run. */
const SEED = 7;
const WORKERS = 20;
const PROCESS_COUNTS = [1, 2, 4] as const;
const INSTANT = ['--rate=inf', '--min-latency=0ms', '--max-latency=0ms'];
const QUOTA = { rate: 50, burst: 5, processes: 4, workers: 10, latency: ['--min-latency=10ms', '--max-latency=50ms'] };
const RECOVERY = {
  processes: 3,
  workers: 20,
  lock: ['--lock-duration=2s', '--stalled-interval=1s'],
  lockMs: 2000,
  stalledMs: 1000,
  latency: ['--min-latency=100ms', '--max-latency=200ms'],
};
/** A run may take this long before it is taken for hung. */
const KILL_AFTER_MS = 300_000;

const output: string[] = [];
/** Progress on stderr, and into the .txt with the tables. */
function progress(line: string): void {
  console.error(line);
  output.push(line);
}
/** A table or result line on stdout, and into the .txt. */
function print(line: string): void {
  console.log(line);
  output.push(line);
}

const started = performance.now();
const loadAtStart = loadavg();
progress('building the command (npm run build) …');
await promisify(execFile)(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT });

const redis = await startRedis();
/** The bench's own connection: job times, the event stream, FLUSHALL between measurements. */
const inspect = new Redis(redis.url);
const children: CliRun[] = [];
/** Starts the compiled command, to be killed at the end if it is still running. */
function start(args: readonly string[], env?: Record<string, string>): CliRun {
  const run = startCli(args, { killAfterMs: KILL_AFTER_MS, ...(env === undefined ? {} : { env }) });
  children.push(run);
  return run;
}
/**
 * Where the queue is. The timeout is 10 s, not the default 2 s: the command's clock for opening the
 * queue also runs while it imports bullmq, which takes 1.5–2 s when a few processes start at once
 * on this loaded 2-core machine (Redis itself answers in milliseconds), and a worker would exit 2
 * saying Redis did not answer.
 */
const at = ['--redis', redis.url, '--redis-timeout=10s'];
let queues = 0;
const newQueue = (label: string) => `bench-${label}-${++queues}`;
/** A key of queue `name` (BullMQ's, under this project's prefix). */
const keyOf = (name: string, suffix: string) => `${QUEUE_DEFAULTS.prefix}{${name}}:${name}:${suffix}`;

/** The result of a command that exited 0 (or one of `codes`); else an error with its stderr and its summary's failures. */
function ok(result: CliResult, what: string, codes: readonly number[] = [0]): CliResult {
  if (result.timedOut || result.code === null || !codes.includes(result.code)) {
    const failures = /"failureReasons": (\{[^}]*\})/.exec(result.stdout)?.[1];
    throw new Error(
      `${what} exited ${result.code ?? result.signal}: ${result.stderr.trim()}${failures === undefined ? '' : ` ${failures}`}`,
    );
  }
  return result;
}

/** Redis's CPU seconds and commands processed so far (INFO cpu, INFO stats). */
async function redisWork(): Promise<{ cpuS: number; commands: number }> {
  const info = `${await inspect.info('cpu')}\n${await inspect.info('stats')}`;
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1]);
  return { cpuS: field('used_cpu_sys') + field('used_cpu_user'), commands: field('total_commands_processed') };
}

async function enqueue(queue: string, articles: number): Promise<void> {
  const result = ok(await runCli(['enqueue', '--queue', queue, ...at, `--articles=${articles}`, `--seed=${SEED}`, '--json']), 'enqueue');
  const { added } = JSON.parse(result.stdout) as { added: number };
  if (added !== articles) throw new Error(`enqueue added ${added} of ${articles}`);
}

async function statusOf(queue: string): Promise<QueueStatus> {
  return JSON.parse(ok(await runCli(['status', '--queue', queue, ...at, '--json']), 'status').stdout) as QueueStatus;
}

/** processedOn and finishedOn of every completed job, epoch ms. */
async function jobTimes(queue: string): Promise<Map<string, { processedOn: number; finishedOn: number }>> {
  const ids = await inspect.zrange(keyOf(queue, 'completed'), '0', '-1');
  const pipeline = inspect.pipeline();
  for (const id of ids) pipeline.hmget(keyOf(queue, id), 'processedOn', 'finishedOn');
  const replies = (await pipeline.exec()) ?? [];
  return new Map(
    ids.map((id, index) => {
      const [processedOn, finishedOn] = replies[index]![1] as [string, string];
      return [id, { processedOn: Number(processedOn), finishedOn: Number(finishedOn) }];
    }),
  );
}

/** serve, warmed up on a key of its own as a real provider is warm: its first requests compile schemas and code. */
async function startWarmServe(flags: readonly string[]): Promise<{ run: CliRun; url: string }> {
  const { run, url } = await startServe(flags, { killAfterMs: KILL_AFTER_MS });
  children.push(run);
  const warm = new OpenAiProvider({ apiKey: 'sk-bench-warm-up', baseUrl: `${url}/v1` });
  const request = builtinRequest('summarize', 'w', 'Warm', 'The server warms up. It is quick.');
  for (const task of ['summarize', 'sentiment', 'summarize', 'sentiment'] as const) {
    await warm.call({ ...request, task });
    await delay(100);
  }
  return { run, url };
}

/** The requests serve logged for `key`, by arrival: the log's `time` (when answered) less its `ms`. */
function arrivalsOf(serveStderr: string, key: string): { atMs: number; status: number }[] {
  const fingerprint = keyFingerprint(key);
  return linesOf(serveStderr)
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { key?: string; time: number; ms: number; status: number })
    .filter((line) => line.key === fingerprint)
    .map(({ time, ms, status }) => ({ atMs: time - ms, status }))
    .sort((a, b) => a.atMs - b.atMs);
}

/** Failure reasons summed over the processes: `reason × n, …`. */
function failureText(reasons: readonly Readonly<Record<string, number>>[]): string {
  const total = new Map<string, number>();
  for (const r of reasons) for (const [reason, n] of Object.entries(r)) total.set(reason, (total.get(reason) ?? 0) + n);
  return [...total].map(([reason, n]) => `${reason} × ${n}`).join(', ');
}

const summaryOf = (result: CliResult) => JSON.parse(result.stdout) as RunSummary & { returned: number };
const f = (x: number, digits = 2) => x.toFixed(digits);
const int = (x: number) => Math.round(x).toLocaleString('en');

// ---------------------------------------------------------------- 1. cost per article

interface CostRound {
  wallMs: number;
  /** Processing span: the queue's first processedOn to last finishedOn; the local run's elapsedMs. */
  spanMs: number;
  /** Articles each worker process took. */
  perProcess: number[];
  /** Redis's CPU time and commands per article while the workers ran (0 for the local run). */
  redisCpuUsPerArticle: number;
  redisCommandsPerArticle: number;
}
type Subject = 'local' | `${number} worker`;

async function runLocal(): Promise<CostRound> {
  const startMs = performance.now();
  const result = ok(
    await runCli([`--articles=${ARTICLES}`, `--seed=${SEED}`, ...INSTANT, `--workers=${WORKERS}`, '--json']),
    'the local run',
  );
  const wallMs = performance.now() - startMs;
  const summary = summaryOf(result);
  if (summary.succeeded !== ARTICLES) throw new Error(`the local run: ${summary.succeeded} of ${ARTICLES} succeeded`);
  return { wallMs, spanMs: summary.elapsedMs, perProcess: [ARTICLES], redisCpuUsPerArticle: 0, redisCommandsPerArticle: 0 };
}

async function runQueue(processes: number): Promise<CostRound> {
  const queue = newQueue(`cost-${processes}`);
  await enqueue(queue, ARTICLES);
  const args = ['worker', '--queue', queue, ...at, ...INSTANT, `--seed=${SEED}`, `--workers=${WORKERS}`, '--exit-when-drained', '--json'];
  const before = await redisWork();
  const startMs = performance.now();
  const workers = Array.from({ length: processes }, () => start(args));
  const results = await Promise.all(workers.map((run) => run.result));
  const wallMs = performance.now() - startMs;
  const after = await redisWork();
  const summaries = results.map((result) => summaryOf(ok(result, 'a worker')));
  const status = await statusOf(queue);
  if (status.completed !== ARTICLES || status.failed !== 0 || status.repeatedCalls !== 0) {
    throw new Error(`queue ${queue}: ${JSON.stringify(status)}`);
  }
  const times = [...(await jobTimes(queue)).values()];
  const spanMs = Math.max(...times.map((t) => t.finishedOn)) - Math.min(...times.map((t) => t.processedOn));
  await inspect.flushall();
  return {
    wallMs,
    spanMs,
    perProcess: summaries.map((s) => s.succeeded),
    redisCpuUsPerArticle: ((after.cpuS - before.cpuS) * 1e6) / ARTICLES,
    redisCommandsPerArticle: (after.commands - before.commands) / ARTICLES,
  };
}

async function measureCost(): Promise<{ table: string[]; json: unknown }> {
  const subjects: Subject[] = ['local', ...PROCESS_COUNTS.map((n) => `${n} worker` as const)];
  const cost = Object.fromEntries(subjects.map((s) => [s, [] as CostRound[]])) as Record<Subject, CostRound[]>;
  progress(`1. cost per article: ${int(ARTICLES)} articles, --workers=${WORKERS}, instant provider, ${ROUNDS} rounds`);
  // A warm-up, so that the first round does not pay for cold caches (the first enqueue warms bullmq's).
  await runLocal();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? subjects : [...subjects].reverse();
    for (const subject of order) {
      const figures = subject === 'local' ? await runLocal() : await runQueue(Number.parseInt(subject, 10));
      cost[subject].push(figures);
      progress(
        `  round ${round + 1}, ${subject === 'local' ? 'local run' : `${subject} process${subject.startsWith('1 ') ? '' : 'es'}`}: ` +
          `${f(figures.wallMs / 1000, 3)} s wall (${int((ARTICLES * 1000) / figures.wallMs)}/s), ` +
          `${f(figures.spanMs / 1000, 3)} s processing (${int((ARTICLES * 1000) / figures.spanMs)}/s); taken ${figures.perProcess.join(' / ')}` +
          (subject === 'local'
            ? ''
            : `; Redis ${f(figures.redisCpuUsPerArticle, 0)} µs CPU, ${f(figures.redisCommandsPerArticle, 1)} commands per article`),
      );
    }
  }
  const medianOf = (subject: Subject, field: Exclude<keyof CostRound, 'perProcess'>) => median(cost[subject].map((r) => r[field]));
  const rate = (subject: Subject, field: 'wallMs' | 'spanMs') => (ARTICLES * 1000) / medianOf(subject, field);
  const rows = subjects.map((subject) => [
    subject === 'local' ? `local run (--workers=${WORKERS})` : `queue, ${subject.replace(' worker', '')} × worker --workers=${WORKERS}`,
    `${f(medianOf(subject, 'wallMs') / 1000, 2)} s`,
    int(rate(subject, 'wallMs')),
    formatRatio(rate(subject, 'wallMs') / rate('local', 'wallMs')),
    `${f(medianOf(subject, 'spanMs') / 1000, 2)} s`,
    int(rate(subject, 'spanMs')),
    formatRatio(rate(subject, 'spanMs') / rate('local', 'spanMs')),
    subject === 'local'
      ? ''
      : `${f(medianOf(subject, 'redisCpuUsPerArticle'), 0)} µs, ${f(medianOf(subject, 'redisCommandsPerArticle'), 1)}`,
  ]);
  const table = [
    `1. cost per article: ${int(ARTICLES)} generated articles, an instant simulated provider (${INSTANT.join(' ')}), ` +
      `medians of ${ROUNDS} interleaved rounds`,
    markdownTable(
      [
        'run',
        'wall, spawn to last exit',
        'articles/s',
        'vs local',
        'processing span',
        'articles/s',
        'vs local',
        'Redis CPU, commands per article',
      ],
      rows,
    ),
  ];
  const medians = Object.fromEntries(
    subjects.map((s) => [
      s,
      {
        wallMs: medianOf(s, 'wallMs'),
        spanMs: medianOf(s, 'spanMs'),
        articlesPerSecond: rate(s, 'wallMs'),
        ratioToLocal: rate(s, 'wallMs') / rate('local', 'wallMs'),
        processingArticlesPerSecond: rate(s, 'spanMs'),
        processingRatioToLocal: rate(s, 'spanMs') / rate('local', 'spanMs'),
      },
    ]),
  );
  return { table, json: { articles: ARTICLES, workers: WORKERS, rounds: ROUNDS, seed: SEED, medians, runs: cost } };
}

// ---------------------------------------------------------------- 2. the shared quota

type QuotaSubject = 'queue' | 'local';

/** How late 10 ms timers fire in this (mostly idle) process while `running` runs: how long a ready process waits for a core. */
async function timerLatenessWhile(running: Promise<unknown>): Promise<{ p99Ms: number; maxMs: number }> {
  let done = false;
  void running.finally(() => (done = true)).catch(() => {});
  const chunks = [];
  while (!done) chunks.push(await measureTimerReference(100, 10));
  return { p99Ms: median(chunks.map((c) => c.latenessP99Ms)), maxMs: Math.max(...chunks.map((c) => c.latenessMaxMs)) };
}

/**
 * The queue's worker processes, or for reference as many local runs (each its share of the
 * articles) on the same quota through the same Redis, against `serve`, every call on one API key;
 * what serve saw.
 */
async function runQuota(subject: QuotaSubject, serveUrl: string, serve: CliRun) {
  const key = `sk-bench-queue-shared-${subject}`;
  const client = [...at, '--provider=openai', `--base-url=${serveUrl}/v1`, `--rate=${QUOTA.rate}`, `--burst=${QUOTA.burst}`, '--json'];
  const env = { OPENAI_API_KEY: key };
  const queue = newQueue('quota');
  let workers: CliRun[];
  const startMs = performance.now();
  if (subject === 'queue') {
    await enqueue(queue, QUOTA_ARTICLES);
    const args = ['worker', '--queue', queue, ...client, `--workers=${QUOTA.workers}`, '--exit-when-drained'];
    workers = Array.from({ length: QUOTA.processes }, () => start(args, env));
  } else {
    // As many local runs, each of its share of the articles: the same processes on the same quota, without the queue.
    const share = (i: number) =>
      Math.floor((QUOTA_ARTICLES * (i + 1)) / QUOTA.processes) - Math.floor((QUOTA_ARTICLES * i) / QUOTA.processes);
    workers = Array.from({ length: QUOTA.processes }, (_, i) =>
      start([...client, `--articles=${share(i)}`, `--workers=${QUOTA.workers}`], env),
    );
  }
  const all = Promise.all(workers.map((run) => run.result));
  const timers = await timerLatenessWhile(all);
  const results = await all;
  const wallMs = performance.now() - startMs;
  // Exit 1: some article failed (its calls ran out of time or attempts): counted, not a broken run.
  const summaries = results.map((result) =>
    summaryOf(ok(result, `${subject === 'queue' ? 'a worker' : 'a local run'} on the shared quota`, [0, 1])),
  );
  const succeeded = summaries.reduce((sum, s) => sum + s.succeeded, 0);
  const failed = summaries.reduce((sum, s) => sum + s.failed, 0);
  if (subject === 'queue') {
    const status = await statusOf(queue);
    if (status.completed !== succeeded || status.failed !== failed) throw new Error(`queue ${queue}: ${JSON.stringify(status)}`);
  }
  if (succeeded + failed !== QUOTA_ARTICLES) throw new Error(`${subject}: ${succeeded} + ${failed} of ${QUOTA_ARTICLES} articles`);
  await inspect.flushall();
  // serve logs a request once it has answered it: give the last answers time to be logged.
  await delay(200);
  const arrivals = arrivalsOf(serve.stderr(), key);
  const schedule = analyseSchedule(
    arrivals.map((a) => a.atMs),
    QUOTA.rate,
    QUOTA.burst,
  );
  return {
    succeeded,
    failed,
    failureReasons: summaries.map((s) => s.failureReasons),
    arrivals: arrivals.length,
    refusedAtServer: arrivals.filter((a) => a.status === 429).length,
    otherStatuses: arrivals.filter((a) => a.status !== 200 && a.status !== 429).length,
    rateLimitedAtClients: summaries.reduce((sum, s) => sum + s.rateLimited, 0),
    retries: summaries.reduce((sum, s) => sum + s.retries, 0),
    spanMs: arrivals.at(-1)!.atMs - arrivals[0]!.atMs,
    floorMs: ((arrivals.length - QUOTA.burst) / QUOTA.rate) * 1000,
    achievedRatio: schedule.rateRatio,
    wallMs,
    wallRatio: (arrivals.length * 1000) / wallMs / QUOTA.rate,
    envelopeExcess: schedule.envelopeExcess,
    maxInOneSecond: schedule.maxInOneSecond,
    perProcessCalls: summaries.map((s) => s.calls),
    timerLatenessMs: timers,
  };
}

async function measureQuota(): Promise<{ table: string[]; json: unknown }> {
  progress(
    `2. shared quota: ${QUOTA.processes} workers at a shared --rate=${QUOTA.rate} --burst=${QUOTA.burst} against serve ` +
      `--rate=${QUOTA.rate} --burst=${QUOTA.burst}, ${int(QUOTA_ARTICLES)} articles; then as many local runs for reference`,
  );
  const serve = await startWarmServe([`--rate=${QUOTA.rate}`, `--burst=${QUOTA.burst}`, ...QUOTA.latency]);
  const runsBy: Partial<Record<QuotaSubject, Awaited<ReturnType<typeof runQuota>>>> = {};
  try {
    for (const subject of ['queue', 'local'] as const) {
      const r = await runQuota(subject, serve.url, serve.run);
      runsBy[subject] = r;
      progress(
        `  ${subject === 'queue' ? `${QUOTA.processes} workers` : `${QUOTA.processes} local runs`}: ${r.arrivals} calls at serve over ${f(r.spanMs / 1000, 3)} s ` +
          `(floor ${f(r.floorMs / 1000, 3)} s), ${r.refusedAtServer} 429s, envelope excess ${f(r.envelopeExcess, 3)}; ` +
          `calls per process ${r.perProcessCalls.join(' / ')}; timers here late by p99 ${f(r.timerLatenessMs.p99Ms, 1)} ms, max ${f(r.timerLatenessMs.maxMs, 0)} ms`,
      );
    }
  } finally {
    serve.run.send('SIGTERM');
    await serve.run.result;
  }
  const queue = runsBy.queue!;
  const local = runsBy.local!;
  const both = (cell: (r: typeof queue) => string) => [cell(queue), cell(local)];
  const table = [
    `2. ${QUOTA.processes} worker processes (--workers=${QUOTA.workers}) on one shared --rate=${QUOTA.rate} --burst=${QUOTA.burst}, ` +
      `serve --rate=${QUOTA.rate} --burst=${QUOTA.burst} ${QUOTA.latency.join(' ')}, one API key, ${int(QUOTA_ARTICLES)} articles; ` +
      `after it, for reference, ${QUOTA.processes} local runs (--redis, --workers=${QUOTA.workers}, a quarter of the articles each) on the same quota`,
    markdownTable(
      ['figure', `queue, ${QUOTA.processes} workers`, `${QUOTA.processes} local runs, for reference`, 'target'],
      [
        [
          'articles succeeded / failed',
          ...both((r) => `${r.succeeded} / ${r.failed}${r.failed === 0 ? '' : ` (${failureText(r.failureReasons)})`}`),
          `${QUOTA_ARTICLES} / 0`,
        ],
        [
          'calls at serve',
          ...both((r) => `${r.arrivals}${r.perProcessCalls.length > 1 ? ` (${r.perProcessCalls.join(' / ')})` : ''}`),
          `${2 * QUOTA_ARTICLES}`,
        ],
        [
          'achieved / configured, over the arrivals',
          ...both((r) => `${f(r.achievedRatio, 4)} (${f(r.spanMs / 1000, 2)} s, floor ${f(r.floorMs / 1000, 2)} s)`),
          '≥ 0.99',
        ],
        ['achieved / configured, over the wall time', ...both((r) => `${f(r.wallRatio, 4)} (${f(r.wallMs / 1000, 2)} s)`), ''],
        [
          '429s at serve (seen by the clients, retries)',
          ...both((r) => `${r.refusedAtServer} (${r.rateLimitedAtClients}, ${r.retries})`),
          '≤ 1',
        ],
        ['envelope excess, arrivals over burst + rate·t', ...both((r) => f(r.envelopeExcess, 3)), '≤ 1'],
        ['most arrivals in any 1 s', ...both((r) => String(r.maxInOneSecond)), `≤ ${QUOTA.rate + QUOTA.burst}`],
        [
          '10 ms timers in the bench process, late by p99 / max',
          ...both((r) => `${f(r.timerLatenessMs.p99Ms, 1)} / ${f(r.timerLatenessMs.maxMs, 0)} ms`),
          '',
        ],
      ],
    ),
  ];
  return { table, json: { ...QUOTA, articles: QUOTA_ARTICLES, queue, local } };
}

// ---------------------------------------------------------------- 3. recovery from kill -9

type Stop = 'none' | 'SIGKILL' | 'SIGTERM';
interface Recovery {
  stop: Stop;
  /** From the first spawn to the last job's finishedOn. */
  drainMs: number;
  /** From the first spawn to the last survivor's exit. */
  wallMs: number;
  /** From the first spawn to the stop. */
  stopAtMs?: number;
  /** Jobs active under the stopped worker's name when it stopped. */
  held?: number;
  /** From the stop to the first and the last of them put back (stalled events; SIGKILL only). */
  putBackMs?: [number, number];
  /** From the stop to the last of them finished. */
  recoveredMs?: number;
  /** The calls the queue had counted for the jobs the killed worker held, once it was dead (SIGKILL only). */
  countedForHeld?: number;
  status: QueueStatus;
  /** Requests serve answered for this run's key: the calls that were made. */
  callsAtServer: number;
}

/** When each of `held` was put back by a stalled check: BullMQ's `stalled` events, read from the queue's event stream as they come. */
async function stalledEvents(queue: string, held: readonly string[], fromMs: number, done: () => boolean): Promise<Map<string, number>> {
  const watch = new Redis(redis.url);
  const putBack = new Map<string, number>();
  try {
    let last = `${fromMs}-0`;
    while (putBack.size < held.length && !done()) {
      const reply = (await watch.xread('COUNT', 1000, 'BLOCK', 200, 'STREAMS', keyOf(queue, 'events'), last)) as
        | [string, [string, string[]][]][]
        | null;
      for (const [id, fields] of reply?.[0]?.[1] ?? []) {
        last = id;
        const event = new Map<string, string>();
        for (let i = 0; i < fields.length; i += 2) event.set(fields[i]!, fields[i + 1]!);
        const jobId = event.get('jobId')!;
        if (event.get('event') === 'stalled' && held.includes(jobId)) putBack.set(jobId, Number(id.split('-')[0]));
      }
    }
  } finally {
    watch.disconnect();
  }
  return putBack;
}

async function runRecovery(stop: Stop, serveUrl: string, serve: CliRun, index: number): Promise<Recovery> {
  const queue = newQueue(`recovery-${stop}`);
  const key = `sk-bench-queue-recovery-${index}`;
  await enqueue(queue, RECOVERY_ARTICLES);
  const args = [
    'worker',
    '--queue',
    queue,
    ...at,
    '--provider=openai',
    `--base-url=${serveUrl}/v1`,
    '--rate=inf',
    `--workers=${RECOVERY.workers}`,
    ...RECOVERY.lock,
    ...(stop === 'SIGTERM' ? ['--grace=0s'] : []),
    '--exit-when-drained',
    '--json',
  ];
  const startEpochMs = Date.now();
  const startMs = performance.now();
  const [victim, ...survivors] = Array.from({ length: RECOVERY.processes }, () => start(args, { OPENAI_API_KEY: key })) as [
    CliRun,
    ...CliRun[],
  ];
  const finished = Promise.all(survivors.map((run) => run.result));
  const figures: Partial<Recovery> = {};
  if (stop !== 'none') {
    while ((await inspect.zcard(keyOf(queue, 'completed'))) < RECOVERY_ARTICLES / 3) await delay(20);
    // The name a worker gives BullMQ (its jobs' processedBy): host:pid.
    const name = `${hostname()}:${victim.child.pid}`;
    const heldBy = async () => {
      const active = await inspect.lrange(keyOf(queue, 'active'), 0, -1);
      const owners = await Promise.all(active.map((id) => inspect.hget(keyOf(queue, id), 'pb')));
      return active.filter((_, i) => owners[i] === name);
    };
    let held: string[];
    let stopEpochMs: number;
    if (stop === 'SIGKILL') {
      stopEpochMs = Date.now();
      victim.send('SIGKILL');
      await victim.result;
      // Dead now: what is active under its name is what it held (its locks last a second or more yet).
      held = await heldBy();
      // The calls counted for them (the queue's count per job): what repeatedCalls should come to.
      const counted = await Promise.all(held.map((id) => inspect.hget(keyOf(queue, 'np:calls'), id)));
      figures.countedForHeld = counted.reduce((sum, n) => sum + Number(n ?? 0), 0);
      const putBack = await stalledEvents(queue, held, stopEpochMs, () => survivors.every((run) => run.child.exitCode !== null));
      if (putBack.size < held.length) throw new Error(`${held.length - putBack.size} of the killed worker's jobs were never put back`);
      const times = [...putBack.values()];
      figures.putBackMs = [Math.min(...times) - stopEpochMs, Math.max(...times) - stopEpochMs];
    } else {
      // Alive: what it holds now it puts back on the signal.
      held = await heldBy();
      stopEpochMs = Date.now();
      victim.send('SIGTERM');
      await victim.result;
    }
    figures.stopAtMs = stopEpochMs - startEpochMs;
    figures.held = held.length;
    await finished;
    const times = await jobTimes(queue);
    figures.recoveredMs = Math.max(...held.map((id) => times.get(id)?.finishedOn ?? Number.NaN)) - stopEpochMs;
  }
  const results = await finished;
  const wallMs = performance.now() - startMs;
  for (const result of results) ok(result, 'a surviving worker');
  const status = await statusOf(queue);
  if (status.completed !== RECOVERY_ARTICLES || status.failed !== 0) throw new Error(`queue ${queue}: ${JSON.stringify(status)}`);
  const times = [...(await jobTimes(queue)).values()];
  await inspect.flushall();
  return {
    stop,
    drainMs: Math.max(...times.map((t) => t.finishedOn)) - startEpochMs,
    wallMs,
    ...figures,
    status,
    callsAtServer: arrivalsOf(serve.stderr(), key).length,
  };
}

async function measureRecovery(): Promise<{ table: string[]; json: unknown }> {
  progress(
    `3. recovery: ${RECOVERY.processes} workers (--workers=${RECOVERY.workers} ${RECOVERY.lock.join(' ')}), ${int(RECOVERY_ARTICLES)} articles, ` +
      `serve --rate=inf ${RECOVERY.latency.join(' ')}`,
  );
  const serve = await startWarmServe(['--rate=inf', ...RECOVERY.latency]);
  const recoveries: Recovery[] = [];
  for (const [index, stop] of (['none', 'SIGKILL', 'SIGTERM'] as const).entries()) {
    const r = await runRecovery(stop, serve.url, serve.run, index);
    recoveries.push(r);
    progress(
      `  ${stop === 'none' ? 'no stop' : stop}: drained in ${f(r.drainMs / 1000, 2)} s` +
        (r.held === undefined
          ? ''
          : `; stopped at ${f(r.stopAtMs! / 1000, 2)} s holding ${r.held} jobs, the last finished ${f(r.recoveredMs! / 1000, 2)} s later`) +
        (r.countedForHeld === undefined ? '' : `; ${r.countedForHeld} calls counted for them when it died`) +
        `; calls ${r.status.calls} counted (${r.status.repeatedCalls} repeated), ${r.callsAtServer} at serve`,
    );
  }
  serve.run.send('SIGTERM');
  ok(await serve.run.result, 'serve');
  const bound = `${f(RECOVERY.lockMs / 2000, 1)}–${f((RECOVERY.lockMs + RECOVERY.stalledMs) / 1000, 1)} s`;
  const calls = 2 * RECOVERY_ARTICLES;
  const table = [
    `3. ${RECOVERY.processes} worker processes (--workers=${RECOVERY.workers} ${RECOVERY.lock.join(' ')}), ${int(RECOVERY_ARTICLES)} articles ` +
      `(${calls} calls), serve --rate=inf ${RECOVERY.latency.join(' ')}; one stopped once a third were done`,
    markdownTable(
      [
        'stop',
        'drained in',
        'vs no stop',
        'stopped at, jobs held',
        'held jobs put back after',
        'last held job finished after',
        'status: calls, repeatedCalls',
        'calls at serve (beyond those needed)',
        'counted, neither needed nor repeated',
      ],
      recoveries.map((r) => [
        r.stop === 'none' ? 'none' : r.stop === 'SIGKILL' ? 'kill -9' : 'SIGTERM, --grace=0s',
        `${f(r.drainMs / 1000, 2)} s`,
        r.stop === 'none' ? '' : `+${f((r.drainMs - recoveries[0]!.drainMs) / 1000, 2)} s`,
        r.held === undefined ? '' : `${f(r.stopAtMs! / 1000, 2)} s, ${r.held}`,
        r.putBackMs === undefined
          ? r.stop === 'SIGTERM'
            ? 'at once'
            : ''
          : `${f(r.putBackMs[0] / 1000, 2)}–${f(r.putBackMs[1] / 1000, 2)} s (expected ${bound})`,
        r.recoveredMs === undefined ? '' : `${f(r.recoveredMs / 1000, 2)} s`,
        `${r.status.calls}, ${r.status.repeatedCalls}`,
        `${r.callsAtServer} (+${r.callsAtServer - calls})`,
        String(r.status.calls - r.status.repeatedCalls - calls),
      ]),
    ),
    'With the defaults (--lock-duration=30s --stalled-interval=30s; stated, not run) the same bound is 15–60 s: ' +
      'a lock renewed every half of its duration runs out 15–30 s after the kill, and a stalled check every 30 s finds it.',
  ];
  return { table, json: { ...RECOVERY, articles: RECOVERY_ARTICLES, runs: recoveries } };
}

// ---------------------------------------------------------------- the run

try {
  const measured: Record<string, { table: string[]; json: unknown }> = {};
  if (runs('cost')) measured.cost = await measureCost();
  if (runs('quota')) measured.quota = await measureQuota();
  if (runs('recovery')) measured.recovery = await measureRecovery();
  const loadAtEnd = loadavg();
  const load = (l: number[]) => l.map((x) => f(x)).join(', ');
  print('');
  print(
    `load average (1, 5, 15 min) ${load(loadAtStart)} at the start, ${load(loadAtEnd)} at the end; 2 cores, so 4 worker processes ` +
      `(and Redis, and serve) share 2; ${f((performance.now() - started) / 1000, 0)} s`,
  );
  for (const { table } of Object.values(measured)) {
    print('');
    for (const line of table) print(line);
  }
  if (only === undefined) {
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    const json = Object.fromEntries(Object.entries(measured).map(([name, { json }]) => [name, json]));
    writeFileSync(
      join(ROOT, 'bench/results/queue.json'),
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, loadAverage: { start: loadAtStart, end: loadAtEnd }, ...json }, null, 2)}\n`,
    );
    writeFileSync(join(ROOT, 'bench/results/queue.txt'), `${output.join('\n')}\n`);
  }
} finally {
  for (const run of children) run.send('SIGKILL');
  inspect.disconnect();
  await redis.stop();
}
