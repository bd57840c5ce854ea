// Limits other processes share (`ProviderLimits.shared`): admission cannot see their demand, so an
// article's deadline starts at its first grant, and that grant is taken only when it is near.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';
import { requestLimit, type ProviderLimits } from '../../src/quota/provider-limits.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { drive, ScriptedProvider } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

/**
 * Local limits as another process's demand makes them look from here: the buckets are the same,
 * but the backlog of the other process's calls is not seen (`backlogMs` answers 0, as RedisLimits
 * knows only what its last reply said). `shared` says what RedisLimits says.
 */
function unseenDemand(limits: LocalLimits, shared: boolean): ProviderLimits {
  return {
    specs: limits.specs,
    countsTokens: limits.countsTokens,
    shared,
    get rate() {
      return limits.rate;
    },
    acquire: (cost, options) => limits.acquire(cost, options),
    setRate: (rate) => limits.setRate(rate),
    lowerTo: (kind, remaining) => limits.lowerTo(kind, remaining),
    backlogMs: () => 0,
  };
}

/** Another process's demand: `calls` calls queued at once through the same buckets. */
function otherProcess(limits: LocalLimits, calls: number): Promise<unknown> {
  return Promise.all(Array.from({ length: calls }, () => limits.acquire({ requests: 1, inputTokens: 0, outputTokens: 0 })));
}

async function runBeside(shared: boolean) {
  const clock = new ManualClock();
  const local = new LocalLimits({ limits: requestLimit(10, 1), clock });
  const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 50 }] });
  // The other process queued 3 s of calls, longer than an article's 1 s timeout.
  const other = otherProcess(local, 30);
  const summary = await drive(
    clock,
    runPipeline({
      source: generateArticles(10),
      providers: [{ provider, limits: unseenDemand(local, shared) }],
      workers: 10,
      timeoutMs: 1000,
      clock,
    }),
  );
  await drive(clock, other);
  return { summary, provider };
}

describe('a pipeline on limits other processes share', () => {
  it('never fails an article for the queue others made: it waits, unstarted, for a near grant; its deadline starts there', async () => {
    const { summary, provider } = await runBeside(true);
    expect({ succeeded: summary.succeeded, reasons: summary.failureReasons }).toEqual({ succeeded: 10, reasons: {} });
    expect(summary.calls).toBe(20);
    expect(summary.retries).toBe(0);
    // The other process's 30 calls went first: 3 s at 10/s, the first of them at once.
    expect(Math.min(...provider.calls.map((call) => call.atMs))).toBeGreaterThanOrEqual(2900);
  });

  it('the same limits, not said to be shared: the articles meet the unseen queue and fail at their deadline', async () => {
    const { summary } = await runBeside(false);
    expect(summary.failed).toBe(10);
    expect(Object.keys(summary.failureReasons).sort()).toEqual(['MaxWaitExceededError', 'TimeoutError']);
  });
});

describe('admission counts tokens too', () => {
  it('an article whose calls cannot get their tokens in time is not started: none fails for a token limit, more workers or not', async () => {
    for (const workers of [2, 20]) {
      const clock = new ManualClock();
      const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 20 }] });
      // 300 tokens a call (200 in, 100 out, no usage told: kept whole), 100 tokens/s after a burst
      // of 1000: an article's two calls need 6 s of tokens, in a 10 s timeout; 40 calls need 110 s,
      // far past it for the articles that would queue were they started.
      const summary = await drive(
        clock,
        runPipeline({
          source: generateArticles(20),
          providers: [
            {
              provider,
              limits: [
                { kind: 'requests', rate: Infinity, burst: 1 },
                { kind: 'tokens', rate: 100, burst: 1000 },
              ],
              estimateInputTokens: () => 200,
              maxOutputTokens: 100,
            },
          ],
          workers,
          timeoutMs: 10_000,
          clock,
        }),
        10,
      );
      expect({ workers, succeeded: summary.succeeded, reasons: summary.failureReasons }).toEqual({ workers, succeeded: 20, reasons: {} });
      // The token limit held the run: 40 calls of 300 tokens, 1000 at once, then 100 a second.
      expect(summary.elapsedMs).toBeGreaterThanOrEqual(((40 * 300 - 1000) / 100) * 1000 - 3000);
    }
  });
});
