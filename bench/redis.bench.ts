/**
 * The quota shared through Redis: what a shared check costs, next to rate-limiter-flexible's
 * RateLimiterRedis on the same Redis in the same run, against a Redis Cluster as against one node,
 * and against a baseline revision of ours; and how exactly three processes share a quota.
 *
 *   npm run bench:redis [-- --duration=2s --rounds=3 --baseline=<commit>]
 *
 * Starts its own redis-server on a free loopback port, and a three-master Redis Cluster. For 1 and
 * 4 client processes, each subject is measured `--rounds` times, in an order that turns each round:
 * latency (one call at a time per process, every call timed: the time a call spends on the limiter
 * when the quota has room) and throughput (16 calls in flight per process). The subjects:
 * RedisLimits on one node, on the cluster (a quota whose slot the second node serves), and as the
 * baseline revision had it (`--baseline`, default the last one before this benchmark compared
 * it: its sources checked out under the system's temp folder with `git archive`, node_modules
 * linked, its own bench/redis/client.ts run), and RateLimiterRedis on a plain ioredis client and
 * on an auto-pipelined one. Then, `--rounds` times, three processes share a quota of 100/s, burst
 * 5, against a loopback server that counts the calls (see test/redis/shared-quota.ts): the envelope
 * is judged by when each call was sent, on a clock every process of the machine shares, allowing
 * one call of jitter; what the server read of the arrivals is shown too.
 * Prints the tables and writes bench/results/redis.json.
 */

import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { parseDuration } from '../src/mechanisms.ts';
import { namesOnEveryNode, slotRanges } from '../test/redis/cluster-slot.ts';
import { startRedis, startRedisCluster } from '../test/redis/redis-server.ts';
import { envelopeExcess, runSharedQuota, strictShortfall } from '../test/redis/shared-quota.ts';
import { markdownTable } from './lib/table.ts';
import { median, quantile } from './lib/stats.ts';
import type { ClientReport, ClientSettings, Subject } from './redis/client.ts';

/** The last revision before the reservation's costs were cut: what the baseline column shows by default. */
const DEFAULT_BASELINE = '5d0c13d';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '2s' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string', default: DEFAULT_BASELINE },
  },
});
const parsedMs = parseDuration(values.duration);
if (parsedMs === undefined || parsedMs <= 0) throw new TypeError(`Expected --duration to be a duration > 0, got ${values.duration}`);
const durationMs: number = parsedMs;
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new TypeError(`Expected --rounds to be an integer >= 1, got ${values.rounds}`);

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLIENT = 'bench/redis/client.ts';
const IN_FLIGHT = 16;
const TARGET = { latencyP50Ms: 0.5, achievedRatio: 0.99 };

/** The baseline's sources, extracted once per revision (git archive: no worktree registered), node_modules linked. */
function baselineTree(rev: string): { dir: string; commit: string } {
  const commit = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `news-processor-baseline-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, CLIENT))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: ROOT });
  }
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return { dir, commit };
}

const baseline = baselineTree(values.baseline!);
const redis = await startRedis();
const cluster = await startRedisCluster();
/** For Redis's own figures (INFO commandstats): the single node, and the cluster node that serves the cluster's quota. */
const inspect = new Redis(redis.url);
const clusterQuotaNode = cluster.nodes[1]!;
const inspectCluster = new Redis(clusterQuotaNode.url);
const clusterSlots = slotRanges(await inspectCluster.cluster('SLOTS'));

function fresh(n: number): string {
  return `bench-${n}`;
}

/** A column of the tables: which client runs, from which tree, against which Redis. */
interface Column {
  readonly label: string;
  readonly subject: Subject;
  readonly tree: string;
  readonly url: string;
  /** The server whose INFO commandstats counts the column's scripts. */
  readonly inspect: Redis;
  /** The quota key of the `n`th measurement: a fresh quota each time. */
  readonly keyOf: (n: number) => string;
}

const COLUMNS: readonly Column[] = [
  { label: 'RedisLimits', subject: 'RedisLimits', tree: ROOT, url: redis.url, inspect, keyOf: fresh },
  {
    label: `RedisLimits at ${baseline.commit.slice(0, 7)}`,
    subject: 'RedisLimits',
    tree: baseline.dir,
    url: redis.url,
    inspect,
    keyOf: fresh,
  },
  {
    label: 'RedisLimits, cluster',
    subject: 'RedisLimits',
    tree: ROOT,
    url: cluster.url,
    inspect: inspectCluster,
    // A quota the second node serves: the client is given the first, and follows the slot.
    keyOf: (n) => namesOnEveryNode(clusterSlots, `bench-${n}`).get(clusterQuotaNode.port)!,
  },
  { label: 'RateLimiterRedis', subject: 'RateLimiterRedis', tree: ROOT, url: redis.url, inspect, keyOf: fresh },
  {
    label: 'RateLimiterRedis, auto-pipelined',
    subject: 'RateLimiterRedis, auto-pipelined',
    tree: ROOT,
    url: redis.url,
    inspect,
    keyOf: fresh,
  },
];
const THEIRS = 'RateLimiterRedis';
let measurement = 0;

/** Runs `processes` clients of a column at once (started together) and gathers their reports. */
async function measure(column: Column, processes: number, mode: ClientSettings['mode']): Promise<ClientReport[]> {
  const key = column.keyOf(++measurement);
  const settings: ClientSettings = { url: column.url, subject: column.subject, mode, durationMs, inFlight: IN_FLIGHT, key };
  const children = Array.from({ length: processes }, () =>
    fork(join(column.tree, CLIENT), [JSON.stringify(settings)], { cwd: column.tree, execArgv: ['--import', 'tsx'] }),
  );
  try {
    const next = (child: (typeof children)[number]) =>
      new Promise<unknown>((resolve, reject) => {
        child.once('message', resolve);
        // A client that ends well may be seen to exit before its last message is read.
        child.once('exit', (code, signal) => {
          if (code !== 0) reject(new Error(`a ${column.label} client exited (${code ?? signal})`));
        });
      });
    await Promise.all(children.map(next));
    const reports = children.map(next) as Promise<ClientReport>[];
    for (const child of children) child.send('go');
    return await Promise.all(reports);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

interface Figures {
  callsPerSecond: number[];
  /** Redis's own time per script run (INFO commandstats), in µs. */
  redisUsPerCall: number[];
  p50Ms: number[];
  p99Ms: number[];
}

const results: Record<string, Record<string, Figures>> = {};
try {
  for (const processes of [1, 4]) {
    const figures = Object.fromEntries(
      COLUMNS.map((column) => [column.label, { callsPerSecond: [], redisUsPerCall: [], p50Ms: [], p99Ms: [] } as Figures]),
    );
    for (let round = 0; round < rounds; round++) {
      // Each round starts one column further on: no column is always first, or always after the same one.
      const order = COLUMNS.map((_, index) => COLUMNS[(index + round) % COLUMNS.length]!);
      for (const column of order) {
        const latency = (await measure(column, processes, 'latency')).flatMap((report) => report.latenciesMs);
        figures[column.label]!.p50Ms.push(quantile(latency, 0.5));
        figures[column.label]!.p99Ms.push(quantile(latency, 0.99));
        await column.inspect.config('RESETSTAT');
        const throughput = await measure(column, processes, 'throughput');
        figures[column.label]!.callsPerSecond.push(throughput.reduce((sum, r) => sum + (r.calls * 1000) / r.elapsedMs, 0));
        figures[column.label]!.redisUsPerCall.push(
          Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(await column.inspect.info('commandstats'))?.[1]),
        );
      }
    }
    results[`${processes} process${processes > 1 ? 'es' : ''}`] = figures;
  }

  const rate = 100;
  const burst = 5;
  const precision = [];
  for (let round = 0; round < rounds; round++) {
    const shared = await runSharedQuota({
      redisUrl: redis.url,
      processes: 3,
      articlesPerProcess: 100,
      workersPerProcess: 4,
      rate,
      burst,
      serverQuota: { rate, burst },
      quotaKey: `bench-precision-${round}`,
    });
    const calls = shared.sentAtMs.length;
    const spanMs = shared.sentAtMs.at(-1)! - shared.sentAtMs[0]!;
    precision.push({
      calls,
      spanMs,
      floorMs: ((calls - burst) / rate) * 1000,
      achievedRatio: ((calls - burst) * 1000) / spanMs / rate,
      envelopeExcessSent: envelopeExcess(shared.sentAtMs, rate, burst),
      envelopeExcessArrived: envelopeExcess(shared.arrivedAtMs, rate, burst),
      strictShortfall: strictShortfall(shared.sentAtMs, rate, burst),
      refused: shared.refused,
      failed: shared.summaries.reduce((sum, summary) => sum + summary.failed, 0),
    });
  }

  const f = (x: number, digits = 2) => x.toFixed(digits);
  const rows: string[][] = [];
  for (const [label, figures] of Object.entries(results)) {
    const theirs = figures[THEIRS]!;
    const ours = figures.RedisLimits!;
    const cells = (read: (column: Figures) => string) => COLUMNS.map((column) => read(figures[column.label]!));
    rows.push([
      label,
      'calls/s (median)',
      ...cells((c) => Math.round(median(c.callsPerSecond)).toLocaleString('en')),
      `${f(median(ours.callsPerSecond) / median(theirs.callsPerSecond))}×`,
    ]);
    rows.push([
      label,
      'Redis time per call (µs)',
      ...cells((c) => f(median(c.redisUsPerCall), 1)),
      `${f(median(ours.redisUsPerCall) / median(theirs.redisUsPerCall))}×`,
    ]);
    rows.push([
      label,
      'latency p50 / p99 (ms)',
      ...cells((c) => `${f(median(c.p50Ms), 3)} / ${f(median(c.p99Ms), 3)}`),
      `${f(median(ours.p50Ms) / median(theirs.p50Ms))}× p50`,
    ]);
  }
  console.log(
    `redis-server ${redis.port} and a three-master cluster (${cluster.nodes.map((node) => node.port).join(', ')}) on loopback · ` +
      `${rounds} rounds of ${values.duration} per figure · ${IN_FLIGHT} calls in flight per process for calls/s\n`,
  );
  console.log(markdownTable(['clients', 'figure', ...COLUMNS.map((column) => column.label), `RedisLimits / ${THEIRS}`], rows));
  const singleP50 = median(results['1 process']!.RedisLimits!.p50Ms);
  console.log(
    `\nlatency p50, 1 process: ${f(singleP50, 3)} ms (target < ${TARGET.latencyP50Ms} ms: ${singleP50 < TARGET.latencyP50Ms ? 'PASS' : 'MISS'})`,
  );
  console.log(`\nthree processes sharing ${rate}/s, burst ${burst}, 600 calls, ${rounds} runs:\n`);
  console.log(
    markdownTable(
      [
        'run',
        'calls sent',
        'span / floor',
        'achieved / configured',
        'envelope excess as sent',
        'as arrivals were read',
        '429s (+1 allowance)',
        'strict shortfall',
      ],
      precision.map((p, index) => [
        String(index + 1),
        String(p.calls),
        `${f(p.spanMs / 1000, 3)} s / ${f(p.floorMs / 1000, 3)} s`,
        `${f(p.achievedRatio, 4)} (≥ ${TARGET.achievedRatio}: ${p.achievedRatio >= TARGET.achievedRatio ? 'PASS' : 'MISS'})`,
        `${f(p.envelopeExcessSent, 3)} (≤ 1: ${p.envelopeExcessSent <= 1 ? 'PASS' : 'MISS'})`,
        f(p.envelopeExcessArrived, 3),
        String(p.refused),
        f(p.strictShortfall, 3),
      ]),
    ),
  );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/redis.json'),
    `${JSON.stringify({ date: new Date().toISOString(), durationMs, rounds, inFlight: IN_FLIGHT, baseline: baseline.commit, overhead: results, precision: { rate, burst, runs: precision } }, null, 2)}\n`,
  );
} finally {
  inspect.disconnect();
  inspectCluster.disconnect();
  await Promise.all([redis.stop(), cluster.stop()]);
}
