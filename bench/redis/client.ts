// One client process of the Redis benchmark: `node --import tsx bench/redis/client.ts '<settings>'`.
// Connects, says 'ready', waits for 'go', then for `durationMs` either makes one call at a time
// (latency: every call timed) or keeps `inFlight` calls going (throughput), and sends back what it saw.
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { connectRedis, RedisLimits } from '../../src/redis/index.ts';
import { requestLimit } from '../../src/index.ts';

/** What a client measures: ours (on whichever Redis the URL names), or rate-limiter-flexible's, with or without ioredis' auto-pipelining. */
export type Subject = 'RedisLimits' | 'RateLimiterRedis' | 'RateLimiterRedis, auto-pipelined';

export interface ClientSettings {
  readonly url: string;
  readonly subject: Subject;
  readonly mode: 'latency' | 'throughput';
  readonly durationMs: number;
  readonly inFlight: number;
  /** The quota every client of a measurement shares. */
  readonly key: string;
}

export interface ClientReport {
  readonly calls: number;
  readonly elapsedMs: number;
  /** Each call's time, in ms (latency mode only). */
  readonly latenciesMs: readonly number[];
}

const settings = JSON.parse(process.argv[2]!) as ClientSettings;
// A quota so large that no call ever waits: what is measured is what the shared check costs.
const HUGE = 1e12;
let call: () => Promise<unknown>;
let close: () => Promise<unknown>;
if (settings.subject === 'RedisLimits') {
  const connection = await connectRedis(settings.url);
  // Part of the burst spent (by each of up to four clients) and a refill of 1e9/s: the bucket stays in Redis, as a busy quota's does
  // (a full one is no key at all, and every call would make it anew).
  const limits = new RedisLimits({ connection, limits: requestLimit(1e9, HUGE), quotaKey: settings.key });
  await limits.acquire({ requests: HUGE / 16, inputTokens: 0, outputTokens: 0 });
  const cost = { requests: 1, inputTokens: 0, outputTokens: 0 };
  call = () => limits.acquire(cost);
  close = () => connection.close();
} else {
  const client = new Redis(settings.url, { enableAutoPipelining: settings.subject === 'RateLimiterRedis, auto-pipelined' });
  const limiter = new RateLimiterRedis({ storeClient: client, points: HUGE, duration: 1, keyPrefix: settings.key });
  call = () => limiter.consume('shared');
  close = () => client.quit();
}
// The scripts loaded and the code warm before the clock starts.
for (let i = 0; i < 2000; i++) await call();
process.send!('ready');
await new Promise<void>((resolve) => process.once('message', () => resolve()));

const latenciesMs: number[] = [];
let calls = 0;
const startMs = performance.now();
const endMs = startMs + settings.durationMs;
if (settings.mode === 'latency') {
  while (performance.now() < endMs) {
    const beforeMs = performance.now();
    await call();
    latenciesMs.push(performance.now() - beforeMs);
    calls++;
  }
} else {
  const loop = async () => {
    while (performance.now() < endMs) {
      await call();
      calls++;
    }
  };
  await Promise.all(Array.from({ length: settings.inFlight }, loop));
}
const report: ClientReport = { calls, elapsedMs: performance.now() - startMs, latenciesMs };
// Disconnecting before a large message is written would drop it.
await new Promise((resolve) => process.send!(report, resolve));
await close();
process.disconnect();
