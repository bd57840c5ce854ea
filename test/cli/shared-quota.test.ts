import { fork } from 'node:child_process';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateArticles, type RunSummary } from '../../src/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { startRedis, type TestRedis } from '../redis/redis-server.ts';
import { excessFromFirst, firstCallTokens, stray429s } from '../redis/shared-quota.ts';
import type { ArrivalsServerSettings } from './arrivals-server-child.ts';
import { type CliRun, runCli, startCli } from './run-cli.ts';

const CHILD = fileURLToPath(new URL('./arrivals-server-child.ts', import.meta.url));

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

interface ArrivalsServer {
  readonly url: string;
  /** The key's chat requests answered so far, by HTTP status, as the server's own `/metrics` counts them. */
  statuses(): Promise<Record<string, number>>;
  /** Stops the server; resolves with when each of the key's chat requests arrived, ms on the server's monotonic clock, ascending. */
  stop(): Promise<number[]>;
}

/** An `LlmServer` answering at once, in a process of its own that notes when the key's calls arrive (see arrivals-server-child.ts). */
async function startArrivalsServer(settings: ArrivalsServerSettings): Promise<ArrivalsServer> {
  const child = fork(CHILD, [JSON.stringify(settings)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const message = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      child.on('message', (received: { type: string } & T) => {
        if (received.type === type) resolve(received);
      });
      void exited.then(([code, signal]) => reject(new Error(`the server exited (${code ?? signal}) before '${type}'`)));
    });
  let stopped: Promise<number[]> | undefined;
  try {
    const { url } = await message<{ url: string }>('listening');
    const label = keyFingerprint(settings.key);
    return {
      url,
      statuses: async () => {
        const text = await (await fetch(`${url}/metrics`)).text();
        const pattern = new RegExp(`^serve_requests_total\\{route="/v1/chat/completions",status="(\\d+)",key="${label}"\\} (\\d+)$`, 'gm');
        return Object.fromEntries([...text.matchAll(pattern)].map(([, status, count]) => [status!, Number(count)]));
      },
      stop: () => {
        stopped ??= (async () => {
          const arrivals = message<{ arrivalsMs: number[] }>('arrivals');
          if (child.connected) child.send('stop');
          const { arrivalsMs } = await arrivals;
          await exited;
          return arrivalsMs.sort((a, b) => a - b);
        })();
        return stopped;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** `count` generated articles as JSONL (what `--articles=count` would run), their ids those of process `process`. */
function articlesJsonl(count: number, process: number): string {
  return [...generateArticles(count, { seed: process })]
    .map((article) => `${JSON.stringify({ ...article, id: `p${process}-${article.id}` })}\n`)
    .join('');
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('news-processor --redis: three commands on one quota', () => {
  it('hold burst + rate·t at the server from the first call, send 180 calls at 30/s no faster than the floor, and lose none', {
    timeout: 60_000,
  }, async () => {
    const rate = 30;
    const burst = 3;
    const processes = 3;
    const articles = 30;
    const calls = processes * articles * 2;
    const key = 'sk-shared-quota';
    // One call of allowance in the server's quota, as in the envelope: a bucket of burst + 1 admits
    // every call exactly when the arrivals hold burst + 1 + rate·t in every window. A quota strictly
    // equal to ours starts full at our first call's arrival and so runs that call's trip behind us;
    // the first call of a process, on a new connection, takes some ms longer than the next ones, and
    // an equal quota refused one or two calls a run (docs/shared-quotas.md, "What is not").
    const server = await startArrivalsServer({ rate, burst: burst + 1, key });
    const started: CliRun[] = [];
    try {
      const provider = ['--provider=openai', `--base-url=${server.url}/v1`, '--api-key-env=SHARED_QUOTA_KEY'];
      // The server's first answers compile the tasks' schemas, holding its event loop for a hundred
      // ms and more, in which arrivals are read late and together: a run on another key goes first.
      const warm = await runCli([...provider, '--articles=2', '--rate=inf', '--quiet'], { env: { SHARED_QUOTA_KEY: 'sk-warm-up' } });
      expect(warm.code, warm.stderr).toBe(0);

      // The commands start at once and each waits for its articles on standard input until it has
      // loaded everything (its Redis connection, its provider: "run started" is logged once the
      // provider is ready), as the library test's processes wait for 'go'. Started with
      // --articles=30 instead, the first to load takes tokens while the others still boot — half a
      // CPU-second each, on two cores — and its event loop stalled 10 to 60 ms between a grant and
      // its call, sending calls together: up to 2.5 calls over the envelope. Their articles come
      // 200 ms apart, so that the three do not run their paths for the first time in the same
      // instant: at once, the first calls went later (0.8 to 1.0 of a call over, against 0.4 to
      // 0.9 staggered, with both cores kept busy by other processes).
      const inputs = Array.from({ length: processes }, () => new PassThrough());
      started.push(
        ...inputs.map((stdin) =>
          startCli([...provider, `--redis=${redis.url}`, `--rate=${rate}`, `--burst=${burst}`, '--input=-', '--log-level=info', '--json'], {
            env: { SHARED_QUOTA_KEY: key },
            stdin,
          }),
        ),
      );
      await Promise.all(started.map((run) => run.waitForStderr(/"msg":"run started"/, 20_000)));
      for (const [i, input] of inputs.entries()) {
        if (i > 0) await sleepMs(200);
        input.end(articlesJsonl(articles, i + 1));
      }
      const runs = await Promise.all(started.map((run) => run.result));
      const statuses = await server.statuses();
      const arrivalsMs = await server.stop();

      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const summaries = runs.map((run) => JSON.parse(run.stdout) as RunSummary);
      for (const summary of summaries) expect([summary.articles, summary.succeeded, summary.failed]).toEqual([articles, articles, 0]);
      const refused = statuses[429] ?? 0;
      expect(refused).toBeLessThanOrEqual(stray429s(calls));
      expect(summaries.reduce((sum, summary) => sum + summary.rateLimited, 0)).toBe(refused);
      expect(statuses).toEqual(refused === 0 ? { 200: calls } : { 200: calls, 429: refused });
      expect(arrivalsMs).toHaveLength(calls + refused);
      // Judged by when each call arrived at the server (the command has no send times to give), in
      // what no stall can make worse (excessFromFirst): one call of allowance, as the issue allows,
      // for the first call's longer trip (above), and the first call's lateness. A command that
      // did not share the quota would be 120 calls over. How close a run comes to the envelope and
      // the floor is a figure for bench:redis, which measures it for three processes.
      const floorMs = ((calls - burst) / rate) * 1000;
      const spanMs = arrivalsMs.at(-1)! - arrivalsMs[0]!;
      expect(excessFromFirst(arrivalsMs, rate, burst)).toBeLessThanOrEqual(1 + firstCallTokens(rate));
      expect(spanMs).toBeGreaterThanOrEqual(floorMs - 1000 / rate);
      expect(spanMs).toBeLessThanOrEqual(floorMs * 2);
    } finally {
      for (const run of started) run.send('SIGKILL');
      await server.stop().catch(() => {});
    }
  });
});
