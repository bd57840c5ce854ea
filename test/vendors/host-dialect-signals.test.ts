// Each host dialect read right end to end: `LlmServer` imitating the host (serve --headers=…), the
// OpenAI provider in that dialect calling it through the official SDK, the gate syncing to what it
// read. The limits learned equal what the server advertises — Groq's requests a day and tokens a
// minute, Together's a second, Mistral's tokens a minute and a month — and a server with none
// states nothing, answers no 429, and is slowed for by its latency alone.
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitSignals } from '../../src/provider/rate-limit-signals.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import type { HttpApiProvider } from '../../src/vendors/http-api-provider.ts';
import { createHttpProvider } from '../../src/vendors/registry.ts';
import { gateCaller } from '../gate-caller.ts';
import { builtinRequest } from '../requests.ts';

const DAY_MS = 86_400_000;
const KEY = 'sk-dialects';
const servers: LlmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: LlmServerOptions): Promise<string> {
  const server = new LlmServer({ simulation: { minLatencyMs: 0, maxLatencyMs: 0 }, ...options });
  servers.push(server);
  return `${await server.listen({ port: 0 })}/v1`;
}

/** An OpenAI provider in `headers`'s dialect, and every signal it read from the server's answers. */
function providerIn(baseUrl: string, headers: string): { provider: HttpApiProvider; read: RateLimitSignals[] } {
  const provider = createHttpProvider('openai', { apiKey: KEY, baseUrl, headers });
  const read: RateLimitSignals[] = [];
  const rateLimits = provider.rateLimits.bind(provider);
  provider.rateLimits = (answerHeaders) => {
    const signals = rateLimits(answerHeaders);
    read.push(signals);
    return signals;
  };
  return { provider, read };
}

/** A gate over `provider` syncing to its headers, limited far above the server: what it learns is the server's. */
function syncedGate(provider: HttpApiProvider) {
  const limits = new LocalLimits({
    limits: [
      { kind: 'requests', rate: 50, burst: 50 },
      // Slow to refill, so that what the sync lowered it to is still there to see.
      { kind: 'tokens', rate: 1, burst: 1e9 },
    ],
  });
  return { limits, ...gateCaller({ provider, limits, syncHeaders: true, estimateInputTokens: () => 50, maxOutputTokens: 100 }) };
}

const request = (id: number) => builtinRequest('summarize', String(id));

describe('a run with syncHeaders against serve in each host dialect', () => {
  it("groq: requests over a day, tokens over a minute; the day's quota is no pace", async () => {
    const baseUrl = await serve({ headers: 'groq', rate: 5, burst: 5, tokensPerMinute: 60_000 });
    const { provider, read } = providerIn(baseUrl, 'groq');
    const { call, limits } = syncedGate(provider);
    for (let i = 0; i < 3; i++) await call(request(i));
    const last = read.at(-1)!.limits;
    // 5 a second is 300 a minute, 432,000 a day; what remains is what may be sent now, within the burst of 5.
    const requests = last.find((status) => status.kind === 'requests')!;
    expect(requests).toMatchObject({ limit: 432_000, windowMs: DAY_MS });
    expect(requests.remaining).toBeLessThanOrEqual(4);
    expect(last.find((status) => status.kind === 'tokens')).toMatchObject({ limit: 60_000, windowMs: 60_000 });
    expect(last.find((status) => status.kind === 'tokens')!.remaining).toBeLessThan(60_000);
    // Read as a day, the rate is 5 a second; but a day's quota caps what is left, not the pace: the rate stays.
    expect(limits.rate).toBe(50);
    // The tokens synced: the bucket holds no more than the server said was left.
    expect(limits.bucket('tokens')!.tokens()).toBeLessThanOrEqual(last.find((status) => status.kind === 'tokens')!.remaining! + 10);
  });

  it('together: requests and tokens a second; the rate synced to the one stated', async () => {
    const baseUrl = await serve({ headers: 'together', rate: 4, burst: 4, tokensPerMinute: 60_000 });
    const { provider, read } = providerIn(baseUrl, 'together');
    const { call, limits } = syncedGate(provider);
    for (let i = 0; i < 2; i++) await call(request(i));
    expect(read.at(-1)!.limits).toMatchObject([
      { kind: 'requests', limit: 4, remaining: 2, windowMs: 1000 },
      { kind: 'tokens', limit: 1000, windowMs: 1000 },
    ]);
    expect(limits.rate).toBe(4);
  });

  it('mistral: tokens a minute and a month (30 days), no requests stated', async () => {
    const baseUrl = await serve({ headers: 'mistral', rate: 5, burst: 5, tokensPerMinute: 60_000 });
    const { provider, read } = providerIn(baseUrl, 'mistral');
    const { call, limits } = syncedGate(provider);
    await call(request(0));
    const [minute, month] = read.at(-1)!.limits;
    expect(read.at(-1)!.limits).toHaveLength(2);
    expect(minute).toMatchObject({ kind: 'tokens', limit: 60_000, windowMs: 60_000 });
    expect(month).toMatchObject({ kind: 'tokens', limit: 60_000 * 43_200, windowMs: 30 * DAY_MS });
    expect(minute!.remaining).toBeLessThan(60_000);
    expect(month!.remaining).toBe(minute!.remaining);
    expect(limits.rate).toBe(50);
  });

  it('none: nothing stated, no 429 over the quota — the calls over it wait at the server', async () => {
    const baseUrl = await serve({ headers: 'none', rate: 4, burst: 1 });
    const { provider, read } = providerIn(baseUrl, 'none');
    expect(provider.statesLimits).toBe(false);
    const { call } = syncedGate(provider);
    const startedMs = performance.now();
    const answers = await Promise.all([0, 1, 2, 3].map((i) => call(request(i))));
    // Burst 1 at 4 a second: the fourth is answered 0.75 s after the first, never refused.
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(700);
    expect(answers).toHaveLength(4);
    expect(read.every((signals) => signals.limits.length === 0)).toBe(true);
  });
});

describe('serve in a host dialect refuses as the host does', () => {
  it("groq: a provider down is Groq's 498, which the provider retries as an overload", async () => {
    const baseUrl = await serve({
      headers: 'groq',
      simulation: { minLatencyMs: 0, maxLatencyMs: 0, outage: { startMs: 0, endMs: 60_000 } },
    });
    const { provider } = providerIn(baseUrl, 'groq');
    const error = await provider.call(request(0)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'ServerError', status: 498, retryable: true });
    expect((error as Error).message).toMatch(/^498 flex tier at capacity/);
  });

  it('together: a provider down is a 503 said to be below the dynamic rate, retried as an overload', async () => {
    const baseUrl = await serve({
      headers: 'together',
      simulation: { minLatencyMs: 0, maxLatencyMs: 0, outage: { startMs: 0, endMs: 60_000 } },
    });
    const { provider } = providerIn(baseUrl, 'together');
    const error = await provider.call(request(0)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'ServerError', status: 503, retryable: true });
    expect((error as Error).message).toMatch(/^503 below your dynamic rate: the model is at capacity, not your limit/);
  });

  it('together: over the quota is a 429 said to be above the dynamic rate', async () => {
    const baseUrl = await serve({ headers: 'together', rate: 1, burst: 1 });
    const { provider } = providerIn(baseUrl, 'together');
    await provider.call(request(0));
    const error = await provider.call(request(1)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'RateLimitError', status: 429, retryable: true });
    expect((error as Error).message).toMatch(/^429 rate limited, above your dynamic rate/);
  });
});

describe('--adaptive against a server that states nothing', () => {
  it('cuts the rate when the latency says the calls queue, with no 429 to hear', async () => {
    const baseUrl = await serve({ headers: 'none', rate: 20, burst: 1 });
    const provider = createHttpProvider('openai', { apiKey: KEY, baseUrl, headers: 'none' });
    const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 80, burst: 1 }] });
    const { call, gate } = gateCaller({ provider, limits, adaptive: {}, maxOutputTokens: 100 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => call(request(i))));
    expect(gate.adaptive!.decreases).toBeGreaterThanOrEqual(1);
    expect(limits.rate).toBeLessThan(80);
  });
});
