import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import { AdaptiveRate } from '../../src/quota/adaptive-rate.ts';
import { gateCaller } from '../gate-caller.ts';
import type { CallCost, LimitAcquireOptions, LimitGrant, LimitKind, LimitSpec, ProviderLimits } from '../../src/quota/provider-limits.ts';
import { formatRateLimitHeaders } from '../../src/vendors/rate-limit-headers.ts';
import { MaxWaitExceededError } from '../../src/limiter/token-bucket.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { RateLimitError, type LlmRequest, type TokenUsage } from '../../src/provider/provider.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { ScriptedProvider, drive } from '../../src/testing/scripted-provider.ts';
import { builtinRequest } from '../requests.ts';
import '../tokenizer-loaded.ts';

/**
 * A second implementation of the limits, nothing like the local buckets: it "asks a server" —
 * every acquire takes a 5 ms round trip — and grants a fixed number of calls, recording all it is
 * told. If the gate, the adaptive rate or header sync reached past the interface, this would break.
 */
class RemoteLimits implements ProviderLimits {
  readonly specs: readonly LimitSpec[] = [
    { kind: 'requests', rate: 10, burst: 1 },
    { kind: 'tokens', rate: 1000, burst: 5000 },
  ];
  readonly countsTokens = true;
  rate = 10;
  readonly acquired: { cost: CallCost; rank: number | undefined; maxWaitMs: number | undefined }[] = [];
  readonly settled: TokenUsage[] = [];
  readonly rates: number[] = [];
  readonly lowered: [LimitKind, number][] = [];

  constructor(
    private readonly clock: ManualClock,
    private grantsLeft: number,
  ) {}

  async acquire(cost: CallCost, options: LimitAcquireOptions = {}): Promise<LimitGrant> {
    await sleep(this.clock, 5, options.signal);
    if (this.grantsLeft-- <= 0) throw new MaxWaitExceededError(Infinity, options.maxWaitMs ?? Infinity);
    this.acquired.push({ cost, rank: options.rank, maxWaitMs: options.maxWaitMs });
    return { settle: (actual) => void this.settled.push(actual) };
  }

  setRate(rate: number): void {
    this.rate = rate;
    this.rates.push(rate);
  }

  lowerTo(kind: LimitKind, remaining: number): void {
    this.lowered.push([kind, remaining]);
  }

  backlogMs(): number {
    return 0;
  }
}

const request: LlmRequest = builtinRequest('summarize', '1');

describe('ProviderLimits: another implementation stands in without touching the gate', () => {
  it('every attempt acquires its cost through the interface; grants are settled, 429s cut the rate, headers lower the limits', async () => {
    const clock = new ManualClock();
    // 600 a minute: the 10/s the limits have — known, so the 429 cuts by the margin, not the factor.
    const headers = formatRateLimitHeaders('openai', [{ kind: 'requests', limit: 600, remaining: 3, resetMs: 100 }]);
    const provider = new ScriptedProvider({
      name: 'remote',
      clock,
      script: [{ error: new RateLimitError('429', { retryAfterMs: 20, headers }) }, { latencyMs: 10 }],
    });
    const limits = new RemoteLimits(clock, 10);
    const adaptive = new AdaptiveRate({ limits, clock });
    const { gate, call } = gateCaller({
      provider,
      limits,
      adaptive,
      clock,
      syncHeaders: true,
      estimateInputTokens: () => 40,
      maxOutputTokens: 60,
    });

    const { attempts } = await drive(clock, call(request, { deadlineMs: 1000, rank: 7 }));

    expect(attempts).toBe(2);
    expect(limits.acquired).toHaveLength(2);
    expect(limits.acquired[0]).toEqual({ cost: { requests: 1, inputTokens: 40, outputTokens: 60 }, rank: 7, maxWaitMs: 1000 });
    // The 429 used nothing; the success had no usage to report, so its estimate stands.
    expect(limits.settled).toEqual([{ inputTokens: 0, outputTokens: 0 }]);
    expect(limits.rates).toEqual([10 * 0.97]);
    // The 429 empties the request bucket; the headers then say what remains.
    expect(limits.lowered).toEqual([
      ['requests', 0],
      ['requests', 3],
    ]);
    expect(gate.figures()).toMatchObject({ provider: 'remote', rate: 10 * 0.97, countsTokens: true, rateCuts: 1, limits: limits.specs });
  });

  it('a refusal from the limits ends the attempt as a limiter timeout, the provider never called', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'remote', clock });
    const { call } = gateCaller({ provider, limits: new RemoteLimits(clock, 0), clock, estimateInputTokens: () => 1 });
    const outcomes: string[] = [];
    await drive(
      clock,
      call(request, { onAttempt: (event) => outcomes.push(event.outcome) }).catch(() => {}),
    );
    expect(outcomes).toEqual(['limiter-timeout']);
    expect(provider.calls).toHaveLength(0);
  });

  it('runs a whole pipeline on it, with the figures taken from it', async () => {
    const clock = new ManualClock();
    const limits = new RemoteLimits(clock, 100);
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(3),
        providers: [{ provider: new ScriptedProvider({ name: 'remote', clock, script: [{ latencyMs: 1 }] }), limits }],
        clock,
      }),
    );
    expect(summary).toMatchObject({ succeeded: 3, calls: 6 });
    expect(summary.providers[0]).toMatchObject({ name: 'remote', rate: 10, burst: 1, finalRate: 10, countsTokens: true });
    // Ranks are the latest instant a call can start and leave the article's later calls their
    // expected time: the three first calls (all started at 0, a 5 s timeout, 1.25 s taken for a
    // call until one answers) rank at 5000 − 2 × 1250; each second call later, but before 5000.
    const ranks = limits.acquired.map((a) => a.rank);
    expect(ranks.slice(0, 3)).toEqual([2500, 2500, 2500]);
    for (const rank of ranks.slice(3)) {
      expect(rank).toBeGreaterThan(2500);
      expect(rank).toBeLessThan(5000);
    }
  });
});
