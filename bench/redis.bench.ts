/**
 * The quota shared through Redis: what a shared check costs, next to rate-limiter-flexible's
 * RateLimiterRedis on the same Redis in the same run, and how exactly three processes share a quota.
 *
 *   npm run bench:redis [-- --duration=2s --rounds=3]
 *
 * Starts its own redis-server on a free loopback port. For 1 and 4 client processes, each subject
 * is measured `--rounds` times, alternating which goes first: latency (one call at a time per
 * process, every call timed: the time a call spends on the limiter when the quota has room) and
 * throughput (16 calls in flight per process). Then, `--rounds` times, three processes share a
 * quota of 100/s, burst 5, against a loopback server that counts the calls (see
 * test/redis/shared-quota.ts): the envelope is judged by when each call was sent, on a clock every
 * process of the machine shares, allowing one call of jitter; what the server read of the arrivals
 * is shown too.
 * Prints a table and writes bench/results/redis.json.
 */

import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { parseDuration } from '../src/index.ts';
import { startRedis } from '../test/redis/redis-server.ts';
import { envelopeExcess, runSharedQuota, strictShortfall } from '../test/redis/shared-quota.ts';
import { markdownTable } from './lib/table.ts';
import { median, quantile } from './lib/stats.ts';
import type { ClientReport, ClientSettings, Subject } from './redis/client.ts';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '2s' }, rounds: { type: 'string', default: '3' } } });
const parsedMs = parseDuration(values.duration);
if (parsedMs === undefined || parsedMs <= 0) throw new TypeError(`Expected --duration to be a duration > 0, got ${values.duration}`);
const durationMs: number = parsedMs;
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new TypeError(`Expected --rounds to be an integer >= 1, got ${values.rounds}`);

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLIENT = fileURLToPath(new URL('./redis/client.ts', import.meta.url));
const SUBJECTS: readonly Subject[] = ['RedisLimits', 'RateLimiterRedis'];
const IN_FLIGHT = 16;
const TARGET = { latencyP50Ms: 0.5, achievedRatio: 0.99 };

const redis = await startRedis();
/** For Redis's own figures (INFO commandstats). */
const inspect = new Redis(redis.url);
let measurement = 0;

/** Runs `processes` clients of `subject` at once (started together) and gathers their reports. */
async function measure(subject: Subject, processes: number, mode: ClientSettings['mode']): Promise<ClientReport[]> {
  const settings: ClientSettings = { url: redis.url, subject, mode, durationMs, inFlight: IN_FLIGHT, key: `bench-${++measurement}` };
  const children = Array.from({ length: processes }, () => fork(CLIENT, [JSON.stringify(settings)], { execArgv: ['--import', 'tsx'] }));
  try {
    const next = (child: (typeof children)[number]) =>
      new Promise<unknown>((resolve, reject) => {
        child.once('message', resolve);
        // A client that ends well may be seen to exit before its last message is read.
        child.once('exit', (code, signal) => {
          if (code !== 0) reject(new Error(`a ${subject} client exited (${code ?? signal})`));
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

const results: Record<string, Record<Subject, Figures>> = {};
try {
  for (const processes of [1, 4]) {
    const figures = Object.fromEntries(
      SUBJECTS.map((s) => [s, { callsPerSecond: [], redisUsPerCall: [], p50Ms: [], p99Ms: [] } as Figures]),
    ) as Record<Subject, Figures>;
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? SUBJECTS : [...SUBJECTS].reverse();
      for (const subject of order) {
        const latency = (await measure(subject, processes, 'latency')).flatMap((report) => report.latenciesMs);
        figures[subject].p50Ms.push(quantile(latency, 0.5));
        figures[subject].p99Ms.push(quantile(latency, 0.99));
        await inspect.config('RESETSTAT');
        const throughput = await measure(subject, processes, 'throughput');
        figures[subject].callsPerSecond.push(throughput.reduce((sum, r) => sum + (r.calls * 1000) / r.elapsedMs, 0));
        figures[subject].redisUsPerCall.push(
          Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(await inspect.info('commandstats'))?.[1]),
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
    const ours = figures.RedisLimits;
    const theirs = figures.RateLimiterRedis;
    rows.push([
      label,
      'calls/s (median)',
      Math.round(median(ours.callsPerSecond)).toLocaleString('en'),
      Math.round(median(theirs.callsPerSecond)).toLocaleString('en'),
      `${f(median(ours.callsPerSecond) / median(theirs.callsPerSecond))}×`,
    ]);
    rows.push([
      label,
      'Redis time per call (µs)',
      f(median(ours.redisUsPerCall), 1),
      f(median(theirs.redisUsPerCall), 1),
      `${f(median(ours.redisUsPerCall) / median(theirs.redisUsPerCall))}×`,
    ]);
    rows.push([
      label,
      'latency p50 / p99 (ms)',
      `${f(median(ours.p50Ms), 3)} / ${f(median(ours.p99Ms), 3)}`,
      `${f(median(theirs.p50Ms), 3)} / ${f(median(theirs.p99Ms), 3)}`,
      `${f(median(ours.p50Ms) / median(theirs.p50Ms))}× p50`,
    ]);
  }
  console.log(
    `redis-server ${redis.port} on loopback · ${rounds} rounds of ${values.duration} per figure · ${IN_FLIGHT} calls in flight per process for calls/s\n`,
  );
  console.log(markdownTable(['clients', 'figure', 'RedisLimits', 'RateLimiterRedis', 'ours / theirs'], rows));
  const singleP50 = median(results['1 process']!.RedisLimits.p50Ms);
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
    `${JSON.stringify({ date: new Date().toISOString(), durationMs, rounds, inFlight: IN_FLIGHT, overhead: results, precision: { rate, burst, runs: precision } }, null, 2)}\n`,
  );
} finally {
  inspect.disconnect();
  await redis.stop();
}
