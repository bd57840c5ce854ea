// A pool's strategy, weights and fallback in the proxy, as a run's providers file means them.
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProxyLogLine } from '../../src/proxy/index.ts';
import { gateway, openai, stopAll, upstream } from './gateway.ts';

afterEach(stopAll);

const ASK = { model: 'fast', max_tokens: 8, messages: [{ role: 'user' as const, content: 'Hello.' }] };

const member = (name: string, url: string) => ({
  name,
  type: 'openai',
  baseUrl: `${url}/v1`,
  model: 'gpt-4.1-mini',
  limits: [{ kind: 'requests', rate: 'inf' }],
  price: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
});

/** A loopback URL nobody listens on: a member whose calls are refused at the connection. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function served(pool: Record<string, unknown>, providers: unknown[], requests: number) {
  const lines: ProxyLogLine[] = [];
  const { url } = await gateway(
    { providers, pools: [{ name: 'p', ...pool }], models: { fast: 'p' }, keys: [{ name: 'a', key: 'sk-a', maxCostUsd: 1 }] },
    { onRequest: (line) => lines.push(line) },
  );
  const client = openai(url, 'sk-a');
  // Eight at a time: quick, and each one chosen for on its own.
  for (let i = 0; i < requests; i += 8)
    await Promise.all(Array.from({ length: Math.min(8, requests - i) }, () => client.chat.completions.create(ASK)));
  const count = (name: string) => lines.filter((line) => line.member === name && line.status === 200).length;
  return { lines, count };
}

describe("a pool's strategy in the proxy", () => {
  it('ordered: every request on the first member while it grants in time', async () => {
    const up = await upstream();
    const { count } = await served({ members: ['one', 'two'], strategy: 'ordered' }, [member('one', up.url), member('two', up.url)], 20);
    expect(count('one')).toBe(20);
    expect(count('two')).toBe(0);
  });

  it('weighted: requests spread in proportion to the weights', async () => {
    const up = await upstream();
    const { count } = await served(
      { members: ['one', 'two'], strategy: 'weighted', weights: [4, 1] },
      [member('one', up.url), member('two', up.url)],
      200,
    );
    // 160 and 40 expected; 1:1 (taking turns) is far outside.
    expect(count('one') + count('two')).toBe(200);
    expect(count('one')).toBeGreaterThan(130);
    expect(count('two')).toBeGreaterThan(15);
  });

  it('fallback: a pool whose members do not answer hands the request to its fallback, the client none the wiser', async () => {
    const up = await upstream();
    const dead = await deadUrl();
    const { lines, count } = await served({ members: ['down'], fallback: ['spare'] }, [member('down', dead), member('spare', up.url)], 3);
    expect(count('spare')).toBe(3);
    expect(lines.every((line) => line.status === 200)).toBe(true);
    // A connection refused sent nothing: nothing held for it, only the answer's cost.
    for (const line of lines) expect(line.unknownCostUsd).toBeUndefined();
  });

  it('a member that dies halfway through a whole answer: the next member answers, the client none the wiser', async () => {
    // Its head, half its body, then its connection cut: as a process killed mid-answer.
    const dying = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '400' });
      res.write('{"id":"chatcmpl-1","choices":[');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    await new Promise<void>((resolve) => dying.listen(0, '127.0.0.1', resolve));
    const dyingUrl = `http://127.0.0.1:${(dying.address() as { port: number }).port}`;
    try {
      const up = await upstream();
      const { lines, count } = await served(
        { members: ['dying', 'fine'], strategy: 'ordered' },
        [member('dying', dyingUrl), member('fine', up.url)],
        3,
      );
      expect(lines.map((line) => line.status)).toEqual([200, 200, 200]);
      expect(count('fine')).toBe(3);
      // The dying member had the request: perhaps billed. The rest of the worst case stays held for it, apart.
      for (const line of lines) {
        expect(line.costUsd).toBeGreaterThan(0);
        expect(line.unknownCostUsd).toBeGreaterThan(0);
      }
    } finally {
      dying.closeAllConnections();
      await new Promise((resolve) => dying.close(resolve));
    }
  });
});
