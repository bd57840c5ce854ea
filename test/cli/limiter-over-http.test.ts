// The client's limiter measured where it matters, at the server: the CLI at --rate=R --burst=1
// against `news-processor serve` holding each key to R per second, burst 3.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/index.ts';
import { OpenAiProvider } from '../../src/vendors/index.ts';
import { keyFingerprint } from '../../src/server/server-metrics.ts';
import { type CliRun, linesOf, runCli, startCli } from './run-cli.ts';
import { builtinRequest } from '../requests.ts';
import { excessFromFirst, firstCallTokens, stray429s } from '../redis/shared-quota.ts';

/**
 * Requests per second, client and server alike. The server's two spare tokens absorb sends that
 * go out late followed by one on time — a timer that fires late, an event loop that stalls, in the
 * client or in the server (which sees a request only once its loop reads it) — by up to 2/R: 200 ms
 * at 10/s. A longer stall makes the server refuse the one on time, whatever the limiter did: the
 * machine's 429, which the client retries and stray429s allows. On this machine the client's first
 * request goes out 10–40 ms late (Node loads and compiles its HTTP client on first use; 100 ms and
 * more when other work crowds the two cores): firstCallTokens allows for it.
 */
const RATE = 10;
const CLIENT_BURST = 1;
const SERVER_BURST = 3;
const ARTICLES = 50;
const CALLS = 2 * ARTICLES;
/**
 * Tokens allowed over the envelope for the measurement alone. An arrival is the request log's
 * `time` (the wall clock in whole ms, truncated, when the answer was sent) less its `ms` (the time
 * since the request arrived, to 0.1 ms): each is off by −0.05 to +1.05 ms, so a pair's spacing by
 * at most 1.1 ms, 0.011 tokens at 10/s. 0.05 tokens (5 ms) leaves room for the µs between the
 * clock readings and the wall clock's slewing.
 */
const SLACK_TOKENS = 0.05;
const KEY = 'sk-precision-0123456789-never-shown';

/** Resolves with serve's URL once its first stdout line says where it listens. */
async function listening(serve: CliRun): Promise<string> {
  const deadline = performance.now() + 20_000;
  for (;;) {
    const url = /^listening on (\S+)\n/.exec(serve.stdout())?.[1];
    if (url !== undefined) return url;
    if (serve.child.exitCode !== null || performance.now() > deadline) throw new Error(`serve did not start: ${serve.stderr()}`);
    await sleep(20);
  }
}

describe(`news-processor --rate=${RATE} --burst=${CLIENT_BURST} against serve --rate=${RATE} --burst=${SERVER_BURST}`, () => {
  it(`${CALLS} calls, none lost; the arrivals at the server within burst + rate·t from the first`, {
    timeout: 60_000,
  }, async () => {
    const serve = startCli(['serve', '--port=0', `--rate=${RATE}`, `--burst=${SERVER_BURST}`, '--min-latency=0ms', '--max-latency=0ms']);
    try {
      const url = await listening(serve);
      // serve's first requests compile their schemas and code while its event loop waits, and the
      // requests arriving meanwhile are taken together: warm it, as a real provider is, on a key of its own.
      const warm = new OpenAiProvider({ apiKey: 'sk-warm-up', baseUrl: `${url}/v1` });
      const request: LlmRequest = builtinRequest('summarize', 'w', 'Warm', 'The server warms up. It is quick.');
      for (const task of ['summarize', 'sentiment', 'summarize', 'sentiment'] as const) {
        await warm.call({ ...request, task });
        await sleep((1000 * SERVER_BURST) / RATE);
      }

      const result = await runCli(
        [
          '--provider=openai',
          `--base-url=${url}/v1`,
          '--api-key-env=NP_PRECISION_KEY',
          `--articles=${ARTICLES}`,
          `--rate=${RATE}`,
          `--burst=${CLIENT_BURST}`,
          '--workers=10',
          '--json',
        ],
        { env: { NP_PRECISION_KEY: KEY } },
      );
      serve.send('SIGTERM');
      const served = await serve.result;
      expect(served.code, served.stderr).toBe(0);

      const fingerprint = keyFingerprint(KEY);
      const arrivals = linesOf(served.stderr)
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((line) => line.key === fingerprint)
        .map(({ time, ms, status }) => ({ atMs: time - ms, status }))
        .sort((a, b) => a.atMs - b.atMs);

      expect(result.code, `${result.stderr}${result.stdout.slice(0, 3000)}`).toBe(0);
      // serve refused none but for the stray ones a crowded machine makes (see stray429s), and saw each call once.
      const refused = arrivals.filter((arrival) => arrival.status !== 200);
      expect(refused.length).toBeLessThanOrEqual(stray429s(CALLS));
      expect(refused.every((arrival) => arrival.status === 429)).toBe(true);
      expect(arrivals).toHaveLength(CALLS + refused.length);
      // The client's own envelope, 1 + R·t, in what no stall can make worse (excessFromFirst): the
      // first call's lateness, and the log's reading of the instants (SLACK_TOKENS).
      const arrivedMs = arrivals.map((arrival) => arrival.atMs);
      expect(excessFromFirst(arrivedMs, RATE, CLIENT_BURST)).toBeLessThanOrEqual(SLACK_TOKENS + firstCallTokens(RATE));

      const summary = JSON.parse(result.stdout);
      expect(summary).toMatchObject({
        articles: ARTICLES,
        succeeded: ARTICLES,
        failed: 0,
        calls: CALLS + refused.length,
        rateLimited: refused.length,
        retries: refused.length,
      });
      // No schedule at R ends before (calls − burst) / R; and not slow either, by a generous ratio.
      const rateFloorMs = ((CALLS - CLIENT_BURST) / RATE) * 1000;
      expect(summary.elapsedMs).toBeGreaterThanOrEqual(rateFloorMs);
      expect(summary.elapsedMs).toBeLessThan(rateFloorMs * 2);
    } finally {
      serve.send('SIGKILL');
    }
  });
});
