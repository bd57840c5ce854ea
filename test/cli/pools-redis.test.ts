// Three commands on one pool through Redis: each member's quota shared under a quota key of its
// own, against a `news-processor serve` per member that keeps that member's quota and counts 429s.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateArticles, type RunSummary } from '../../src/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { startRedis, type TestRedis } from '../redis/redis-server.ts';
import { stray429s } from '../redis/shared-quota.ts';
import { type CliRun, linesOf, makeTempDir, runCli, type Serve, startCli, startServe } from './run-cli.ts';

const KEY = 'sk-pool-shared-5c1e9a';
/** Each member's calls per second; a burst of 2 in the providers file. */
const RATES = [10, 20, 30] as const;
const BURST = 2;
const COMBINED_RATE = RATES.reduce((sum, rate) => sum + rate, 0);

let redis: TestRedis;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
const serves: Serve[] = [];

beforeAll(async () => {
  [redis, temp] = await Promise.all([startRedis(), makeTempDir()]);
}, 30_000);

afterAll(async () => {
  for (const serve of serves) serve.run.send('SIGKILL');
  await Promise.all(serves.map((serve) => serve.run.result));
  await redis?.stop();
  await temp?.remove();
});

/** The key's chat completions a serve instance answered 429, as its own `/metrics` counts them. */
async function rateLimitedAt(serve: Serve): Promise<number> {
  const text = await (await fetch(`${serve.url}/metrics`)).text();
  const pattern = new RegExp(
    `^serve_requests_total\\{route="/v1/chat/completions",status="429",key="${keyFingerprint(KEY)}"\\} (\\d+)$`,
    'm',
  );
  return Number(pattern.exec(text)?.[1] ?? 0);
}

const total429s = async () => (await Promise.all(serves.map(rateLimitedAt))).reduce((sum, count) => sum + count, 0);

/** `count` generated articles as JSONL, their ids those of process `process`. */
function articlesJsonl(count: number, process: number): string {
  return [...generateArticles(count, { seed: process })]
    .map((article) => `${JSON.stringify({ ...article, id: `p${process}-${article.id}` })}\n`)
    .join('');
}

/**
 * Runs `processes` commands on the pool through Redis, `articles` each, and resolves with their
 * summaries, their result lines, and the ms from the first articles given to the last command's end.
 * Each command loads everything before its articles come (as in shared-quota.test.ts), 200 ms apart.
 */
async function runShared(config: string, processes: number, articles: number, name: string) {
  const inputs = Array.from({ length: processes }, () => new PassThrough());
  const outputs = inputs.map((_, i) => join(temp.dir, `${name}-${i}.jsonl`));
  const started: CliRun[] = inputs.map((stdin, i) =>
    startCli([`--config=${config}`, `--redis=${redis.url}`, '--input=-', `--output=${outputs[i]}`, '--log-level=info', '--json'], {
      env: { NP_POOL_KEY: KEY },
      stdin,
      killAfterMs: 60_000,
    }),
  );
  try {
    await Promise.all(started.map((run) => run.waitForStderr(/"msg":"run started"/, 20_000)));
    const startMs = performance.now();
    for (const [i, input] of inputs.entries()) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 200));
      input.end(articlesJsonl(articles, i + 1));
    }
    const runs = await Promise.all(started.map((run) => run.result));
    const elapsedMs = performance.now() - startMs;
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const lines = (await Promise.all(outputs.map((path) => readFile(path, 'utf8')))).flatMap((text) =>
      linesOf(text).map((line) => JSON.parse(line)),
    );
    return { summaries: runs.map((run) => JSON.parse(run.stdout) as RunSummary), lines, elapsedMs };
  } finally {
    for (const run of started) run.send('SIGKILL');
  }
}

describe('news-processor --redis on a pool: three commands, each member’s quota shared', () => {
  it('every article once, the members’ combined rate held across the three, spread by quota, and no more 429s than one command draws', {
    timeout: 120_000,
  }, async () => {
    // One call of allowance in each member's quota, as shared-quota.test.ts gives its server: an
    // equal quota refuses a call whenever the machine holds one up after its grant.
    serves.push(
      ...(await Promise.all(
        RATES.map((rate) => startServe([`--rate=${rate}`, `--burst=${BURST + 1}`, '--min-latency=10ms', '--max-latency=40ms'])),
      )),
    );
    const config = join(temp.dir, 'pool.json');
    await writeFile(
      config,
      JSON.stringify({
        providers: RATES.map((rate, i) => ({
          name: `key-${rate}`,
          type: 'openai',
          baseUrl: `${serves[i]!.url}/v1`,
          apiKeyEnv: 'NP_POOL_KEY',
          limits: [{ kind: 'requests', rate, burst: BURST }],
        })),
        pools: [{ name: 'gpt', members: RATES.map((rate) => `key-${rate}`) }],
        routes: { summarize: 'gpt', sentiment: 'gpt' },
      }),
    );
    // The servers' first answers compile the tasks' schemas, holding their event loops: a run on another key goes first.
    const warm = await runCli([`--config=${config}`, '--articles=3', '--quiet'], { env: { NP_POOL_KEY: 'sk-warm-up' } });
    expect(warm.code, warm.stderr).toBe(0);

    const articles = 30;
    const calls = 3 * articles * 2;
    const one = await runShared(config, 1, 3 * articles, 'one');
    const oneDrew = await total429s();
    // Both quotas full again (in Redis and at the servers) before the three start.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const three = await runShared(config, 3, articles, 'three');
    const threeDrew = (await total429s()) - oneDrew;

    for (const { summaries, lines } of [one, three]) {
      for (const summary of summaries) expect(summary.failed).toBe(0);
      // Every article accounted for once: 90 ids, each in one line, each succeeded.
      expect(lines).toHaveLength(3 * articles);
      expect(new Set(lines.map((line) => line.id)).size).toBe(3 * articles);
      expect(lines.every((line) => line.status === 'succeeded')).toBe(true);
    }
    expect(three.summaries.reduce((sum, summary) => sum + summary.rateLimited, 0)).toBe(threeDrew);
    // The three together no faster than the members' combined rate: 180 calls less the bursts at
    // 60/s, where three commands each taking the whole quotas would be done in a third of it.
    expect(three.elapsedMs).toBeGreaterThanOrEqual(((calls - 3 * BURST) / COMBINED_RATE) * 1000);
    // Spread by quota across the three commands: the 10/s member about a sixth, the 30/s one about half.
    const served: Record<string, number> = {};
    for (const line of three.lines) for (const member of Object.values<string>(line.servedBy)) served[member] = (served[member] ?? 0) + 1;
    expect(served['key-10']! / calls).toBeGreaterThan(0.08);
    expect(served['key-10']! / calls).toBeLessThan(0.3);
    expect(served['key-30']! / calls).toBeGreaterThan(0.35);
    // 429s: the three draw no more than one command alone does, within the strays a crowded
    // machine causes (a stall that holds one call after its grant); commands that did not share
    // the quotas would draw about two calls in three.
    expect(threeDrew).toBeLessThanOrEqual(Math.max(oneDrew, stray429s(calls)));
    expect(oneDrew).toBeLessThanOrEqual(stray429s(calls));
  });
});
