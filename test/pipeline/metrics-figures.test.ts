// The summary's figures as a person reads them: every count adds up — the calls to their columns,
// the providers and the tasks to the run, a pool's members to the pool — and a pool member dropped
// for a refused key leaves the least-possible-time bound from when it was dropped.
import { describe, expect, it } from 'vitest';
import { formatSummary } from '../../cmd/format.ts';
import { ManualClock, sleep } from '../../src/clock.ts';
import { CALL_COLUMNS } from '../../src/pipeline/run-tally.ts';
import { RunEvents, type PipelineAttemptEvent } from '../../src/pipeline/run-events.ts';
import type { CallCounts, RunSummary } from '../../src/pipeline/metrics.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import { readAnswer } from '../../src/provider/answer.ts';
import {
  AuthenticationError,
  RateLimitError,
  ServerError,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type Provider,
} from '../../src/provider/provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import '../tokenizer-loaded.ts';

const USAGE = { inputTokens: 100, outputTokens: 20 };
const PRICE = { inputPerMTok: 1000, outputPerMTok: 1000 };

/** What a call does, by its number (from 0) at its provider: an error, an answer out of its schema, or a fitting answer. */
type Play = (n: number, request: LlmRequest) => Error | 'unfit' | 'fit';

/** A provider that answers each call as `play` says, `latencyMs` after it came, every answer with its usage. */
class PlayedProvider implements Provider {
  calls = 0;
  constructor(
    readonly name: string,
    private readonly clock: ManualClock,
    private readonly play: Play,
    private readonly latencyMs = 10,
  ) {}

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    const what = this.play(this.calls++, request);
    await sleep(this.clock, this.latencyMs, options.signal);
    if (what instanceof Error) throw what;
    const fit =
      request.task === 'summarize'
        ? { summary: `summary of ${request.articleId}`, keywords: ['k'] }
        : { sentiment: 'positive', score: 0.5 };
    const output = what === 'unfit' ? { ...fit, unexpected: true } : fit;
    return { output: await readAnswer(request, output, { usage: USAGE }), usage: USAGE };
  }
}

/** A count of calls is its columns added up. */
function expectColumnsAddUp(counts: CallCounts, what: string): void {
  expect(
    CALL_COLUMNS.reduce((sum, column) => sum + counts[column], 0),
    `${what}: ${JSON.stringify(counts)}`,
  ).toBe(counts.calls);
}

const sumOf = <T>(items: readonly T[], of: (item: T) => number) => items.reduce((sum, item) => sum + of(item), 0);

/** Every count of the summary that should add up, does. */
function expectSummaryAddsUp(summary: RunSummary): void {
  expectColumnsAddUp(summary, 'the run');
  for (const p of summary.providers) expectColumnsAddUp(p, `provider ${p.name}`);
  for (const t of summary.tasks) expectColumnsAddUp(t, `task ${t.name}`);
  for (const field of ['calls', ...CALL_COLUMNS, 'retries'] as const) {
    expect(
      sumOf(summary.providers, (p) => p[field]),
      `providers' ${field}`,
    ).toBe(summary[field]);
    expect(
      sumOf(summary.tasks, (t) => t[field]),
      `tasks' ${field}`,
    ).toBe(summary[field]);
  }
  expect(sumOf(summary.tasks, (t) => t.repairs)).toBe(summary.repairs);
  expect(sumOf(summary.tasks, (t) => t.tokensUsed)).toBe(sumOf(summary.providers, (p) => p.tokensUsed));
  expect(Math.round(sumOf(summary.providers, (p) => p.costUsd ?? 0) * 1e9)).toBe(Math.round(summary.costUsd! * 1e9));
  expect(Math.round(sumOf(summary.tasks, (t) => t.costUsd ?? 0) * 1e9)).toBe(Math.round(summary.costUsd! * 1e9));
  for (const pool of summary.pools ?? []) {
    const members = summary.providers.filter((p) => pool.members.includes(p.name));
    expect(pool.calls).toBe(sumOf(members, (p) => p.calls));
    expect(pool.answered).toBe(sumOf(members, (p) => p.answered));
  }
  expect(summary.succeeded + summary.failed + summary.cancelled).toBe(summary.articles);
  expect(sumOf(Object.values(summary.failureReasons), (count) => count)).toBe(summary.failed);
  expect(summary.leastElapsedMs).toBeLessThanOrEqual(summary.elapsedMs);
}

/** The summary's lines say the same: each `N calls` (or `Calls: N`) is its answered and failure columns added up. */
function expectLinesAddUp(lines: readonly string[]): void {
  const callsLine = lines.find((line) => line.startsWith('Calls: '))!;
  const calls = Number(/^Calls: (\d+)/.exec(callsLine)![1]);
  const answered = Number(/^Calls: \d+ \((\d+) answered\)/.exec(callsLine)?.[1] ?? calls);
  const failures = [
    '429s received',
    '5xx',
    'Timeouts',
    'Network errors',
    'Refused \\(key, account\\)',
    'Unfit answers',
    'Calls cancelled',
    'Other failures',
  ];
  const failed = sumOf(failures, (label) => Number(new RegExp(`\\| ${label}: (\\d+)`).exec(callsLine)?.[1] ?? 0));
  expect(answered + failed, callsLine).toBe(calls);
  for (const line of lines.filter((each) => /^(Provider|Task) /.test(each))) {
    const [, n, , shown] = /: (\d+) calls?(, (\d+) answered)?/.exec(line)!;
    const kinds = [
      '429s',
      '5xx',
      'timeouts',
      'network errors',
      'refused \\(key, account\\)',
      'unfit answers',
      'calls cancelled',
      'other failures',
    ];
    const lineFailed = sumOf(kinds, (label) => Number(new RegExp(`\\| ${label} (\\d+)`).exec(line)?.[1] ?? 0));
    expect(Number(shown ?? n) + lineFailed, line).toBe(Number(n));
  }
}

describe('the summary’s figures', () => {
  it('add up over a run with a dropped member, 429s, retries, repairs and a fallback: the data and the lines', async () => {
    const clock = new ManualClock();
    // key-a answers, with a 429 and an unfit answer among the first, until its key is refused at its 12th
    // call; key-b's key is refused at once; claude, the fallback, answers all but one 5xx.
    const keyA = new PlayedProvider('key-a', clock, (n) =>
      n === 2
        ? new RateLimitError(undefined, { retryAfterMs: 20 })
        : n === 4
          ? 'unfit'
          : n >= 11
            ? new AuthenticationError('key refused')
            : 'fit',
    );
    const keyB = new PlayedProvider('key-b', clock, () => new AuthenticationError('key refused'));
    const claude = new PlayedProvider('claude', clock, (n) => (n === 3 ? new ServerError() : 'fit'));
    const events = new RunEvents();
    const seen: PipelineAttemptEvent[] = [];
    events.on('attempt', (event) => seen.push(event));
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(20),
        total: 20,
        providers: [
          { provider: keyA, limits: requestLimit(50, 2), price: PRICE },
          { provider: keyB, limits: requestLimit(50, 2), price: PRICE },
          { provider: claude, limits: requestLimit(50, 2), price: PRICE },
        ],
        pools: [{ name: 'gpt', members: ['key-a', 'key-b'], fallback: ['claude'] }],
        routes: { summarize: 'gpt', sentiment: 'gpt' },
        workers: 4,
        timeoutMs: 60_000,
        retry: { maxAttempts: 5 },
        clock,
        events,
      }),
    );
    // What the run was meant to hold: each kind of trouble at least once.
    expect(summary.succeeded).toBe(20);
    expect(summary.refused).toBeGreaterThanOrEqual(2);
    expect(summary.rateLimited).toBeGreaterThanOrEqual(1);
    expect(summary.retries).toBeGreaterThanOrEqual(1);
    expect(summary.repairs).toBeGreaterThanOrEqual(1);
    expect(summary.serverErrors).toBe(1);
    expect(summary.providers.find((p) => p.name === 'claude')!.answered).toBeGreaterThan(0);
    expect(summary.pools![0]!.dropped.map((each) => each.member).sort()).toEqual(['key-a', 'key-b']);
    // The stream's attempts are the calls counted.
    expect(seen.filter((event) => event.called)).toHaveLength(summary.calls);
    expectSummaryAddsUp(summary);
    const lines = formatSummary(summary);
    expectLinesAddUp(lines);
    // A pool's share is of what its members answered: a member whose calls all failed served none.
    expect(lines).toContainEqual(expect.stringMatching(/^Pool gpt: \d+ calls, \d+ answered \(key-a 100% dropped, key-b 0% dropped\) \| /));
  });

  it('a member dropped for a refused key leaves the rate bound from when it was dropped', async () => {
    const clock = new ManualClock();
    // Two keys at 10 calls/s: key-b's is refused at its first calls (those sent before the first answer); key-a
    // answers all 40 alone.
    const keyA = new PlayedProvider('key-a', clock, () => 'fit');
    const keyB = new PlayedProvider('key-b', clock, () => new AuthenticationError('key refused'));
    const summary = await drive(
      clock,
      runPipeline({
        source: generateArticles(20),
        providers: [
          { provider: keyA, limits: requestLimit(10, 1) },
          { provider: keyB, limits: requestLimit(10, 1) },
        ],
        pools: [{ name: 'gpt', members: ['key-a', 'key-b'] }],
        routes: { summarize: 'gpt', sentiment: 'gpt' },
        workers: 4,
        timeoutMs: 60_000,
        clock,
      }),
    );
    const pool = summary.pools![0]!;
    expect(pool.dropped).toEqual([{ member: 'key-b', atMs: expect.any(Number) }]);
    expect(pool.dropped[0]!.atMs).toBeLessThan(100);
    // key-a's 40 calls at its own 10/s take 3.9 s at least: the pool's 20/s held only until key-b went.
    expect(summary.providers.find((p) => p.name === 'key-a')!.answered).toBe(40);
    expect(summary.boundBy).toBe('rate');
    expect(pool.rateFloorMs).toBeGreaterThan(3800);
    expect(summary.leastElapsedMs).toBeLessThanOrEqual(summary.elapsedMs);
    expect(summary.efficiency).toBeGreaterThan(0.95);
    const lines = formatSummary(summary);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^Pool gpt: \d+ calls, 40 answered \(key-a 100%, key-b 0% dropped\) \| combined 20\/s burst 2, 10\/s once key-b was dropped at /,
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^Provider key-b: (\d+) calls?, 0 answered \(.*\) \| 429s 0 \| refused \(key, account\) \1 \| /),
    );
  });
});
