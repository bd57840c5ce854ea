import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestLimit } from '../../src/index.ts';
import {
  connectRedis,
  RedisBudget,
  RedisLimits,
  RedisRateLimitStore,
  type RedisConnection,
  RedisPermissionError,
} from '../../src/redis/index.ts';
import { ArticleQueue, queueRedisOf } from '../../src/queue/index.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

let redis: TestRedis;
let admin: Redis;
const open: RedisConnection[] = [];

/** ACL users of the test's own, each with the password "pw": what they lack is in their name. */
const USERS: Readonly<Record<string, readonly string[]>> = {
  // Exactly what the limiter needs, and nothing else: not INFO, not PING.
  enough: ['~news-processor:*', '+evalsha', '+eval', '+time', '+get', '+set', '+del'],
  'other-keys': ['~other:*', '+@all'],
  'no-scripting': ['~*', '+@all', '-@scripting'],
  'no-set': ['~news-processor:*', '+evalsha', '+eval', '+time', '+get', '+del'],
  'read-only-keys': ['%R~news-processor:*', '+@all'],
  budget: ['~news-processor:*', '+evalsha', '+eval', '+get', '+incrby', '+decrby'],
  // A password that must be URL-encoded, and SELECT for a database of the URL's path.
  encoded: ['~news-processor:*', '+evalsha', '+eval', '+time', '+get', '+set', '+del', '+select'],
  // Everything but INFO, which ioredis's ready check and BullMQ run.
  'no-info': ['~*', '+@all', '-info'],
};

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  for (const [user, rules] of Object.entries(USERS)) {
    await admin.acl('SETUSER', user, 'on', user === 'encoded' ? '>p@ss:w/rd%' : '>pw', ...rules);
  }
});

afterAll(async () => {
  await Promise.all(open.map((connection) => connection.close()));
  admin?.disconnect();
  await redis?.stop();
});

async function connectAs(user: string): Promise<RedisConnection> {
  const connection = await connectRedis(`redis://${user}:pw@127.0.0.1:${redis.port}`);
  open.push(connection);
  return connection;
}

const ONE_CALL = { requests: 1, inputTokens: 0, outputTokens: 0 };
const NEEDS = '~news-processor:* +evalsha +eval +time +get +set +del';

describe('RedisLimits.check', () => {
  it('passes for a user with just the commands and keys the limiter uses, which then does all it does, printing nothing', async () => {
    const warn = vi.spyOn(console, 'warn');
    try {
      const connection = await connectAs('enough');
      const limits = new RedisLimits({
        connection,
        limits: [
          { kind: 'requests', rate: 10, burst: 2 },
          { kind: 'tokens', rate: 1000, burst: 1000 },
        ],
        quotaKey: 'acl',
      });
      await limits.check();
      const grant = await limits.acquire({ requests: 1, inputTokens: 100, outputTokens: 100 });
      grant.settle({ inputTokens: 10, outputTokens: 10 });
      limits.setRate(5);
      limits.lowerTo('requests', 1);
      const controller = new AbortController();
      await limits.acquire(ONE_CALL);
      const waiting = limits.acquire(ONE_CALL, { signal: controller.signal });
      controller.abort(new Error('stop'));
      await expect(waiting).rejects.toThrow('stop');
      await limits.acquire(ONE_CALL, { maxWaitMs: 5000 });
      expect(connection.available).toBe(true);
      expect(limits.rate).toBe(5);
      // ioredis warns on the console when its ready check may not run INFO: it is not run.
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it.each([
    ['other-keys', 'NOPERM this user has no permissions to access one of the keys used as arguments'],
    ['no-scripting', "NOPERM this user has no permissions to run the 'eval' command"],
    ['no-set', "NOPERM this user has no permissions to run 'set news-processor:{refused}:requests 0 PX 1'"],
    ['read-only-keys', 'NOPERM this user has no permissions to access one of the keys used as arguments'],
  ])('refuses user %s before any call, naming the user, what Redis refused and what it needs', async (user, detail) => {
    const connection = await connectAs(user);
    const limits = new RedisLimits({ connection, limits: requestLimit(10, 2), quotaKey: 'refused' });
    const error = await limits.check().catch((e: unknown) => e);
    expect(error instanceof RedisPermissionError).toBe(true);
    expect((error as Error).message).toBe(`Redis user "${user}" may not run the limiter: ${detail}; it needs ${NEEDS}`);
    expect(await admin.exists('news-processor:{refused}:requests')).toBe(0);
  });

  it('names the key pattern of the prefix in use', async () => {
    const connection = await connectAs('enough');
    const limits = new RedisLimits({ connection, limits: requestLimit(10, 2), quotaKey: 'acl', prefix: 'team:' });
    await expect(limits.check()).rejects.toThrow(/; it needs ~team:\* \+evalsha/);
  });
});

describe('RedisRateLimitStore.check', () => {
  it('passes for a user that may keep the buckets under the prefix, and refuses one that may not', async () => {
    const store = new RedisRateLimitStore({ connection: await connectAs('enough'), rate: 1, burst: 1 });
    await store.check();
    expect((await store.take('client')).allowed).toBe(true);
    const elsewhere = new RedisRateLimitStore({ connection: await connectAs('enough'), rate: 1, burst: 1, prefix: 'rl:' });
    await expect(elsewhere.check()).rejects.toThrow(
      'Redis user "enough" may not run the limiter: NOPERM this user has no permissions to access one of the keys used as arguments; it needs ~rl:* +evalsha',
    );
  });
});

describe('RedisBudget.check', () => {
  it('asks for the commands the budget runs, not the limiter’s', async () => {
    const budget = new RedisBudget({ connection: await connectAs('enough'), key: 'acl', maxUsd: 1 });
    await expect(budget.check()).rejects.toThrow(
      `Redis user "enough" may not run the limiter: NOPERM this user has no permissions to run 'incrby news-processor:{budget:acl} 1'; it needs ~news-processor:* +evalsha +eval +get +incrby +decrby`,
    );
    await new RedisBudget({ connection: await connectAs('budget'), key: 'acl', maxUsd: 1 }).check();
  });
});

describe('connectRedis URLs', () => {
  it('reads a URL-encoded password, the user and the database of the path, and hides the password', async () => {
    const connection = await connectRedis(`redis://encoded:p%40ss%3Aw%2Frd%25@127.0.0.1:${redis.port}/3`);
    open.push(connection);
    expect(connection.url).toBe(`redis://encoded:***@127.0.0.1:${redis.port}/3`);
    expect([connection.target.username, connection.target.db]).toEqual(['encoded', 3]);
    const limits = new RedisLimits({ connection, limits: requestLimit(0.001, 5), quotaKey: 'in-db-3' });
    await limits.check();
    await limits.acquire(ONE_CALL);
    const db3 = new Redis(`redis://127.0.0.1:${redis.port}/3`);
    try {
      expect(await db3.exists('news-processor:{in-db-3}:requests')).toBe(1);
      expect(await admin.exists('news-processor:{in-db-3}:requests')).toBe(0);
    } finally {
      db3.disconnect();
    }
  });
});

describe("the queue's clients", () => {
  it('refuse a user that may not run INFO with the one error BullMQ gives, and ioredis prints no warning of its own', async () => {
    const warn = vi.spyOn(console, 'warn');
    try {
      const connection = await connectAs('no-info');
      const error = await ArticleQueue.open({ redis: queueRedisOf(connection), name: 'acl' }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/NOPERM this user has no permissions to run the 'info' command/);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
