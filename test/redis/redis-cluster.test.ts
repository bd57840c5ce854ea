import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLimit } from '../../src/index.ts';
import { isLimiterUnavailableError } from '../../src/mechanisms.ts';
import { connectRedis, RedisLimits, RedisRateLimitStore, type RedisConnection, RedisRedirectError } from '../../src/redis/index.ts';
import { clusterSlot, namesOnEveryNode, slotRanges } from './cluster-slot.ts';
import { startRedisCluster, type TestCluster } from './redis-server.ts';
import { excessFromFirst, firstCallTokens, runSharedQuota, stray429s } from './shared-quota.ts';

let cluster: TestCluster;
let connection: RedisConnection;
/** A quota name for each node (by port), its `{name}` hashing to a slot that node serves. */
let names: Map<number, string>;
/** A plain client to each node, for looking at the keys it holds. */
let nodes: Map<number, Redis>;

beforeAll(async () => {
  cluster = await startRedisCluster();
  connection = await connectRedis(cluster.url);
  nodes = new Map(cluster.nodes.map((node) => [node.port, new Redis(node.url)]));
  names = namesOnEveryNode(slotRanges(await nodes.get(cluster.nodes[0]!.port)!.cluster('SLOTS')), 'quota');
});

afterAll(async () => {
  await connection?.close();
  for (const node of nodes?.values() ?? []) node.disconnect();
  await cluster?.stop();
});

const ONE_CALL = { requests: 1, inputTokens: 0, outputTokens: 0 };

describe('RedisLimits on a Redis Cluster', () => {
  it('is found to be a cluster at connect, and keeps a quota on every node: the burst at once, then one call per 1/rate, never early', async () => {
    expect(connection.target.cluster).toBe(true);
    expect(names.size).toBe(3);
    await Promise.all(
      [...names].map(async ([port, quotaKey]) => {
        const limits = new RedisLimits({ connection, limits: requestLimit(20, 2), quotaKey });
        await limits.check();
        const startMs = performance.now();
        const grantedMs: number[] = [];
        // Redis decides the waits: none for the burst (a max wait of 0 refuses any), at most one period after.
        for (let i = 0; i < 5; i++) {
          await limits.acquire(ONE_CALL, { maxWaitMs: i < 2 ? 0 : 50 });
          grantedMs.push(performance.now() - startMs);
        }
        for (let i = 2; i < 5; i++) expect(grantedMs[i]).toBeGreaterThanOrEqual((i - 1) * 50 - 1);
        // The bucket is on the node that serves its slot, and on no other.
        for (const [other, node] of nodes) {
          const held = await node.call('EXISTS', limits.keys[0]!).catch(() => 0);
          expect(held, `${limits.keys[0]} on node ${other}`).toBe(other === port ? 1 : 0);
        }
      }),
    );
  });

  it('reserves requests and tokens in one script on any node: every key of a quota hashes to its slot', async () => {
    for (const quotaKey of names.values()) {
      const limits = new RedisLimits({
        connection,
        limits: [
          { kind: 'requests', rate: 0.001, burst: 3 },
          { kind: 'tokens', rate: 0.001, burst: 100 },
        ],
        quotaKey,
        prefix: 'two:',
      });
      expect(new Set(limits.keys.map(clusterSlot))).toEqual(new Set([clusterSlot(`{${quotaKey}}`)]));
      await limits.check();
      const grant = await limits.acquire({ requests: 1, inputTokens: 80, outputTokens: 10 });
      grant.settle({ inputTokens: 20, outputTokens: 10 });
      // 100 - 90 + 60 = 70 tokens left: 40 more fit, 80 would not (nothing refills meanwhile).
      await limits.acquire({ requests: 1, inputTokens: 40, outputTokens: 0 }, { maxWaitMs: 1000 });
      await expect(limits.acquire({ requests: 1, inputTokens: 80, outputTokens: 0 }, { maxWaitMs: 1000 })).rejects.toThrow(/maxWait|wait/i);
    }
  });

  it('keeps the middleware store’s clients on their own slots, across the nodes', async () => {
    const store = new RedisRateLimitStore({ connection, rate: 0.001, burst: 2, prefix: 'rl-cluster:' });
    await store.check();
    const clients = Array.from({ length: 12 }, (_, i) => `client-${i}`);
    const ports = new Set<number>();
    for (const client of clients) {
      const decisions = [await store.take(client), await store.take(client), await store.take(client)];
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
      for (const [port, node] of nodes) if ((await node.call('EXISTS', `rl-cluster:${client}`).catch(() => 0)) === 1) ports.add(port);
    }
    expect(ports.size).toBe(3);
  });

  it('shares a quota exactly between three processes through a node other than the one given', async () => {
    const quotaKey = names.get(cluster.nodes[2]!.port)!;
    const rate = 30;
    const burst = 3;
    const run = await runSharedQuota({
      redisUrl: cluster.url,
      processes: 3,
      articlesPerProcess: 10,
      workersPerProcess: 3,
      rate,
      burst,
      serverQuota: { rate, burst },
      quotaKey,
    });
    expect(run.summaries.map((s) => s.failureReasons)).toEqual([{}, {}, {}]);
    expect(run.refused).toBeLessThanOrEqual(stray429s(60));
    expect(run.sentAtMs).toHaveLength(60 + run.refused);
    expect(excessFromFirst(run.sentAtMs, rate, burst)).toBeLessThanOrEqual(1 + firstCallTokens(rate));
    expect(run.sentAtMs.at(-1)! - run.sentAtMs[0]!).toBeGreaterThanOrEqual(((60 - burst) / rate) * 1000 - 1000 / rate);
  }, 30_000);

  it('builds further clients with the same settings from the connection’s target (a queue’s own connections)', async () => {
    const client = connection.target.createClient({ maxRetriesPerRequest: null });
    try {
      for (const name of names.values()) await client.set(`{${name}}:queue-check`, 'x', 'PX', 10_000);
      for (const name of names.values()) expect(await client.get(`{${name}}:queue-check`)).toBe('x');
    } finally {
      client.disconnect();
    }
  });

  it('says out of cluster mode which node serves the quota, at the check and on a call, and does not go local for it', async () => {
    const plain = await connectRedis(cluster.url, { cluster: false });
    try {
      expect(plain.target.cluster).toBe(false);
      const elsewhere = names.get(cluster.nodes[1]!.port)!;
      const limits = new RedisLimits({ connection: plain, limits: requestLimit(10, 2), quotaKey: elsewhere, fallbackShare: 0.5 });
      const error = await limits.check().catch((e: unknown) => e);
      expect(error instanceof RedisRedirectError).toBe(true);
      const slot = clusterSlot(`{${elsewhere}}`);
      expect((error as Error).message).toBe(
        `Redis at ${cluster.url} is a Redis Cluster node, and news-processor:{${elsewhere}}:requests (slot ${slot}) is served by 127.0.0.1:${cluster.nodes[1]!.port} (MOVED): connect in cluster mode`,
      );
      await expect(limits.acquire(ONE_CALL)).rejects.toBeInstanceOf(RedisRedirectError);
      expect(plain.available).toBe(true);
      // The quota that does live on this node is served.
      await new RedisLimits({ connection: plain, limits: requestLimit(10, 2), quotaKey: names.get(cluster.nodes[0]!.port)! }).check();
    } finally {
      await plain.close();
    }
  });

  it('fails the calls of a node that died with LimiterUnavailableError within the timeout, as for a lost Redis', async () => {
    const short = await connectRedis(cluster.url, { timeoutMs: 500 });
    try {
      const dying = cluster.nodes[2]!;
      const limits = new RedisLimits({ connection: short, limits: requestLimit(50, 5), quotaKey: names.get(dying.port)! });
      await limits.acquire(ONE_CALL);
      await dying.kill();
      const startMs = performance.now();
      const error = await limits.acquire(ONE_CALL).catch((e: unknown) => e);
      expect(isLimiterUnavailableError(error)).toBe(true);
      expect(error instanceof RedisRedirectError).toBe(false);
      expect(performance.now() - startMs).toBeLessThan(3000);
      expect(short.available).toBe(false);
      // With a fallback share the quota goes on locally, as it does when a single Redis is lost.
      const local = new RedisLimits({
        connection: short,
        limits: requestLimit(50, 5),
        quotaKey: names.get(dying.port)!,
        fallbackShare: 0.5,
      });
      await local.acquire(ONE_CALL);
    } finally {
      await short.close();
    }
  });
});
