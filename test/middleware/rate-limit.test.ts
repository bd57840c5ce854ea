import { createHook } from 'node:async_hooks';
import { createServer, type IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  type FastifyLikeReply,
  RATE_LIMIT_DEFAULTS,
  type RateLimitMiddleware,
  type RateLimitOptions,
  rateLimit,
} from '../../src/middleware/rate-limit.ts';
import { KeyedLimiter, type RateLimitStore } from '../../src/limiter/keyed-limiter.ts';

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** A server answering `ok` behind the limit, listening on a free loopback port. */
interface Running {
  readonly url: string;
  request(headers?: Record<string, string>): Promise<Reply>;
  close(): Promise<void>;
}

type Framework = (limit: RateLimitMiddleware, host: string) => Promise<Running>;

const listening = async (server: Server, host: string, close: () => Promise<void>): Promise<Running> => {
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;
  return {
    url,
    request: async (headers = {}) => {
      const response = await fetch(url, { headers });
      return { status: response.status, headers: response.headers, body: await response.text() };
    },
    close,
  };
};

const closeServer = (server: Server) => () => new Promise<void>((resolve) => server.close(() => resolve()));

const FRAMEWORKS: Record<string, Framework> = {
  'node:http': (limit, host) => {
    const server = createServer((req, res) =>
      limit(req, res, (error) => {
        res.statusCode = error === undefined ? 200 : 500;
        res.end(error === undefined ? 'ok' : String(error));
      }),
    );
    server.listen(0, host);
    return listening(server, host, closeServer(server));
  },
  'Express 5': (limit, host) => {
    const app = express();
    app.use(limit);
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    const server = app.listen(0, host);
    return listening(server, host, closeServer(server));
  },
  Fastify: async (limit, host) => {
    const app = Fastify();
    app.addHook('onRequest', limit.onRequest);
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host });
    const { port } = app.server.address() as AddressInfo;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;
    return {
      url,
      request: async (headers = {}) => {
        const response = await fetch(url, { headers });
        return { status: response.status, headers: response.headers, body: await response.text() };
      },
      close: () => app.close(),
    };
  },
};

let running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.map((server) => server.close()));
  running = [];
});

/** A limit of `burst` on a manual clock (so nothing refills unless the test says), behind `framework`. */
async function start(framework: Framework, options: RateLimitOptions = {}, host = '127.0.0.1') {
  const clock = new ManualClock();
  const limit = rateLimit({ limiter: new KeyedLimiter({ rate: 0.5, burst: 2, clock }), ...options });
  const server = await framework(limit, host);
  running.push(server);
  return { clock, limit, server };
}

/** Answers a refusal with the client's key, so a test can see which bucket a request counted against. */
const keyEcho: RateLimitOptions = { message: (_req, limited) => ({ key: limited.key }) };

describe.each(Object.entries(FRAMEWORKS))('rateLimit() in %s', (_, framework) => {
  it('lets the burst through, then answers 429 with Retry-After and draft-8 headers', async () => {
    const { clock, server } = await start(framework);
    const first = await server.request();
    expect(first.status).toBe(200);
    expect(first.body).toBe('ok');
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=2;w=4');
    expect(first.headers.get('ratelimit')).toBe('"default";r=1;t=2');
    expect(first.headers.get('retry-after')).toBeNull();
    expect((await server.request()).headers.get('ratelimit')).toBe('"default";r=0;t=4');
    clock.set(500);
    const refused = await server.request();
    expect(refused.status).toBe(429);
    expect(refused.body).toBe(RATE_LIMIT_DEFAULTS.message);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.headers.get('ratelimit')).toBe('"default";r=0;t=4');
    clock.set(2000);
    expect((await server.request()).status).toBe(200);
  });

  it('writes draft-7 and the legacy X-RateLimit-* headers when asked', async () => {
    const { server } = await start(framework, { headers: 'draft-7', legacyHeaders: true });
    const before = Date.now();
    const reply = await server.request();
    expect(reply.headers.get('ratelimit')).toBe('limit=2, remaining=1, reset=2');
    expect(reply.headers.get('ratelimit-policy')).toBe('2;w=4');
    expect(reply.headers.get('x-ratelimit-limit')).toBe('2');
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('1');
    const resetS = Number(reply.headers.get('x-ratelimit-reset'));
    expect(resetS).toBeGreaterThanOrEqual(Math.ceil((before + 2000) / 1000));
    expect(resetS).toBeLessThanOrEqual(Math.ceil((Date.now() + 2000) / 1000));
  });

  it('says Retry-After 1, never 0, when the wait is under a second', async () => {
    const { clock, server } = await start(framework);
    await server.request();
    await server.request();
    clock.set(1999);
    const refused = await server.request();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
  });

  it('ignores a spoofed X-Forwarded-For with trustProxy off: every request shares the socket bucket', async () => {
    const { server } = await start(framework, keyEcho);
    expect((await server.request({ 'x-forwarded-for': '198.51.100.1' })).status).toBe(200);
    expect((await server.request({ 'x-forwarded-for': '198.51.100.2' })).status).toBe(200);
    const refused = await server.request({ 'x-forwarded-for': '198.51.100.3' });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toEqual({ key: '127.0.0.1' });
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('with trustProxy, keys the right-most untrusted address: a forged left-most entry gains nothing', async () => {
    const { server } = await start(framework, { ...keyEcho, trustProxy: ['loopback'] });
    for (const forged of ['1.1.1.1', '2.2.2.2']) {
      expect((await server.request({ 'x-forwarded-for': `${forged}, 203.0.113.7:5678` })).status).toBe(200);
    }
    const refused = await server.request({ 'x-forwarded-for': '3.3.3.3, ::ffff:203.0.113.7' });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toEqual({ key: '203.0.113.7' });
    expect((await server.request({ 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
  });

  it('with trustProxy, keys IPv6 clients by their /56: rotating addresses within it shares one bucket', async () => {
    const { server } = await start(framework, { ...keyEcho, trustProxy: 1 });
    expect((await server.request({ 'x-forwarded-for': '2001:db8:abcd:1201::1' })).status).toBe(200);
    expect((await server.request({ 'x-forwarded-for': '[2001:db8:abcd:12ff:ffff::9]:443' })).status).toBe(200);
    const refused = await server.request({ 'x-forwarded-for': '2001:db8:abcd:1234::42' });
    expect(JSON.parse(refused.body)).toEqual({ key: '2001:db8:abcd:1200::/56' });
    expect((await server.request({ 'x-forwarded-for': '2001:db8:abcd:1300::1' })).status).toBe(200);
  });

  it('takes cost(req) tokens per request', async () => {
    const { server } = await start(framework, { cost: (req: IncomingMessage) => Number(req.headers.cost ?? 1) });
    expect((await server.request({ cost: '2' })).headers.get('ratelimit')).toBe('"default";r=0;t=4');
    const refused = await server.request({ cost: '0.5' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await server.request({ cost: '0' })).status).toBe(200);
  });

  it('lets skipped requests through without headers or tokens', async () => {
    const { limit, server } = await start(framework, { skip: async (req: IncomingMessage) => req.headers.health === 'yes' });
    for (let i = 0; i < 3; i++) {
      const reply = await server.request({ health: 'yes' });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('ratelimit')).toBeNull();
    }
    expect((await server.request()).headers.get('ratelimit')).toBe('"default";r=1;t=2');
    expect(limit.figures).toMatchObject({ skipped: 3, allowed: 1, limited: 0 });
  });

  it('answers a refusal with handler(req, res, limited) instead, the headers already set', async () => {
    const { server } = await start(framework, {
      handler: (_req, res, limited) => {
        res.statusCode = 418;
        res.end(`${limited.key} wanted ${limited.cost}, retry in ${limited.decision.retryAfterMs} ms`);
      },
    });
    await server.request();
    await server.request();
    const refused = await server.request();
    expect(refused.status).toBe(418);
    expect(refused.body).toBe('127.0.0.1 wanted 1, retry in 2000 ms');
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.headers.get('ratelimit')).toBe('"default";r=0;t=4');
  });

  it('answers a refusal with statusCode', async () => {
    const { server } = await start(framework, { statusCode: 420 });
    await server.request();
    await server.request();
    const refused = await server.request();
    expect(refused.status).toBe(420);
    expect(refused.body).toBe(RATE_LIMIT_DEFAULTS.message);
    expect(refused.headers.get('retry-after')).toBe('2');
  });

  it.each([
    [undefined, 429],
    [503, 503],
  ])('calls handler with statusCode %s already set on res: %s', async (statusCode, status) => {
    const { server } = await start(framework, { statusCode, handler: (_req, res) => res.end('handled') });
    await server.request();
    await server.request();
    const refused = await server.request();
    expect(refused.status).toBe(status);
    expect(refused.body).toBe('handled');
  });

  it('passes an error of a callback on: a key that is not a string is a 500, not a limit', async () => {
    const { limit, server } = await start(framework, { key: () => undefined as unknown as string });
    const reply = await server.request();
    expect(reply.status).toBe(500);
    expect(limit.figures).toMatchObject({ allowed: 0, limited: 0 });
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('connection refused');
      },
    ],
    ['rejects', () => Promise.reject(new Error('connection refused'))],
  ])('with a store that %s: 503 by default, through with "allow"; logged once per outage and counted', async (_how, failing) => {
    let down = true;
    const store: RateLimitStore = {
      rate: 1,
      burst: 5,
      take: () => (down ? failing() : { allowed: true, limit: 5, remaining: 4, resetMs: 1000, retryAfterMs: 0 }),
    };
    const lines: { msg: string; failures?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });

    const denied = rateLimit({ limiter: store, logger });
    const deny = await framework(denied, '127.0.0.1');
    running.push(deny);
    for (let i = 0; i < 2; i++) {
      const reply = await deny.request();
      expect(reply.status).toBe(503);
      expect(reply.body).toBe('Rate limiting is unavailable, please try again later.');
      expect(reply.headers.get('ratelimit')).toBeNull();
    }
    expect(denied.figures).toMatchObject({ storeErrors: 2, allowed: 0, limited: 0, keys: undefined });

    const allowed = rateLimit({ limiter: store, onStoreError: 'allow' });
    const allow = await framework(allowed, '127.0.0.1');
    running.push(allow);
    expect((await allow.request()).status).toBe(200);
    expect(allowed.figures).toMatchObject({ storeErrors: 1, allowed: 0 });

    down = false;
    expect((await deny.request()).status).toBe(200);
    expect(lines.map((line) => line.msg)).toEqual(['rate limit store failed', 'rate limit store recovered']);
    expect(lines[1]!.failures).toBe(2);
  });
});

/** A server whose handler answers with what the limit set on the request (and, in Fastify, on `request.raw`), as JSON. */
type Echoing = (limit: RateLimitMiddleware, property: string) => Promise<Running>;

const fetching =
  (url: string): Running['request'] =>
  async (headers = {}) => {
    const response = await fetch(url, { headers });
    return { status: response.status, headers: response.headers, body: await response.text() };
  };

const ECHOING: Record<string, Echoing> = {
  'node:http': (limit, property) => {
    const server = createServer((req, res) =>
      limit(req, res, () => res.end(JSON.stringify({ request: (req as unknown as Record<string, unknown>)[property] }))),
    );
    server.listen(0, '127.0.0.1');
    return listening(server, '127.0.0.1', closeServer(server));
  },
  'Express 5': (limit, property) => {
    const app = express();
    app.use(limit);
    app.get('/', (req, res) => {
      res.json({ request: (req as unknown as Record<string, unknown>)[property] });
    });
    const server = app.listen(0, '127.0.0.1');
    return listening(server, '127.0.0.1', closeServer(server));
  },
  'Fastify 5': async (limit, property) => {
    const app = Fastify();
    app.addHook('onRequest', limit.onRequest);
    app.get('/', async (request) => ({
      request: (request as unknown as Record<string, unknown>)[property],
      raw: (request.raw as unknown as Record<string, unknown>)[property],
    }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`;
    return { url, request: fetching(url), close: () => app.close() };
  },
};

describe.each(Object.entries(ECHOING))("rateLimit() sets the request's limit in %s", (name, echoing) => {
  const serve = async (options: RateLimitOptions, property = 'rateLimit') => {
    const clock = new ManualClock();
    const limit = rateLimit({ limiter: new KeyedLimiter({ rate: 0.5, burst: 2, clock }), ...options });
    const server = await echoing(limit, property);
    running.push(server);
    return server;
  };
  /** What the handler saw, from the request (and from request.raw in Fastify, the same). */
  const seen = (reply: Reply): unknown => {
    const body = JSON.parse(reply.body) as { request: unknown; raw?: unknown };
    if (name === 'Fastify 5') expect(body.raw).toEqual(body.request);
    return body.request;
  };
  const resetNear = (fromMs: number, toMs: number) =>
    expect.toSatisfy((time: string) => Date.parse(time) >= fromMs && Date.parse(time) <= Math.ceil(toMs));

  it('on req.rateLimit: limit, used, remaining, resetTime and key, as express-rate-limit names them', async () => {
    const server = await serve({});
    const before = Date.now();
    const reply = await server.request();
    expect(seen(reply)).toEqual({
      limit: 2,
      used: 1,
      remaining: 1,
      resetTime: resetNear(before + 2000, Date.now() + 2000),
      key: '127.0.0.1',
    });
    expect(seen(await server.request())).toMatchObject({ used: 2, remaining: 0 });
  });

  it('on a refused request too, before message runs; on none that skip lets through', async () => {
    const server = await serve({
      skip: (req) => req.headers.health === 'yes',
      message: (req) => ({ seen: (req as unknown as Record<string, unknown>).rateLimit ?? null }),
    });
    expect(JSON.parse((await server.request({ health: 'yes' })).body)).toEqual({});
    await server.request();
    await server.request();
    const before = Date.now();
    const refused = await server.request();
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toEqual({
      seen: { limit: 2, used: 2, remaining: 0, resetTime: resetNear(before + 4000, Date.now() + 4000), key: '127.0.0.1' },
    });
  });

  it('on the property requestPropertyName names', async () => {
    const server = await serve({ requestPropertyName: 'limits' }, 'limits');
    expect(seen(await server.request())).toMatchObject({ limit: 2, used: 1, remaining: 1, key: '127.0.0.1' });
  });
});

describe('rateLimit() over IPv6 sockets', () => {
  it('keys an IPv6 peer by its /56 and folds an IPv4-mapped peer to IPv4', async () => {
    const v6 = await start(FRAMEWORKS['node:http']!, keyEcho, '::1');
    await v6.server.request();
    await v6.server.request();
    expect(JSON.parse((await v6.server.request()).body)).toEqual({ key: '0:0:0:0::/56' });

    // A dual-stack listener sees an IPv4 client as ::ffff:127.0.0.1.
    const dual = await start(FRAMEWORKS['node:http']!, keyEcho, '::');
    const url = dual.server.url.replace('[::]', '127.0.0.1');
    await fetch(url);
    await fetch(url);
    expect(await (await fetch(url)).json()).toEqual({ key: '127.0.0.1' });
  });
});

/** The promises created while `run` runs (async_hooks sees every one, the engine's own included). */
function promisesMadeBy(run: () => void): number {
  let made = 0;
  const hook = createHook({
    init: (_id, type) => {
      if (type === 'PROMISE') made++;
    },
  }).enable();
  try {
    run();
  } finally {
    hook.disable();
  }
  return made;
}

describe('rateLimit() with callbacks and a store that answer at once', () => {
  const request = () => ({ socket: { remoteAddress: '127.0.0.1' }, headers: {} }) as IncomingMessage;
  const response = () => ({ statusCode: 200, setHeader() {}, end() {} }) as unknown as ServerResponse;
  const reply = (): FastifyLikeReply => {
    const raw = response();
    const self: FastifyLikeReply = { raw, code: () => self, header: () => self, type: () => self, send: () => self, hijack: () => self };
    return self;
  };
  const sync: RateLimitOptions = { skip: () => false, key: () => 'k', cost: () => 1, message: () => 'slow down' };

  it('decides within the call, making no promise: let through and refused, in the middleware and the Fastify hook', () => {
    const limit = rateLimit({ limiter: new KeyedLimiter({ rate: 1, burst: 2, clock: new ManualClock() }), ...sync });
    const outcomes: string[] = [];
    const made = promisesMadeBy(() => {
      for (let i = 0; i < 2; i++) limit(request(), response(), () => outcomes.push('next'));
      limit(request(), response(), () => outcomes.push('next'));
      limit.onRequest({ raw: request() }, reply(), () => outcomes.push('done'));
    });
    expect(made).toBe(0);
    expect(outcomes).toEqual(['next', 'next']);
    expect(limit.figures).toMatchObject({ allowed: 2, limited: 2 });
    const counted = request();
    limit(counted, response(), () => {});
    expect((counted as unknown as { rateLimit: unknown }).rateLimit).toMatchObject({ limit: 2, used: 2, remaining: 0, key: 'k' });
  });

  it('makes promises only once a callback gives one (what the count above would see)', () => {
    const limit = rateLimit({
      limiter: new KeyedLimiter({ rate: 1, burst: 2, clock: new ManualClock() }),
      ...sync,
      skip: async () => false,
    });
    expect(promisesMadeBy(() => limit(request(), response(), () => {}))).toBeGreaterThan(0);
  });
});

describe("rateLimit() with express-rate-limit's names", () => {
  const serve = async (limit: RateLimitMiddleware) => {
    const server = await FRAMEWORKS['node:http']!(limit, '127.0.0.1');
    running.push(server);
    return server;
  };
  const limiter = () => new KeyedLimiter({ rate: 0.5, burst: 2, clock: new ManualClock() });

  it('keyGenerator is key, called with the request and the response as there', async () => {
    const seen: unknown[] = [];
    const server = await serve(
      rateLimit({
        limiter: limiter(),
        keyGenerator: (req, res) => {
          seen.push(res instanceof ServerResponse);
          return String(req.headers.user);
        },
        ...keyEcho,
      }),
    );
    await server.request({ user: 'ann' });
    await server.request({ user: 'ann' });
    expect(JSON.parse((await server.request({ user: 'ann' })).body)).toEqual({ key: 'ann' });
    expect((await server.request({ user: 'bob' })).status).toBe(200);
    expect(seen).toEqual([true, true, true, true]);
  });

  it.each([
    [true, { 'ratelimit-policy': '2;w=4', 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '2', ratelimit: null }],
    ['draft-6', { 'ratelimit-policy': '2;w=4', 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '2' }],
    ['draft-7', { 'ratelimit-policy': '2;w=4', ratelimit: 'limit=2, remaining=1, reset=2', 'ratelimit-limit': null }],
    ['draft-8', { 'ratelimit-policy': '"default";q=2;w=4', ratelimit: '"default";r=1;t=2' }],
    [false, { 'ratelimit-policy': null, ratelimit: null, 'ratelimit-limit': null }],
  ] as const)('standardHeaders: %o is headers, true being draft-6 as there', async (standardHeaders, expected) => {
    const server = await serve(rateLimit({ limiter: limiter(), standardHeaders }));
    const reply = await server.request();
    expect(Object.fromEntries(Object.keys(expected).map((name) => [name, reply.headers.get(name)]))).toEqual(expected);
  });

  it('limit (or max) per windowMs is a bucket of that burst refilled over the window', async () => {
    for (const options of [
      { limit: 100, windowMs: 15 * 60_000 },
      { max: 100, windowMs: 15 * 60_000 },
    ]) {
      const { store } = rateLimit(options);
      expect([store.burst, store.rate]).toEqual([100, 100 / 900]);
      const server = await serve(rateLimit({ ...options, key: () => 'k' }));
      expect((await server.request()).headers.get('ratelimit-policy')).toBe('"default";q=100;w=900');
    }
    expect([rateLimit({ limit: 10 }).store.rate, rateLimit({ windowMs: 1000 }).store.burst]).toEqual([10 / 60, 60]);
  });

  it('identifier is policyName, store is limiter', async () => {
    const store = limiter();
    const limit = rateLimit({ store, identifier: 'api' });
    expect(limit.store).toBe(store);
    expect((await (await serve(limit)).request()).headers.get('ratelimit')).toBe('"api";r=1;t=2');
  });

  it.each([
    [true, 200],
    [false, 503],
  ])('passOnStoreError: %s is onStoreError "allow" or "deny": %s', async (passOnStoreError, status) => {
    const failing: RateLimitStore = { rate: 1, burst: 5, take: () => Promise.reject(new Error('connection refused')) };
    const limit = rateLimit({ limiter: failing, passOnStoreError });
    expect((await (await serve(limit)).request()).status).toBe(status);
    expect(limit.figures.storeErrors).toBe(1);
  });
});

describe('rateLimit() metrics', () => {
  it('counts allowed, limited and skipped, with live keys, into a prom-client registry shared by policies', async () => {
    const registry = new Registry();
    const clock = new ManualClock();
    const api = rateLimit({ limiter: new KeyedLimiter({ rate: 1, burst: 1, clock }), registry, policyName: 'api' });
    const login = rateLimit({ limiter: new KeyedLimiter({ rate: 1, burst: 1, clock }), registry, policyName: 'login', skip: () => true });
    const server = await FRAMEWORKS['node:http']!(api, '127.0.0.1');
    running.push(server);
    await server.request();
    await server.request();
    await new Promise<void>((resolve) => login({} as IncomingMessage, {} as never, () => resolve()));
    const text = await registry.metrics();
    expect(text).toContain('http_rate_limit_requests_total{policy="api",outcome="allowed"} 1');
    expect(text).toContain('http_rate_limit_requests_total{policy="api",outcome="limited"} 1');
    expect(text).toContain('http_rate_limit_requests_total{policy="login",outcome="skipped"} 1');
    expect(text).toContain('http_rate_limit_keys{policy="api"} 1');
    expect(text).toContain('http_rate_limit_keys{policy="login"} 0');
    expect(api.figures).toEqual({ allowed: 1, limited: 1, skipped: 0, storeErrors: 0, keys: 1 });
    expect(() => rateLimit({ registry, policyName: 'api' })).toThrow(
      new TypeError('Expected policyName to be unique among the rate limits sharing a registry, got "api"'),
    );
  });
});

describe('rateLimit() options', () => {
  it('is exported from news-processor/middleware with the pieces a server needs', async () => {
    const api = await import('../../src/middleware/index.ts');
    for (const name of [
      'rateLimit',
      'RATE_LIMIT_DEFAULTS',
      'KeyedLimiter',
      'KEYED_LIMITER_DEFAULTS',
      'clientAddressKey',
      'CLIENT_ADDRESS_DEFAULTS',
    ]) {
      expect(api, name).toHaveProperty(name);
    }
  });

  it('defaults to 60 a minute per client address, draft-8 headers, 503 on a store error', () => {
    expect(RATE_LIMIT_DEFAULTS).toEqual({
      rate: 1,
      burst: 60,
      windowMs: 60_000,
      cost: 1,
      headers: 'draft-8',
      legacyHeaders: false,
      policyName: 'default',
      message: 'Too many requests, please try again later.',
      statusCode: 429,
      requestPropertyName: 'rateLimit',
      onStoreError: 'deny',
    });
    expect(Object.isFrozen(RATE_LIMIT_DEFAULTS)).toBe(true);
    const limit = rateLimit();
    expect(limit.store).toBeInstanceOf(KeyedLimiter);
    expect([limit.store.rate, limit.store.burst]).toEqual([1, 60]);
  });

  const store: RateLimitStore = {
    rate: 1,
    burst: 1,
    take: () => ({ allowed: true, limit: 1, remaining: 0, resetMs: 0, retryAfterMs: 0 }),
  };
  it.each<[unknown, string]>([
    [null, 'Expected options to be an object, got null'],
    [{ rate: 0 }, 'Expected rate to be a number > 0 (tokens per second), got 0'],
    [{ rate: Number.NaN }, 'Expected rate to be a number > 0 (tokens per second), got NaN'],
    [{ burst: 0 }, 'Expected burst to be an integer >= 1, got 0'],
    [{ burst: 2.5 }, 'Expected burst to be an integer >= 1, got 2.5'],
    [{ limiter: store, rate: 2 }, 'Expected rate and burst to be left out with a limiter (it has its own), got {"rate":2}'],
    [{ limiter: 'redis' }, 'Expected limiter to be an object, got "redis"'],
    [{ limiter: { ...store, take: undefined } }, 'Expected limiter.take to be a function, got undefined'],
    [{ limiter: { ...store, rate: 0 } }, 'Expected limiter.rate to be a number > 0 (tokens per second), got 0'],
    [{ limiter: { ...store, burst: 0.5 } }, 'Expected limiter.burst to be a finite number >= 1, got 0.5'],
    [{ key: 'ip' }, 'Expected key to be a function, got "ip"'],
    [{ cost: -1 }, 'Expected cost to be a finite number >= 0, got -1'],
    [{ cost: '2' }, 'Expected cost to be a function, got "2"'],
    [{ skip: true }, 'Expected skip to be a function, got true'],
    [{ headers: 'draft-5' }, 'Expected headers to be one of "draft-8", "draft-7", "draft-6", false, got "draft-5"'],
    [{ headers: true }, 'Expected headers to be one of "draft-8", "draft-7", "draft-6", false, got true'],
    [{ legacyHeaders: 'yes' }, 'Expected legacyHeaders to be a boolean, got "yes"'],
    [{ policyName: 'my policy' }, 'Expected policyName to be 1 to 64 letters, digits or -_.:, got "my policy"'],
    [{ policyName: '"x"' }, 'Expected policyName to be 1 to 64 letters, digits or -_.:, got "\\"x\\""'],
    [{ message: 42 }, 'Expected message to be a string, an object or a function, got 42'],
    [{ message: null }, 'Expected message to be a string, an object or a function, got null'],
    [{ handler: 'send' }, 'Expected handler to be a function, got "send"'],
    [{ onStoreError: 'ignore' }, 'Expected onStoreError to be one of "deny", "allow", got "ignore"'],
    [{ registry: 'default' }, 'Expected registry to be an object, got "default"'],
    [{ trustProxy: true }, 'Expected trustProxy to be false, a number of hops or a list of addresses and CIDRs, got true'],
    [{ key: () => 'k', ipv6Subnet: 128 }, 'Expected ipv6Subnet to be an integer in [32, 64], got 128'],
    [{ logger: { error() {}, warn() {} } }, 'Expected logger.child to be a function, got undefined'],
    // express-rate-limit's names: each the same option as ours, so not both at once.
    [{ key: () => 'a', keyGenerator: () => 'b' }, 'Expected keyGenerator to be left out with key (they are one option), got function'],
    [
      { headers: 'draft-7', standardHeaders: 'draft-7' },
      'Expected standardHeaders to be left out with headers (they are one option), got "draft-7"',
    ],
    [{ policyName: 'a', identifier: 'b' }, 'Expected identifier to be left out with policyName (they are one option), got "b"'],
    [
      { onStoreError: 'allow', passOnStoreError: true },
      'Expected passOnStoreError to be left out with onStoreError (they are one option), got true',
    ],
    [{ limiter: store, store }, 'Expected store to be left out with limiter (they are one option), got {"rate":1,"burst":1}'],
    [{ limit: 5, max: 5 }, 'Expected max to be left out with limit (they are one option), got 5'],
    [
      { limit: 5, burst: 5 },
      'Expected rate and burst to be left out with limit and windowMs (a quota per window is the bucket), got {"burst":5}',
    ],
    [
      { windowMs: 1000, rate: 5 },
      'Expected rate and burst to be left out with limit and windowMs (a quota per window is the bucket), got {"rate":5}',
    ],
    [{ store, rate: 2 }, 'Expected rate and burst to be left out with a store (it has its own), got {"rate":2}'],
    [
      { limiter: store, windowMs: 1000 },
      'Expected limit and windowMs to be left out with a limiter (it has its own), got {"windowMs":1000}',
    ],
    [{ store: { increment() {}, decrement() {}, resetKey() {} } }, 'Expected store.take to be a function, got undefined'],
    [{ keyGenerator: 'ip' }, 'Expected keyGenerator to be a function, got "ip"'],
    [{ standardHeaders: 'draft-9' }, 'Expected standardHeaders to be one of "draft-8", "draft-7", "draft-6", true, false, got "draft-9"'],
    [{ identifier: () => 'per-route' }, 'Expected identifier to be 1 to 64 letters, digits or -_.:, got function'],
    [{ passOnStoreError: 'yes' }, 'Expected passOnStoreError to be a boolean, got "yes"'],
    [{ limit: () => 10 }, 'Expected limit to be an integer >= 1, got function'],
    [{ max: 0 }, 'Expected max to be an integer >= 1, got 0'],
    [{ windowMs: 0 }, 'Expected windowMs to be a finite number > 0 (ms), got 0'],
    [{ statusCode: 200 }, 'Expected statusCode to be an integer in [400, 599], got 200'],
    [{ statusCode: '429' }, 'Expected statusCode to be an integer in [400, 599], got "429"'],
    [{ requestPropertyName: '' }, 'Expected requestPropertyName to be a non-empty string, got ""'],
    // express-rate-limit's options with no counterpart: refused, not ignored.
    [
      { skipSuccessfulRequests: true },
      'Expected skipSuccessfulRequests to be left out (a token bucket takes before the response exists: give such requests cost 0, or skip them), got true',
    ],
    [
      { skipFailedRequests: true },
      'Expected skipFailedRequests to be left out (a token bucket takes before the response exists: give such requests cost 0, or skip them), got true',
    ],
    [
      { requestWasSuccessful: () => true },
      'Expected requestWasSuccessful to be left out (a token bucket takes before the response exists: give such requests cost 0, or skip them), got function',
    ],
    [{ retryAfter: 60 }, "Expected retryAfter to be left out (Retry-After is the bucket's own wait, in whole seconds), got 60"],
    [{ validate: false }, 'Expected validate to be left out (the options are checked once, here, and a mistake throws), got false'],
  ])('throws a TypeError for %o', (options, message) => {
    expect(() => rateLimit(options as unknown as RateLimitOptions)).toThrow(new TypeError(message));
  });

  it('refuses a cost(req) that is not a finite number >= 0, taking nothing', async () => {
    const limiter = new KeyedLimiter({ rate: 1, burst: 2, clock: new ManualClock() });
    const limit = rateLimit({ limiter, cost: () => -1 });
    const error = await new Promise((resolve) =>
      limit({ socket: { remoteAddress: '127.0.0.1' }, headers: {} } as IncomingMessage, {} as never, resolve),
    );
    expect(error).toEqual(new TypeError('Expected cost(req) to be a finite number >= 0, got -1'));
    expect(limiter.size).toBe(0);
  });
});
