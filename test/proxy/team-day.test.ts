// A team's day, as a new user would try it: two proxy replicas on one redis-server, three keys with budgets and
// weights, the SDKs of both vendors hammering them — no budget overspent, no limit passed, no key starved, and a
// member killed mid-run without a client error.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisGatewayStores, type ProxyLogLine } from '../../src/proxy/index.ts';
import { connectRedis, type RedisConnection } from '../../src/redis/index.ts';
import { startRedis, type TestRedis } from '../redis/redis-server.ts';
import { anthropic, gateway, openai, stopAll, upstream } from './gateway.ts';

let redis: TestRedis;
const connections: RedisConnection[] = [];
const children: ChildProcess[] = [];

const SERVE_CHILD = fileURLToPath(new URL('./serve-child.ts', import.meta.url));

/** A `serve` in a process of its own (to be killed with SIGKILL), at `rate` with `burst`; its URL once it listens. */
async function spawnedUpstream(rate: number, burst: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVE_CHILD, String(rate), String(burst)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  child.stdout!.setEncoding('utf8');
  for await (const chunk of child.stdout!) {
    out += chunk;
    const url = /listening on (\S+)\n/.exec(out)?.[1];
    if (url !== undefined) return { url, child };
  }
  throw new Error(`serve-child exited before listening: ${out}`);
}

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await stopAll();
  await Promise.all(connections.map((connection) => connection.close()));
  await redis?.stop();
});

const MEMBER_RATE = 60;
const KEY_RATE = 15;
const KEY_BURST = 5;

describe("a team's day on two replicas", () => {
  it('holds every budget and limit across replicas, shares the upstream, and rides out a member killed mid-run', async () => {
    // Each upstream's own quota is the member's, a little looser (network jitter): a 429 from it would say the replicas overran it.
    const quota = { rate: MEMBER_RATE, burst: 20 };
    // oa2 in a process of its own: killed mid-run, not closed, its connections cut wherever they are.
    const [oa1, oa2, an] = await Promise.all([upstream(quota), spawnedUpstream(quota.rate, quota.burst), upstream(quota)]);
    const member = (name: string, type: string, baseUrl: string, model: string) => ({
      name,
      type,
      baseUrl,
      model,
      limits: [{ kind: 'requests', rate: MEMBER_RATE, burst: 10 }],
      breaker: { failureThreshold: 2, cooldown: '10s' },
      price: type === 'openai' ? { inputPerMTok: 0.4, outputPerMTok: 1.6 } : { inputPerMTok: 1, outputPerMTok: 5 },
    });
    const config = {
      providers: [
        member('oa1', 'openai', `${oa1.url}/v1`, 'gpt-4.1-mini'),
        member('oa2', 'openai', `${oa2.url}/v1`, 'gpt-4.1-mini'),
        member('an', 'anthropic', an.url, 'claude-haiku-4-5'),
      ],
      pools: [{ name: 'gpt', members: ['oa1', 'oa2'] }],
      models: { 'gpt-4.1-mini': 'gpt', 'claude-haiku-4-5': 'an' },
      keys: [
        {
          name: 'notebooks',
          key: 'sk-notebooks',
          maxCostUsd: 0.0003,
          weight: 1,
          limits: [{ kind: 'requests', rate: KEY_RATE, burst: KEY_BURST }],
        },
        { name: 'service', key: 'sk-service', maxCostUsd: 0.001, weight: 3 },
        { name: 'agents', key: 'sk-agents', maxCostUsd: 0.001, weight: 1, models: ['claude-haiku-4-5'] },
      ],
    };
    const lines: ProxyLogLine[] = [];
    const replicas = [];
    for (let index = 0; index < 2; index++) {
      const connection = await connectRedis(redis.url);
      connections.push(connection);
      replicas.push(await gateway(config, { ...redisGatewayStores(connection), onRequest: (line) => lines.push(line) }));
    }
    const startMs = Date.now();
    const ask = { max_tokens: 30, messages: [{ role: 'user' as const, content: 'One line on the markets today.' }] };
    let answered = 0;
    let killed: Promise<unknown> | undefined;
    const outcomes: Record<string, { ok: number; budget: number; limit: number; other: unknown[] }> = {};
    const hammer = async (key: string, send: (replica: number) => Promise<unknown>, count: number) => {
      const tally = { ok: 0, budget: 0, limit: 0, other: [] as unknown[] };
      outcomes[key] = tally;
      let next = 0;
      await Promise.all(
        Array.from({ length: 6 }, async () => {
          while (next < count) {
            const replica = next++ % 2;
            try {
              await send(replica);
              tally.ok++;
              // A member dies mid-run (SIGKILL, no goodbye): the pool's other member takes its calls.
              if (++answered === 30) {
                killed = once(oa2.child, 'exit');
                oa2.child.kill('SIGKILL');
              }
            } catch (error) {
              const { status, code, error: body } = error as { status?: number; code?: string; error?: { error?: { type?: string } } };
              if ((status === 429 && code === 'insufficient_quota') || (status === 402 && body?.error?.type === 'billing_error'))
                tally.budget++;
              else if (status === 429) {
                tally.limit++;
                // As a client told to wait would, a little.
                await new Promise((resolve) => setTimeout(resolve, 100));
              } else tally.other.push(error);
            }
          }
        }),
      );
    };
    const clients = replicas.map(({ url }) => ({
      notebooks: openai(url, 'sk-notebooks'),
      service: openai(url, 'sk-service'),
      agents: anthropic(url, 'sk-agents'),
    }));
    const run = Promise.all([
      hammer('notebooks', (r) => clients[r]!.notebooks.chat.completions.create({ model: 'gpt-4.1-mini', ...ask }), 80),
      hammer(
        'service',
        // Streamed on one replica, whole on the other.
        async (r) => {
          if (r === 0) return clients[r]!.service.chat.completions.create({ model: 'gpt-4.1-mini', ...ask });
          const stream = await clients[r]!.service.chat.completions.create({ model: 'gpt-4.1-mini', ...ask, stream: true });
          for await (const _chunk of stream);
        },
        120,
      ),
      hammer('agents', (r) => clients[r]!.agents.messages.create({ model: 'claude-haiku-4-5', ...ask }), 80),
    ]);
    await run;
    await killed;
    expect(killed).toBeDefined();
    const elapsedS = (Date.now() - startMs) / 1000;

    for (const [key, tally] of Object.entries(outcomes)) {
      expect(tally.other, `${key}: no client error but a refusal`).toEqual([]);
      // No key starved: each got answers.
      expect(tally.ok, key).toBeGreaterThan(5);
    }
    // No budget overspent by a cent (nor by a nano-dollar): what both replicas spent for each key.
    for (const key of config.keys) {
      const spent = lines.filter((line) => line.key === key.name).reduce((sum, line) => sum + line.costUsd, 0);
      expect(spent, key.name).toBeLessThanOrEqual(key.maxCostUsd);
      expect(outcomes[key.name]!.budget, `${key.name} reached its budget`).toBeGreaterThan(0);
    }
    // No limit passed: the notebooks' requests let through, on both replicas together, within burst + rate × time.
    const notebooksThrough = lines.filter((line) => line.key === 'notebooks' && line.status !== 429).length;
    expect(notebooksThrough).toBeLessThanOrEqual(KEY_BURST + KEY_RATE * elapsedS + 1);
    expect(outcomes.notebooks!.limit).toBeGreaterThan(0);
    // The upstreams never said 429: the replicas shared each member's quota through Redis.
    const metrics = await Promise.all(replicas.map(async ({ url }) => (await fetch(`${url}/metrics`)).text()));
    for (const text of metrics) expect(text).not.toMatch(/proxy_member_429_total\{member="\w+"\} [1-9]/);
    // The killed member was tried after it went, and left for its twin: the clients never saw it.
    const count = (member: string, outcome: string) =>
      metrics.reduce(
        (sum, text) =>
          sum + Number(new RegExp(`proxy_member_calls_total\\{member="${member}",outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 0),
        0,
      );
    expect(count('oa2', 'ok')).toBeGreaterThan(0);
    expect(count('oa2', 'failed')).toBeGreaterThan(0);
    expect(count('oa1', 'ok')).toBeGreaterThan(count('oa2', 'ok'));
  }, 60_000);
});
