import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitServerSettings } from './rate-limit-server-child.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

const CHILD = fileURLToPath(new URL('./rate-limit-server-child.ts', import.meta.url));

interface LimitedServer {
  readonly url: string;
  stop(): Promise<void>;
}

/** A node:http server behind `rateLimit()` over a `RedisRateLimitStore`, in a process of its own (see rate-limit-server-child.ts). */
async function startLimitedServer(settings: RateLimitServerSettings): Promise<LimitedServer> {
  const child = fork(CHILD, [JSON.stringify(settings)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.connected) child.send('stop');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.once('message', (message: { url: string }) => resolve(message.url));
      void exited.then(([code, signal]) => reject(new Error(`the server exited (${code ?? signal}) before listening`)));
    });
    return { url, stop };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
  /** When the request was sent and when its answer came, ms (`performance.now()`): the decision lies between. */
  readonly sentMs: number;
  readonly answeredMs: number;
}

async function request(url: string, clientKey: string): Promise<Reply> {
  const sentMs = performance.now();
  const response = await fetch(url, { headers: { 'x-client-key': clientKey } });
  const body = await response.text();
  return { status: response.status, headers: response.headers, body, sentMs, answeredMs: performance.now() };
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: TestRedis;
const servers: LimitedServer[] = [];

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await redis?.stop();
});

describe('rateLimit() over RedisRateLimitStore, in two server processes on one Redis', () => {
  it('enforces one bucket per client across both: burst + rate·t, 429s with the RateLimit headers, other clients untouched; 503 when Redis dies, through with "allow"', async () => {
    const rate = 5;
    const burst = 3;
    const timeoutMs = 500;
    const settings = { redisUrl: redis.url, timeoutMs, rate, burst, prefix: 'e2e-rl:' };
    const [a, b, allowing] = await Promise.all([
      startLimitedServer({ ...settings, onStoreError: 'deny' }),
      startLimitedServer({ ...settings, onStoreError: 'deny' }),
      startLimitedServer({ ...settings, onStoreError: 'allow' }),
    ]);
    servers.push(a!, b!, allowing!);

    // One client, four times its rate: a request every 50 ms for 2 s, to each server in turn.
    const replies: (Reply & { server: 'a' | 'b' })[] = [];
    const startMs = performance.now();
    for (let i = 0; i < 40; i++) {
      await sleepMs(startMs + i * 50 - performance.now());
      const server = i % 2 === 0 ? 'a' : 'b';
      replies.push({ ...(await request((server === 'a' ? a : b)!.url, 'client-1')), server });
    }
    expect(new Set(replies.map((reply) => reply.status))).toEqual(new Set([200, 429]));
    const allowed = replies.filter((reply) => reply.status === 200);
    // Both servers let some through and refused some: the bucket is the same one.
    for (const server of ['a', 'b']) {
      expect(allowed.filter((reply) => reply.server === server).length).toBeGreaterThan(0);
      expect(replies.filter((reply) => reply.server === server && reply.status === 429).length).toBeGreaterThan(0);
    }
    // Every decision was made between its request's sending and its answer, so allowed requests i
    // to j were decided within answeredMs[j] − sentMs[i]: at most burst + rate·t of them.
    let worstExcess = -Infinity;
    for (let i = 0; i < allowed.length; i++) {
      for (let j = i; j < allowed.length; j++) {
        worstExcess = Math.max(worstExcess, j - i + 1 - (burst + (rate * (allowed[j]!.answeredMs - allowed[i]!.sentMs)) / 1000));
      }
    }
    expect(worstExcess).toBeLessThanOrEqual(0);
    // And no fewer than the bucket gave: it starts full, refills for at least the time between the
    // first answer and the last sending, and a request every 50 ms leaves less than a token unused.
    const refillMs = replies.at(-1)!.sentMs - replies[0]!.answeredMs;
    expect(allowed.length).toBeGreaterThanOrEqual(burst + (rate * refillMs) / 1000 - 1);
    console.log(
      JSON.stringify({ allowed: allowed.length, of: replies.length, worstExcess: +worstExcess.toFixed(3), refillMs: Math.round(refillMs) }),
    );

    for (const reply of replies) {
      // A bucket of 3 refilling at 5/s: a quota of 3 over the 0.6 s it takes to refill, rounded up.
      expect(reply.headers.get('ratelimit-policy')).toBe('"default";q=3;w=1');
      expect(reply.headers.get('ratelimit')).toMatch(/^"default";r=\d;t=1$/);
      if (reply.status === 200) {
        expect(reply.headers.get('retry-after')).toBeNull();
      } else {
        expect(reply.headers.get('ratelimit')).toBe('"default";r=0;t=1');
        // Whole seconds, rounded up: the next token is at most 200 ms away.
        expect(reply.headers.get('retry-after')).toBe('1');
        expect(reply.body).toBe('Too many requests, please try again later.');
      }
    }

    // Another client, at the same moment, has its whole burst, shared by both servers.
    const other = [await request(a!.url, 'client-2'), await request(b!.url, 'client-2'), await request(a!.url, 'client-2')];
    expect(other.map((reply) => [reply.status, reply.headers.get('ratelimit')])).toEqual([
      [200, '"default";r=2;t=1'],
      [200, '"default";r=1;t=1'],
      [200, '"default";r=0;t=1'],
    ]);
    expect((await request(b!.url, 'client-2')).status).toBe(429);

    // Redis dies: a take gets no answer, and after the store's timeout a failing store is not a
    // client over its limit: 503 without RateLimit headers by default, through with "allow".
    await redis.kill();
    const down = await Promise.all([request(a!.url, 'client-3'), request(b!.url, 'client-3'), request(allowing!.url, 'client-3')]);
    expect(down.map((reply) => [reply.status, reply.body])).toEqual([
      [503, 'Rate limiting is unavailable, please try again later.'],
      [503, 'Rate limiting is unavailable, please try again later.'],
      [200, 'ok'],
    ]);
    for (const reply of down) {
      expect(reply.headers.get('ratelimit')).toBeNull();
      expect(reply.headers.get('retry-after')).toBeNull();
      expect(reply.answeredMs - reply.sentMs).toBeLessThan(timeoutMs + 1000);
    }
    // Known to be away now: the next take fails at once, without waiting out the timeout again.
    const again = await request(a!.url, 'client-3');
    expect(again.status).toBe(503);
    expect(again.answeredMs - again.sentMs).toBeLessThan(timeoutMs / 2);
    console.log(
      JSON.stringify({
        downAnsweredMs: down.map((reply) => Math.round(reply.answeredMs - reply.sentMs)),
        againAnsweredMs: Math.round(again.answeredMs - again.sentMs),
      }),
    );
  }, 20_000);
});
