import { describe, expect, it } from 'vitest';
import { formatAttempt, formatRate, formatSummary, plural } from '../../cmd/format.ts';
import { ManualClock } from '../../src/clock.ts';
import { formatUsd, LocalBudget } from '../../src/quota/budget.ts';
import type { RunSummary } from '../../src/pipeline/metrics.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { BadRequestError, RateLimitError } from '../../src/provider/provider.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { drive, ScriptedProvider } from '../../src/testing/scripted-provider.ts';

describe('the summary lines (cmd/format.ts)', () => {
  it('plural() says one of a thing in the singular', () => {
    expect([plural(0, 'article'), plural(1, 'article'), plural(2, 'article'), plural(1, 'retry', 'retries')]).toEqual([
      '0 articles',
      '1 article',
      '2 articles',
      '1 retry',
    ]);
  });

  it('counts one 429, one retry, one dead letter and one wasted call in the singular', async () => {
    const clock = new ManualClock();
    // Article 1: a 429, then both calls answer; article 2: refused for good at its first call.
    const provider = new ScriptedProvider({
      name: 'sim',
      clock,
      script: [
        { latencyMs: 10, error: new RateLimitError(undefined, { retryAfterMs: 5 }) },
        { latencyMs: 10 },
        { latencyMs: 10 },
        { latencyMs: 10, error: new BadRequestError('rejected') },
      ],
    });
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(2), providers: [{ provider, limits: requestLimit(Infinity, 1) }], workers: 1, clock }),
    );
    const lines = formatSummary(summary);
    expect(lines[0]).toMatch(/^Rate limit=inf\/s burst=1 \| 2 articles \| Succeeded:1 Failed:1 \| /);
    // The refused call has a column of its own: the answered and the columns after them add up to the calls.
    expect(lines[1]).toBe(
      'Calls: 4 (2 answered) | Retries: 1 | 429s received: 1 | 5xx: 0 | Timeouts: 0 | Other failures: 1 | Dead letters: 1 | Cancelled: 0',
    );
    // What went wrong leads the line; the efficiency (of the calls made) comes after it.
    expect(lines[2]).toMatch(
      /^1 429, 1 retry, 1 dead letter, 1 wasted call \| Least possible: \S+, bound by the workers: the articles' critical paths \/ 1 worker \| Efficiency: \d+\.\d%$/,
    );
  });

  it('says where the adaptive rate settled, and the rate bound at the rates it allowed', async () => {
    const clock = new ManualClock();
    // Every third call a 429: the adaptive rate cuts the rate from 40/s.
    const script = Array.from({ length: 200 }, (_, i) =>
      i % 3 === 2 ? { latencyMs: 5, error: new RateLimitError(undefined, {}) } : { latencyMs: 5 },
    );
    const provider = new ScriptedProvider({ name: 'sim', clock, script });
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(40),
        providers: [{ provider, limits: requestLimit(40, 1), adaptive: {} }],
        timeoutMs: 60_000,
        retry: { maxAttempts: 10 },
        clock,
      }),
      5,
    );
    const settled = summary.providers[0]!.finalRate;
    expect(settled).toBeLessThan(40);
    const lines = formatSummary(summary);
    expect(lines[0]).toMatch(
      new RegExp(`^Rate limit=40/s \\(adaptive: settled at ${formatRate(settled).replace('.', '\\.')}/s\\) burst=1 \\| 40 articles \\|`),
    );
    expect(lines[2]).toMatch(
      /Least possible: \S+, bound by the rate: \(\d+ calls − burst 1\) \/ the rates allowed \(40\/s → [\d.]+\/s\) = /,
    );
  });

  it('says one cost: with a budget, of it; resumed, this run and in all', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 10 }] });
    const price = { inputPerMTok: 1, outputPerMTok: 1 };
    const once = async (budget?: LocalBudget) =>
      drive(
        clock,
        runPipeline({ source: generateArticles(2), providers: [{ provider, limits: requestLimit(Infinity, 1), price }], budget, clock }),
      );
    const cost = (summary: RunSummary, context = {}) => formatSummary(summary, context).find((line) => line.startsWith('Cost: '));
    // The scripted provider tells no usage: each call counts at its worst case.
    const plain = await once();
    const usd = formatUsd(plain.costUsd!);
    expect(cost(plain)).toBe(`Cost: ${usd}`);
    expect(cost(await once(new LocalBudget({ maxUsd: 5 })))).toBe(`Cost: ${usd} of a $5.00 budget`);
    expect(cost(plain, { earlierCostUsd: 1.5 })).toBe(`Cost: ${usd} this run, ${formatUsd(1.5 + plain.costUsd!)} in all`);
    expect(cost(await once(new LocalBudget({ maxUsd: 5, spentUsd: 1.5 })), { earlierCostUsd: 1.5 })).toBe(
      `Cost: ${usd} this run, ${formatUsd(1.5 + plain.costUsd!)} in all of a $5.00 budget`,
    );
  });

  it('leads with the efficiency only when nothing went wrong', async () => {
    const clock = new ManualClock();
    const provider = new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 10 }, { latencyMs: 10 }] });
    const summary = await drive(
      clock,
      runPipeline({ source: generateArticles(1), providers: [{ provider, limits: requestLimit(Infinity, 1) }], workers: 1, clock }),
    );
    expect(formatSummary(summary)[2]).toMatch(
      /^Least possible: \S+, bound by latency: .* \| Efficiency: 100\.0% \| 0 429s, 0 retries, 0 dead letters, 0 wasted calls$/,
    );
  });
});

describe('the per-attempt lines (cmd/format.ts)', () => {
  const base = {
    provider: 'sim',
    task: 'summarize' as const,
    articleId: '7',
    workerId: 0,
    waitMs: 0,
    sentAtMs: undefined,
    latencyMs: 0,
    atMs: 0,
    usage: undefined,
    response: undefined,
    costUsd: undefined,
    repair: 0,
  };

  it('a refusal of the open circuit waits with the same attempt: no retry is counted', () => {
    const line = formatAttempt({ ...base, attempt: 2, outcome: 'circuit-open', called: false, retryInMs: 1500, error: undefined }, 3);
    expect(line).toBe(
      'worker 1 | article 7 | summarize | circuit open, not called after waiting 0.00ms, attempt 2/3 waits for the circuit (1.500s at most)',
    );
  });

  it('a failed call says which retry comes next and when', () => {
    const line = formatAttempt(
      { ...base, attempt: 1, outcome: 'server-error', called: true, sentAtMs: 0, latencyMs: 20, retryInMs: 100, error: undefined },
      3,
    );
    expect(line).toBe('worker 1 | article 7 | summarize | server error in 20ms (waited 0.00ms), retry 2/3 in 100ms');
  });

  it('a repair says which it is, apart from the attempts', () => {
    const line = formatAttempt(
      { ...base, attempt: 1, repair: 1, outcome: 'ok', called: true, sentAtMs: 0, latencyMs: 20, retryInMs: undefined, error: undefined },
      3,
    );
    expect(line).toBe('worker 1 | article 7 | summarize | repair 1: ok in 20ms (waited 0.00ms)');
  });
});
