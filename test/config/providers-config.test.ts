import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadProvidersConfig, parseProvidersConfig } from '../../src/config/providers-config.ts';

const good = {
  providers: [
    {
      name: 'fast',
      limits: [
        { kind: 'requests', rate: 5, per: 'second', burst: 2 },
        { kind: 'tokens', rate: 60000, per: 'minute' },
      ],
      adaptive: true,
      simulated: { minLatency: '100ms', maxLatency: '300ms', quota: { rate: 5, burst: 2 }, headers: 'openai' },
    },
    {
      name: 'careful',
      limits: [{ kind: 'requests', rate: 2 }],
      breaker: { failureThreshold: 3, cooldown: '2s' },
      callTimeout: '1.5s',
      simulated: { outage: '2s..8s' },
    },
  ],
  routes: { summarize: 'fast', sentiment: 'careful' },
};

describe('parseProvidersConfig()', () => {
  it("reads a good file into per-second limits, leaving what it does not say to the gate's defaults", () => {
    const config = parseProvidersConfig(good, 'providers.json');
    expect(config.routes).toEqual({ summarize: 'fast', sentiment: 'careful' });
    expect(config.providers[0]).toMatchObject({
      name: 'fast',
      limits: [
        { kind: 'requests', rate: 5, burst: 2 },
        { kind: 'tokens', rate: 1000, burst: 60000 },
      ],
      adaptive: {},
      syncHeaders: undefined,
      maxOutputTokens: undefined,
      callTimeoutMs: undefined,
      breaker: {},
      simulated: { minLatencyMs: 100, maxLatencyMs: 300, quota: { rate: 5, burst: 2 }, headers: 'openai' },
    });
    expect(config.providers[1]).toMatchObject({
      limits: [{ kind: 'requests', rate: 2, burst: 2 }],
      callTimeoutMs: 1500,
      breaker: { failureThreshold: 3, cooldownMs: 2000 },
      simulated: { outage: { startMs: 2000, endMs: 8000 } },
    });
    // A breaker the file does not mention is on, with the breaker's own defaults; one it sets says only what it sets.
    expect(config.providers[0]!.breaker).toEqual({});
    expect(config.providers[1]!.breaker).toEqual({ failureThreshold: 3, cooldownMs: 2000 });
  });

  it("reads a price's prompt-cache fields when given, and leaves them out when not (the vendor's ratios apply)", () => {
    const config = structuredClone(good) as any;
    config.providers[0].price = { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3, cacheWritePerMTok: 3.75 };
    config.providers[1].price = { inputPerMTok: 0.4, outputPerMTok: 1.6 };
    const [first, second] = parseProvidersConfig(config).providers;
    expect(first!.price).toEqual({ inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3, cacheWritePerMTok: 3.75 });
    expect(second!.price).toEqual({ inputPerMTok: 0.4, outputPerMTok: 1.6 });
  });

  it("reads how long the breaker waits for a provider that stays down: a duration or 'inf'", () => {
    const config = structuredClone(good) as any;
    config.providers[1].breaker.giveUp = '2m';
    expect(parseProvidersConfig(config).providers[1]!.breaker).toMatchObject({ giveUpAfterMs: 120_000 });
    config.providers[1].breaker.giveUp = 'inf';
    expect(parseProvidersConfig(config).providers[1]!.breaker).toMatchObject({ giveUpAfterMs: Infinity });
  });

  it('takes a tokens burst just above maxOutputTokens, and an output-tokens burst equal to it', () => {
    const config = structuredClone(good) as any;
    config.providers[0].maxOutputTokens = 100;
    config.providers[0].limits[1] = { kind: 'tokens', rate: 101, per: 'minute' };
    config.providers[1].maxOutputTokens = 100;
    config.providers[1].limits.push({ kind: 'output-tokens', rate: 100, per: 'minute' });
    expect(parseProvidersConfig(config).providers.map((p) => p.limits.at(-1)!.burst)).toEqual([101, 100]);
  });

  it('reads a breaker failure ratio', () => {
    const config = structuredClone(good) as any;
    config.providers[1].breaker.failureRatio = { ratio: 0.5, window: '10s', minimumCalls: 20 };
    expect(parseProvidersConfig(config).providers[1]!.breaker).toMatchObject({
      failureRatio: { ratio: 0.5, windowMs: 10_000, minimumCalls: 20 },
    });
  });

  it("fills in the failure ratio's window and volume", () => {
    const config = structuredClone(good) as any;
    config.providers[1].breaker.failureRatio = { ratio: 0.5 };
    expect(parseProvidersConfig(config).providers[1]!.breaker).toMatchObject({
      failureRatio: { ratio: 0.5, windowMs: 30_000, minimumCalls: 10 },
    });
  });

  it('routes nothing unless told: a task it does not route goes to the first provider, a task of any name may be routed', () => {
    const config = parseProvidersConfig({ providers: [{ name: 'only', limits: [{ kind: 'requests', rate: 'inf' }] }] });
    expect(config.routes).toEqual({});
    expect(
      parseProvidersConfig({
        ...config,
        providers: [{ name: 'only', limits: [{ kind: 'requests', rate: 1 }] }],
        routes: { headline: 'only' },
      }).routes,
    ).toEqual({ headline: 'only' });
    expect(config.providers[0]!.limits[0]!.rate).toBe(Infinity);
  });

  const bad: [string, (c: any) => void, string][] = [
    ['no providers', (c) => (c.providers = []), 'p.json: providers: expected at least one provider, got []'],
    ['a provider without name', (c) => delete c.providers[0].name, 'p.json: providers[0].name: expected a string, got nothing'],
    [
      'a duplicate name',
      (c) => (c.providers[1].name = 'fast'),
      'p.json: providers[1].name: expected a name no other provider has, got "fast"',
    ],
    [
      'an unknown limit kind',
      (c) => (c.providers[0].limits[0].kind = 'bytes'),
      'p.json: providers[0].limits[0].kind: expected one of "requests", "tokens", "input-tokens", "output-tokens", got "bytes"',
    ],
    [
      'a zero rate',
      (c) => (c.providers[0].limits[0].rate = 0),
      'p.json: providers[0].limits[0].rate: expected a number > 0 or "inf", got 0',
    ],
    [
      'a string rate',
      (c) => (c.providers[0].limits[0].rate = 'fast'),
      'providers[0].limits[0].rate: expected a number > 0 or "inf", got "fast"',
    ],
    [
      'a fractional burst',
      (c) => (c.providers[0].limits[0].burst = 1.5),
      'providers[0].limits[0].burst: expected a whole number >= 1, got 1.5',
    ],
    [
      'an unknown period',
      (c) => (c.providers[0].limits[0].per = 'day'),
      'providers[0].limits[0].per: expected one of "second", "minute", "hour", got "day"',
    ],
    [
      'two limits of a kind',
      (c) => (c.providers[0].limits[1].kind = 'requests'),
      'providers[0].limits[1].kind: expected one limit per kind, got "requests"',
    ],
    [
      'a duration without unit',
      (c) => (c.providers[1].breaker.cooldown = '2'),
      'providers[1].breaker.cooldown: expected a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h), got "2"',
    ],
    [
      'a give-up of no time',
      (c) => (c.providers[1].breaker.giveUp = '0s'),
      'providers[1].breaker.giveUp: expected a duration > 0, got "0s"',
    ],
    [
      'a zero call timeout',
      (c) => (c.providers[1].callTimeout = '0s'),
      'p.json: providers[1].callTimeout: expected a duration > 0, got "0s"',
    ],
    [
      'a call timeout without unit',
      (c) => (c.providers[1].callTimeout = 500),
      'providers[1].callTimeout: expected a duration like 500ms, 1.5s, 2m3.5s or 1h30m (units ns, us, ms, s, m, h), got 500',
    ],
    [
      'a backwards outage',
      (c) => (c.providers[1].simulated.outage = '8s..2s'),
      'providers[1].simulated.outage: expected a window like "2s..8s" (start before end), got "8s..2s"',
    ],
    [
      'a failure ratio above 1',
      (c) => (c.providers[1].breaker.failureRatio = { ratio: 1.5, window: '10s' }),
      'providers[1].breaker.failureRatio.ratio: expected a share in (0, 1], got 1.5',
    ],
    [
      'a zero failure-ratio window',
      (c) => (c.providers[1].breaker.failureRatio = { ratio: 0.5, window: '0ms' }),
      'providers[1].breaker.failureRatio.window: expected a duration > 0, got "0ms"',
    ],
    [
      'an unknown simulated profile',
      (c) => (c.providers[0].simulated.profile = 'chaos'),
      'providers[0].simulated.profile: expected one of "default", "production", "stress", "outage", "unfit", got "chaos"',
    ],
    [
      'an unknown header style',
      (c) => (c.providers[0].simulated.headers = 'aws'),
      'providers[0].simulated.headers: expected one of "openai", "anthropic", "azure", "gemini", "ietf", got "aws"',
    ],
    [
      'a route to nobody',
      (c) => (c.routes.sentiment = 'nobody'),
      'routes.sentiment: expected one of the provider names (fast, careful), got "nobody"',
    ],
    ['a misspelt field', (c) => (c.providers[0].adaptiv = true), 'providers[0].adaptiv: unknown field'],
    ['adaptive not boolean', (c) => (c.providers[0].adaptive = 'yes'), 'providers[0].adaptive: expected true or false, got "yes"'],
    [
      'a tokens burst no larger than maxOutputTokens (a call could never fit)',
      (c) => (c.providers[0].limits[1] = { kind: 'tokens', rate: 200, per: 'minute' }),
      "p.json: providers[0].limits[1].burst: expected more than maxOutputTokens (256, the default; a call takes its prompt's tokens plus that many at once), got 200",
    ],
    [
      'an output-tokens burst below maxOutputTokens',
      (c) => {
        c.providers[0].maxOutputTokens = 500;
        c.providers[0].limits[1] = { kind: 'output-tokens', rate: 6000, per: 'minute', burst: 499 };
      },
      'p.json: providers[0].limits[1].burst: expected at least maxOutputTokens (500; a call takes that many at once), got 499',
    ],
    [
      'an adaptive rate over an unlimited request rate (nothing to adapt below)',
      (c) => (c.providers[0].limits[0] = { kind: 'requests', rate: 'inf' }),
      'p.json: providers[0].adaptive: expected left out over an unlimited request rate (it adapts below a finite one), got true',
    ],
    [
      'a negative cache-read price',
      (c) => (c.providers[0].price = { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: -1 }),
      'p.json: providers[0].price.cachedInputPerMTok: expected a number >= 0 (USD per million tokens), got -1',
    ],
    [
      'a price field it does not know',
      (c) => (c.providers[0].price = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3 }),
      'providers[0].price.cacheReadPerMTok',
    ],
    [
      'min above max latency',
      (c) => (c.providers[0].simulated.minLatency = '1s'),
      'providers[0].simulated.minLatency: expected at most maxLatency, got "1s"',
    ],
  ];
  it.each(bad)('rejects %s with a ConfigError naming the field', (_, mutate, message) => {
    const config = structuredClone(good);
    mutate(config);
    expect(() => parseProvidersConfig(config, 'p.json')).toThrow(ConfigError);
    expect(() => parseProvidersConfig(config, 'p.json')).toThrow(message);
  });
});

describe('loadProvidersConfig()', () => {
  it('names the file for a missing file and for invalid JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'np-config-'));
    await expect(loadProvidersConfig(join(dir, 'none.json'))).rejects.toThrow(
      new ConfigError(`${join(dir, 'none.json')}: cannot read file (ENOENT: no such file or directory)`),
    );
    await expect(loadProvidersConfig(dir)).rejects.toThrow(
      new ConfigError(`${dir}: cannot read file (EISDIR: illegal operation on a directory)`),
    );
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "providers": [');
    await expect(loadProvidersConfig(broken)).rejects.toThrow(/broken\.json: invalid JSON/);
  });
});
