// --cache end to end: the compiled command against `serve` (counting what reaches it on its
// /metrics), the in-process simulation, and a Redis of the test's own shared by two processes.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type TestRedis } from '../redis/redis-server.ts';
import { type CliRun, FAST, linesOf, makeTempDir, runCli, startServe } from './run-cli.ts';

const KEY_VARIABLE = 'NP_CACHE_TEST_KEY';
const ENV = { [KEY_VARIABLE]: 'sk-cache-test-never-shown', OPENAI_API_KEY: undefined };
const PRICES = ['--price-input=1', '--price-output=2'];

let temp: Awaited<ReturnType<typeof makeTempDir>>;
let serve: { run: CliRun; url: string };
let redis: TestRedis;

/** The chat completions serve has answered so far, as its own /metrics counts them. */
async function servedCalls(): Promise<number> {
  const text = await (await fetch(`${serve.url}/metrics`)).text();
  const counts = [...text.matchAll(/^serve_requests_total\{route="\/v1\/chat\/completions",[^}]*\} (\d+)$/gm)];
  return counts.reduce((sum, [, count]) => sum + Number(count), 0);
}

beforeAll(async () => {
  temp = await makeTempDir();
  [serve, redis] = await Promise.all([startServe(['--rate=inf', '--min-latency=0ms', '--max-latency=5ms']), startRedis()]);
}, 60_000);

afterAll(async () => {
  serve?.run.send('SIGKILL');
  await redis?.stop();
  await temp?.remove();
});

/** A run's --json summary, after checking it exited 0. */
async function run(args: readonly string[]): Promise<{ summary: any; stderr: string }> {
  const result = await runCli([...args, '--json'], { env: ENV });
  expect(result.code, result.stderr).toBe(0);
  return { summary: JSON.parse(result.stdout), stderr: result.stderr };
}

describe('--cache', { timeout: 60_000 }, () => {
  it('a second run of the same work against serve makes no call and costs nothing; another model is asked again', async () => {
    const cache = join(temp.dir, 'serve-cache');
    const against = ['--provider=openai', `--base-url=${serve.url}/v1`, `--api-key-env=${KEY_VARIABLE}`, '--articles=6', '--rate=inf'];
    const first = join(temp.dir, 'first.jsonl');
    const second = join(temp.dir, 'second.jsonl');
    const before = await servedCalls();
    const { summary: paid } = await run([...against, ...PRICES, `--cache=${cache}`, `--output=${first}`]);
    expect(paid).toMatchObject({ succeeded: 6, calls: 12, cacheHits: 0, cacheSavedUsd: 0 });
    expect(paid.costUsd).toBeGreaterThan(0);
    expect(await servedCalls()).toBe(before + 12);

    const { summary: free } = await run([...against, ...PRICES, `--cache=${cache}`, `--output=${second}`]);
    expect(free).toMatchObject({ succeeded: 6, calls: 0, costUsd: 0, cacheHits: 12 });
    expect(free.cacheSavedUsd).toBeCloseTo(paid.costUsd, 9);
    expect(await servedCalls()).toBe(before + 12);
    // The same answers, each line saying which tasks came from the cache.
    const read = async (path: string) =>
      linesOf(await readFile(path, 'utf8'))
        .map((line) => JSON.parse(line))
        .sort((a, b) => Number(a.id) - Number(b.id));
    const [paidLines, freeLines] = [await read(first), await read(second)];
    expect(freeLines.map((line) => line.outputs)).toEqual(paidLines.map((line) => line.outputs));
    for (const line of paidLines) expect(line.cached).toBeUndefined();
    for (const line of freeLines) expect(line).toMatchObject({ cached: ['summarize', 'sentiment'], attempts: 0, costUsd: 0 });

    const { summary: other } = await run([...against, '--model=another-model', `--cache=${cache}`]);
    expect(other).toMatchObject({ calls: 12, cacheHits: 0 });
    expect(await servedCalls()).toBe(before + 24);
  });

  it('identical requests in one run are made once, the others wait for that answer', async () => {
    const input = join(temp.dir, 'duplicates.jsonl');
    const article = { title: 'One title', content: 'The same text, three times over.' };
    await writeFile(input, ['a', 'b', 'c'].map((id) => `${JSON.stringify({ id, ...article })}\n`).join(''));
    const { summary: uncached } = await run([`--input=${input}`, ...FAST, '--workers=3']);
    expect(uncached.calls).toBe(6);
    const { summary } = await run([`--input=${input}`, ...FAST, '--workers=3', `--cache=${join(temp.dir, 'duplicates-cache')}`]);
    expect(summary).toMatchObject({ succeeded: 3, calls: 2, cacheHits: 4 });
  });

  it('redis://: a second process takes every answer the first one kept, each kept for --cache-ttl', async () => {
    const shared = [...FAST, '--articles=5', `--cache=${redis.url}`, '--redis-prefix=cache-test:'];
    const { summary: first } = await run([...shared, '--cache-ttl=1h']);
    expect(first).toMatchObject({ calls: 10, cacheHits: 0 });
    const client = new Redis(redis.port, '127.0.0.1');
    try {
      const keys = await client.keys('cache-test:answer:*');
      expect(keys).toHaveLength(10);
      for (const key of keys) {
        const ttlMs = await client.pttl(key);
        expect(ttlMs).toBeGreaterThan(3_500_000);
        expect(ttlMs).toBeLessThanOrEqual(3_600_000);
      }
    } finally {
      client.disconnect();
    }
    const { summary: second } = await run(shared);
    expect(second).toMatchObject({ succeeded: 5, calls: 0, cacheHits: 10 });
    // Another seed is another simulated model: asked again.
    const { summary: reseeded } = await run([...shared, '--seed=2']);
    expect(reseeded).toMatchObject({ calls: 10, cacheHits: 0 });
  });

  it('bad values: one line, exit 2, nothing written', async () => {
    const file = join(temp.dir, 'a-file');
    await writeFile(file, 'x');
    const unreachable = `redis://127.0.0.1:${await freePort()}`;
    const cases: [string[], RegExp][] = [
      [['--cache='], /^error: --cache: expected a directory or a redis:\/\/ URL, got nothing$/],
      [[`--cache=${file}`], /^error: --cache: .*a-file is a file: the cache is a directory of its own/],
      [['--cache-ttl=1h'], /^error: --cache-ttl needs --cache/],
      [
        [`--cache=${temp.dir}/c`, '--cache-ttl=0s'],
        /^error: option '--cache-ttl <duration>' argument '0s' is invalid\. Expected a duration > 0\.$/,
      ],
      [
        ['--cache=http://user:secret@host/'],
        /^error: --cache: expected a directory or a redis:\/\/ or rediss:\/\/ URL, got a http:\/\/ URL$/,
      ],
      [[`--cache=${unreachable}`], /^error: --cache: cannot connect to Redis at redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/],
      [[`--cache=${unreachable}`, '--redis-ca=ca.pem'], /^error: --redis-ca needs a rediss:\/\/ URL \(TLS\) in --cache$/],
      [['--redis-timeout=1s'], /^error: --redis-timeout needs --redis \(the Redis that keeps the shared quota, or a Redis --cache\)$/],
    ];
    for (const [args, message] of cases) {
      const output = join(temp.dir, 'never.jsonl');
      const result = await runCli([...FAST, '--articles=2', `--output=${output}`, ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(linesOf(result.stderr), args.join(' ')).toEqual([expect.stringMatching(message)]);
      expect(result.stderr).not.toContain('secret');
      await expect(readFile(output, 'utf8')).rejects.toThrow(/ENOENT/);
    }
  });
});
