// Each key's budget, limits and bad input, through the proxy to `serve`: exact under concurrency, refused in the client's shape.
import { afterEach, describe, expect, it } from 'vitest';
import type { ProxyLogLine } from '../../src/proxy/index.ts';
import { anthropic, gateway, openai, stopAll, twoVendors, upstream } from './gateway.ts';

afterEach(stopAll);

const ASK = { model: 'fast', max_tokens: 40, messages: [{ role: 'user' as const, content: 'Summarise the news of the day in a line.' }] };

async function team(keys: unknown[], maxBodyBytes?: number) {
  const up = await upstream();
  const lines: ProxyLogLine[] = [];
  const { url } = await gateway(
    { providers: twoVendors(up.url, up.url), models: { fast: 'oa', claude: 'an' }, keys },
    { onRequest: (line) => lines.push(line), maxBodyBytes },
  );
  return { url, lines };
}

describe('a key of the proxy', () => {
  it('never spends past its budget, however many requests it sends at once', async () => {
    // Each request's worst case is about $0.00015: the budget covers a few dozen of them.
    const { url, lines } = await team([{ name: 'a', key: 'sk-a', maxCostUsd: 0.002 }]);
    const client = openai(url, 'sk-a', 3);
    const outcomes = await Promise.allSettled(Array.from({ length: 120 }, () => client.chat.completions.create(ASK)));
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    expect(outcomes.some((outcome) => outcome.status === 'fulfilled')).toBe(true);
    for (const outcome of refused) {
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({
        status: 429,
        code: 'insufficient_quota',
        type: 'insufficient_quota',
      });
      expect((outcome as PromiseRejectedResult).reason.headers.get('x-should-retry')).toBe('false');
    }
    // The SDK did not retry the refusals: one request each.
    expect(lines).toHaveLength(120);
    const spent = lines.reduce((sum, line) => sum + line.costUsd, 0);
    expect(spent).toBeLessThanOrEqual(0.002);
    expect(spent).toBeGreaterThan(0.001);
  });

  it("refuses an Anthropic client past its budget with Anthropic's billing error, not retried", async () => {
    const { url, lines } = await team([{ name: 'a', key: 'sk-a', maxCostUsd: 0.0001 }]);
    const client = anthropic(url, 'sk-a', 3);
    const ask = () => client.messages.create({ model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: 'Hello there.' }] });
    await expect(ask()).rejects.toMatchObject({ status: 402, error: { error: { type: 'billing_error' } } });
    expect(lines).toHaveLength(1);
  });

  it('is held to its limits with the IETF RateLimit fields and retry-after', async () => {
    const { url } = await team([{ name: 'a', key: 'sk-a', limits: [{ kind: 'requests', rate: 1, per: 'minute', burst: 2 }] }]);
    const post = () =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-a', 'content-type': 'application/json' },
        body: JSON.stringify(ASK),
      });
    expect((await post()).status).toBe(200);
    const second = await post();
    expect(second.status).toBe(200);
    expect(second.headers.get('ratelimit')).toBe('"requests";r=0;t=120');
    const third = await post();
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('60');
    expect(third.headers.get('ratelimit-policy')).toBe('"requests";q=2;w=120');
    expect(await third.json()).toMatchObject({ error: { type: 'requests', code: 'rate_limit_exceeded' } });
  });

  it('has its token limit settled on the usage: the worst case taken before the call, the rest given back', async () => {
    // Each request's worst case is its 1,000 output tokens and its body: two fit the burst, a third would not.
    // What `serve` answers uses a few dozen tokens, so with the rest given back ten go through one after another.
    const { url, lines } = await team([{ name: 'a', key: 'sk-a', limits: [{ kind: 'tokens', rate: 1, per: 'hour', burst: 2500 }] }]);
    const client = openai(url, 'sk-a');
    for (let i = 0; i < 10; i++) await client.chat.completions.create({ ...ASK, max_tokens: 1000 });
    expect(lines.map((line) => line.status)).toEqual(Array(10).fill(200));
    const used = lines.reduce((sum, line) => sum + line.inputTokens + line.outputTokens, 0);
    expect(used).toBeLessThan(2500);
    // Three at once hold three worst cases: the third is refused.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 3 }, () => client.chat.completions.create({ ...ASK, max_tokens: 1000 })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'rejected').length).toBeGreaterThan(0);
  });

  it("answers a body over --max-body with 413 and one that is not JSON with 400, in the client's shape", async () => {
    const { url } = await team([{ name: 'a', key: 'sk-a' }], 1000);
    const big = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-a', 'content-type': 'application/json' },
      body: JSON.stringify({ ...ASK, model: 'claude', messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    const notJson = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-a' },
      body: '{"model":',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({
      error: { type: 'invalid_request_error', message: 'The request body is not valid JSON.' },
    });
  });

  it("waits for the upstream's quota up to --max-wait, then answers 429 with retry-after", async () => {
    const up = await upstream();
    const [oa] = twoVendors(up.url, up.url);
    const { url } = await gateway(
      {
        providers: [{ ...oa, limits: [{ kind: 'requests', rate: 1, per: 'minute', burst: 1 }] }],
        models: { fast: 'oa' },
        keys: [{ name: 'a', key: 'sk-a' }],
      },
      { maxWaitMs: 200 },
    );
    const post = () =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-a', 'content-type': 'application/json' },
        body: JSON.stringify(ASK),
      });
    expect((await post()).status).toBe(200);
    const busy = await post();
    expect(busy.status).toBe(429);
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(await busy.json()).toMatchObject({ error: { message: expect.stringContaining("upstream's quota") } });
  });

  it('never shows a key in /metrics or the log, only its name', async () => {
    const { url, lines } = await team([{ name: 'team-a', key: 'sk-secret-team-a' }]);
    await openai(url, 'sk-secret-team-a').chat.completions.create(ASK);
    await expect(openai(url, 'sk-secret-wrong').chat.completions.create(ASK)).rejects.toMatchObject({ status: 401 });
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('proxy_requests_total{key="team-a",status="200"} 1');
    expect(metrics).toMatch(/proxy_spend_usd_total\{key="team-a"\} [0-9.e-]+/);
    expect(metrics).toContain('proxy_member_calls_total{member="oa",outcome="ok"} 1');
    expect(metrics).not.toContain('sk-secret');
    expect(JSON.stringify(lines)).not.toContain('sk-secret');
    expect(lines[0]).toMatchObject({ key: 'team-a', model: 'fast', member: 'oa', status: 200 });
  });
});
