// The answer cache: what a hit costs a call through the gate, LMDB and Redis each holding 1M
// answers, against a call to a provider that answers at once; and the bytes each answer takes.
// Prints a table; writes bench/results/cache.json.
//
//   npm run bench:cache            (BENCH_QUICK=1: 100,000 answers stored)
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { answerKey } from '../src/cache/answer-key.ts';
import { LmdbAnswerCache, requestLimit, type AnswerCache, type CachedAnswer, type LlmRequest, type Provider } from '../src/index.ts';
import { CallGate, CallLoop, ProviderRoute, type RouteCaller } from '../src/routes.ts';
import { connectRedis, RedisAnswerCache } from '../src/redis/index.ts';
import { builtinRequest } from '../test/requests.ts';
import { startRedis } from '../test/redis/redis-server.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const quick = process.env.BENCH_QUICK === '1';
const STORED = quick ? 100_000 : 1_000_000;
/** Calls timed per round, one after another; five rounds, the median taken. */
const CALLS = quick ? 5_000 : 20_000;
const ROUNDS = 5;

/** An answer the size of the built-in summary's, and its usage. */
const answerFor = (n: number): CachedAnswer => ({
  output: {
    summary: `Article ${n} recorded a ${n % 50} percent improvement after the free school meals scheme, the best result in ${n % 9} years.`,
    keywords: ['kingsford', 'percent', 'improvement', 'meals', 'school'],
  },
  usage: { inputTokens: 120, outputTokens: 40 },
});

/** The request of article n: what the gate keys on. */
const requestFor = (n: number): LlmRequest => builtinRequest('summarize', String(n), `Title ${n}`, `The text of article ${n}.`);

/** Answers at once, what an answer from the cache would be; says what shapes its answers, as the simulation does. */
const instant: Provider = {
  name: 'instant',
  answerIdentity: (request, maxOutputTokens) => ({
    instant: true,
    task: request.task,
    prompt: request.prompt,
    schema: request.schema,
    maxOutputTokens,
  }),
  call: async (request) => answerFor(Number(request.articleId)) as { output: CachedAnswer['output'] },
};
const keyOf = (n: number) => answerKey(instant.answerIdentity!(requestFor(n), 256));

async function fill(cache: AnswerCache, inFlight: number): Promise<number> {
  const started = performance.now();
  for (let n = 0; n < STORED; n += inFlight) {
    const puts: Promise<void>[] = [];
    for (let i = n; i < Math.min(STORED, n + inFlight); i++) puts.push(cache.put(keyOf(i), answerFor(i)));
    await Promise.all(puts);
  }
  return performance.now() - started;
}

/**
 * µs per call through the gate (its call loop, as a run's), one after another, over requests spread across those stored: wall
 * time and this process's CPU time (user + system), each the median of the rounds. The CPU time
 * is what the call costs this process whatever else the machine runs; the wall time on a busy
 * machine holds the waits for a core too.
 */
async function perCall(gate: RouteCaller, expectCached: boolean): Promise<{ wallUs: number; cpuUs: number }> {
  const requests = Array.from({ length: CALLS }, (_, i) => requestFor(Math.floor((i * 7919) % STORED)));
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    for (const request of requests) {
      const answer = await gate.call(request);
      if ((answer.cached === true) !== expectCached) throw new Error(`expected ${expectCached ? 'a hit' : 'a call'}`);
    }
    const used = process.cpuUsage(cpuBefore);
    wall.push(((performance.now() - started) * 1000) / CALLS);
    cpu.push((used.user + used.system) / CALLS);
  }
  return { wallUs: median(wall), cpuUs: median(cpu) };
}

/** Calls per second with `inFlight` calls at once (a pool of workers). */
async function throughput(gate: RouteCaller, inFlight: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < CALLS) await gate.call(requestFor(Math.floor((next++ * 7919) % STORED)));
    }),
  );
  return (CALLS * 1000) / (performance.now() - started);
}

const gateOver = (cache?: AnswerCache) =>
  new CallLoop({ cache }).caller(new ProviderRoute(new CallGate({ provider: instant, limits: requestLimit(Infinity, 1) })));
const rows: string[][] = [];
const results: Record<string, unknown> = { stored: STORED };
const us = (value: number) => `${value.toFixed(1)} µs`;
const both = ({ wallUs, cpuUs }: { wallUs: number; cpuUs: number }) => `${us(wallUs)} (CPU ${us(cpuUs)})`;

// The call itself: a provider that answers at once, no cache.
const bare = await perCall(gateOver(), false);
rows.push(['no cache: the gate to an instant provider', both(bare), `${(await throughput(gateOver(), 64)).toFixed(0)}/s`, '', '']);
results.instant = bare;

// LMDB.
const dir = mkdtempSync(join(tmpdir(), 'np-cache-bench-'));
try {
  const lmdb = await LmdbAnswerCache.open(join(dir, 'answers'));
  console.error(`LMDB: storing ${STORED} answers …`);
  const fillMs = await fill(lmdb, 10_000);
  const stats = lmdb.size;
  const db = await import('lmdb');
  const pages = db.open({ path: join(dir, 'answers'), readOnly: true }).getStats() as Record<string, number>;
  const usedBytes = (pages.treeBranchPageCount! + pages.treeLeafPageCount! + pages.overflowPages!) * pages.pageSize!;
  const lmdbHit = await perCall(gateOver(lmdb), true);
  const lmdbGetUs = await (async () => {
    const keys = Array.from({ length: CALLS }, (_, i) => keyOf((i * 7919) % STORED));
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    for (const key of keys) await lmdb.get(key);
    const used = process.cpuUsage(cpuBefore);
    return { wallUs: ((performance.now() - started) * 1000) / CALLS, cpuUs: (used.user + used.system) / CALLS };
  })();
  rows.push([
    `LMDB, ${stats} answers: a hit through the gate`,
    both(lmdbHit),
    `${(await throughput(gateOver(lmdb), 64)).toFixed(0)}/s`,
    `${(usedBytes / stats).toFixed(0)} B`,
    `${((STORED * 1000) / fillMs).toFixed(0)}/s`,
  ]);
  rows.push(['… of which the store’s get', both(lmdbGetUs), '', '', '']);
  results.lmdb = { hit: lmdbHit, get: lmdbGetUs, bytesPerEntry: usedBytes / stats, putsPerSecond: (STORED * 1000) / fillMs };
  await lmdb.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Redis, on loopback.
const redis = await startRedis();
try {
  const connection = await connectRedis(redis.url);
  const cache = new RedisAnswerCache({ target: connection.target });
  await connection.close();
  const client = new Redis(redis.port, '127.0.0.1');
  const memoryBefore = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  console.error(`Redis: storing ${STORED} answers …`);
  const fillMs = await fill(cache, 1_000);
  const memoryAfter = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  const stored = await client.dbsize();
  client.disconnect();
  const redisHit = await perCall(gateOver(cache), true);
  rows.push([
    `Redis, ${stored} answers: a hit through the gate`,
    both(redisHit),
    `${(await throughput(gateOver(cache), 64)).toFixed(0)}/s`,
    `${((memoryAfter - memoryBefore) / stored).toFixed(0)} B`,
    `${((STORED * 1000) / fillMs).toFixed(0)}/s`,
  ]);
  results.redis = { hit: redisHit, bytesPerEntry: (memoryAfter - memoryBefore) / stored, putsPerSecond: (STORED * 1000) / fillMs };
  await cache.close();
} finally {
  await redis.stop();
}

results.loadAverage = loadavg()[0];
const table = markdownTable(['call', 'per call, one at a time', '64 at once', 'bytes per answer', 'stored at'], rows);
console.log(table);
console.log(`load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`);
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench/results/cache.json'),
  `${JSON.stringify({ date: new Date().toISOString(), quick, ...results }, null, 2)}\n`,
);
writeFileSync(join(ROOT, 'bench/results/cache.txt'), `${table}\n`);
