// The answer cache in front of the proxy's members: a whole request answered before costs nothing again; a stream goes upstream.
import { afterEach, describe, expect, it } from 'vitest';
import type { AnswerCache, CachedAnswer } from '../../src/cache/answer-cache.ts';
import type { ProxyLogLine } from '../../src/proxy/index.ts';
import { gateway, openai, stopAll, twoVendors, upstream } from './gateway.ts';

afterEach(stopAll);

/** An answer cache in memory. */
function memoryCache(): AnswerCache & { readonly entries: Map<string, CachedAnswer> } {
  const entries = new Map<string, CachedAnswer>();
  return {
    entries,
    location: 'memory',
    get: async (key) => entries.get(key),
    put: async (key, answer) => void entries.set(key, answer),
    close: async () => {},
  };
}

const ASK = { model: 'fast', max_tokens: 40, messages: [{ role: 'user' as const, content: 'Summarise the news of the day in a line.' }] };

async function cachedGateway(maxCostUsd: number) {
  const up = await upstream();
  const cache = memoryCache();
  const lines: ProxyLogLine[] = [];
  const { url } = await gateway(
    { providers: twoVendors(up.url, up.url), models: { fast: 'oa' }, keys: [{ name: 'a', key: 'sk-a', maxCostUsd }] },
    { cache, onRequest: (line) => lines.push(line) },
  );
  /** Upstream calls answered, as /metrics counts them. */
  const calls = async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(/proxy_member_calls_total\{member="oa",outcome="ok"\} (\d+)/.exec(text)?.[1] ?? 0);
  };
  return { client: openai(url, 'sk-a'), cache, lines, calls };
}

describe("the proxy's answer cache", () => {
  it('answers a whole request identical to one answered before from the cache: no upstream call, nothing spent', async () => {
    const { client, cache, lines, calls } = await cachedGateway(1);
    const first = await client.chat.completions.create(ASK);
    await expect.poll(() => cache.entries.size).toBe(1);
    const again = await client.chat.completions.create(ASK);
    expect(again).toEqual(first);
    expect(lines.map(({ status, cached, member }) => ({ status, cached, member }))).toEqual([
      { status: 200, cached: false, member: 'oa' },
      { status: 200, cached: true, member: undefined },
    ]);
    expect(lines[0]!.costUsd).toBeGreaterThan(0);
    expect(lines[1]!.costUsd).toBe(0);
    expect(await calls()).toBe(1);
    // Another request is not the same one: it goes upstream.
    await client.chat.completions.create({ ...ASK, max_tokens: 41 });
    expect(await calls()).toBe(2);
  });

  it('lets streamed requests by: each one goes upstream', async () => {
    const { client, cache, lines, calls } = await cachedGateway(1);
    for (let i = 0; i < 2; i++) {
      const stream = await client.chat.completions.create({ ...ASK, stream: true });
      for await (const _ of stream);
    }
    expect(cache.entries.size).toBe(0);
    expect(lines.map(({ cached, member }) => ({ cached, member }))).toEqual([
      { cached: false, member: 'oa' },
      { cached: false, member: 'oa' },
    ]);
    expect(await calls()).toBe(2);
  });
});
