// A pool of three members, each with its own quota and latency, under each strategy: how close the
// pool runs to its members' combined quota, how many 429s it draws, and how soon a killed member's
// calls are answered by the others. Prints a table; writes bench/results/pools.{json,txt}.
//
//   npm run bench:pools            (BENCH_ROUNDS=n rounds per figure, 3 by default)
//
// The members are simulated providers in this process, each keeping a server-side quota (a token
// bucket at its rate, checked as a call arrives) that answers 429 past it — what a key's quota
// does — with the providers file's limits at the same rate and burst. The quota's bucket holds one
// call more than the limits' burst, the allowance test/cli/shared-quota.test.ts gives a quota: an
// equal one refuses a call whenever a stall of this process's event loop holds one call after its
// grant and lets the next go on time (docs/shared-quotas.md, "What is not"), which is the
// machine's doing, not the pool's. The run is the library's `runPipeline` with the pool as both
// tasks' route: 300 articles, 600 calls, each article within the default timeout (5 s).
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  generateArticles,
  NetworkError,
  requestLimit,
  runPipeline,
  RunEvents,
  SimulatedProvider,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type PipelineAttemptEvent,
  type PoolStrategy,
  type Provider,
} from '../src/index.ts';
import { markdownTable } from './lib/table.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ARTICLES = 300;
/** Each article makes two calls (summarize, then sentiment). */
const CALLS = ARTICLES * 2;
const WORKERS = 64;
const STRATEGIES: readonly PoolStrategy[] = ['soonest', 'weighted', 'ordered'];

interface MemberSpec {
  readonly name: string;
  /** Calls per second, the quota's and the limits'. */
  readonly rate: number;
  readonly burst: number;
  readonly minLatencyMs: number;
  readonly maxLatencyMs: number;
}

/** Three keys of one model: the fastest to answer is the smallest quota, the biggest answers slowest. */
const MEMBERS: readonly MemberSpec[] = [
  { name: 'key-10', rate: 10, burst: 2, minLatencyMs: 50, maxLatencyMs: 150 },
  { name: 'key-20', rate: 20, burst: 2, minLatencyMs: 100, maxLatencyMs: 300 },
  { name: 'key-30', rate: 30, burst: 2, minLatencyMs: 200, maxLatencyMs: 600 },
];
const COMBINED_RATE = MEMBERS.reduce((sum, member) => sum + member.rate, 0);
const COMBINED_BURST = MEMBERS.reduce((sum, member) => sum + member.burst, 0);
/** The member killed in the kill runs, and when (ms after the run's start). */
const KILLED = 'key-20';
const KILL_AT_MS = 3000;

/**
 * A provider that can be killed as a server process is: calls in flight break (connection reset)
 * and later ones are refused at once — network errors, retried elsewhere by the pool.
 */
class KillableProvider implements Provider {
  readonly name: string;
  readonly #inner: SimulatedProvider;
  readonly #inFlight = new Set<(error: Error) => void>();
  killedAtMs: number | undefined;

  constructor(inner: SimulatedProvider) {
    this.name = inner.name;
    this.#inner = inner;
  }

  kill(): void {
    this.killedAtMs = performance.now();
    for (const breakCall of this.#inFlight) breakCall(new NetworkError('socket hang up', { code: 'ECONNRESET' }));
  }

  call(request: LlmRequest, options?: CallOptions): Promise<LlmResponse> {
    if (this.killedAtMs !== undefined) return Promise.reject(new NetworkError('connect ECONNREFUSED', { code: 'ECONNREFUSED' }));
    return new Promise((resolve, reject) => {
      const breakCall = (error: Error) => reject(error);
      this.#inFlight.add(breakCall);
      this.#inner
        .call(request, options)
        .then(resolve, reject)
        .finally(() => this.#inFlight.delete(breakCall));
    });
  }
}

interface RunFigures {
  /** (answered calls − the combined burst) per second between the first and the last answered call's send, over the combined quota. */
  readonly rateShare: number;
  /**
   * The same over the first 90 % of the answered calls: while every member has calls waiting. The
   * last calls are sentiments that wait for their summaries' answers, and members idle meanwhile.
   */
  readonly saturatedShare: number;
  readonly rateLimited: number;
  readonly attempts: number;
  readonly succeeded: number;
  /** 429s in the run's first 500 ms: the first burst's calls leave later after their grant than those that follow them. */
  readonly rateLimitedAtStart: number;
  /** Answered calls per member. */
  readonly servedBy: Record<string, number>;
  /** With a kill: ms from the kill to the first call that had failed on the killed member answered by another. */
  readonly takeoverMs?: number | undefined;
}

async function run(strategy: PoolStrategy, kill: boolean, seed: number): Promise<RunFigures> {
  const providers = MEMBERS.map(
    (member, index) =>
      new KillableProvider(
        new SimulatedProvider({
          name: member.name,
          minLatencyMs: member.minLatencyMs,
          maxLatencyMs: member.maxLatencyMs,
          quota: { rate: member.rate, burst: member.burst + 1 },
          seed: seed * 10 + index,
        }),
      ),
  );
  /** When each answered call was sent, and each call that drew a 429. */
  const sends: number[] = [];
  const rateLimitedAt: number[] = [];
  const servedBy: Record<string, number> = {};
  let attempts = 0;
  const killed = providers.find((provider) => provider.name === KILLED)!;
  const killTimer = kill ? setTimeout(() => killed.kill(), KILL_AT_MS) : undefined;
  /** Calls (article and task) whose attempt on the killed member failed after the kill. */
  const moved = new Set<string>();
  let takeoverMs: number | undefined;
  const events = new RunEvents();
  events.on('attempt', (event: PipelineAttemptEvent) => {
    attempts += event.called ? 1 : 0;
    const call = `${event.articleId}/${event.task}`;
    if (event.outcome === 'ok') {
      sends.push(event.sentAtMs!);
      servedBy[event.provider] = (servedBy[event.provider] ?? 0) + 1;
      if (takeoverMs === undefined && moved.has(call) && event.provider !== KILLED) takeoverMs = performance.now() - killed.killedAtMs!;
    } else if (event.provider === KILLED && killed.killedAtMs !== undefined) moved.add(call);
    if (event.outcome === 'rate-limited') rateLimitedAt.push(event.sentAtMs!);
  });
  const summary = await runPipeline({
    source: generateArticles(ARTICLES, { seed }),
    total: ARTICLES,
    providers: providers.map((provider, index) => ({
      provider,
      limits: requestLimit(MEMBERS[index]!.rate, MEMBERS[index]!.burst),
      // The members' circuits as the command line has them, never giving up the run for a dead one.
      breaker: { giveUpAfterMs: Infinity },
    })),
    pools: [{ name: 'gpt', members: MEMBERS.map((member) => member.name), strategy }],
    routes: { summarize: 'gpt', sentiment: 'gpt' },
    workers: WORKERS,
    events,
  });
  clearTimeout(killTimer);
  sends.sort((a, b) => a - b);
  const shareOf = (instantsMs: readonly number[]) =>
    (instantsMs.length - COMBINED_BURST) / ((instantsMs.at(-1)! - instantsMs[0]!) / 1000) / COMBINED_RATE;
  return {
    rateShare: shareOf(sends),
    saturatedShare: shareOf(sends.slice(0, Math.floor(sends.length * 0.9))),
    rateLimited: rateLimitedAt.length,
    attempts,
    succeeded: summary.succeeded,
    rateLimitedAtStart: rateLimitedAt.filter((atMs) => atMs - Math.min(sends[0]!, ...rateLimitedAt) < 500).length,
    servedBy,
    takeoverMs: kill ? takeoverMs : undefined,
  };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const range = (values: readonly number[], format: (value: number) => string) =>
  `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`;

const results: Record<string, { steady: RunFigures[]; killed: RunFigures[] }> = {};
for (const strategy of STRATEGIES) results[strategy] = { steady: [], killed: [] };
// Rounds outermost, strategies interleaved: a noisy stretch of the machine falls on all of them.
for (let round = 1; round <= ROUNDS; round++) {
  for (const strategy of STRATEGIES) {
    const steady = await run(strategy, false, round);
    results[strategy]!.steady.push(steady);
    console.error(`round ${round} ${strategy}: ${steady.rateShare.toFixed(3)} of the combined quota, ${steady.rateLimited} 429s`);
    const killed = await run(strategy, true, round);
    results[strategy]!.killed.push(killed);
    console.error(
      `round ${round} ${strategy}, ${KILLED} killed: taken over in ${killed.takeoverMs?.toFixed(0)} ms, ${killed.succeeded} succeeded`,
    );
  }
}

const percent = (value: number) => `${(value * 100).toFixed(2)} %`;
const share = (value: number) => value.toFixed(3);
const ms = (value: number) => `${value.toFixed(0)} ms`;
const rows = STRATEGIES.map((strategy) => {
  const { steady, killed } = results[strategy]!;
  const served = MEMBERS.map((member) => median(steady.map((figures) => figures.servedBy[member.name] ?? 0)));
  const sum = (runs: readonly RunFigures[], figure: (run: RunFigures) => number) => runs.reduce((total, one) => total + figure(one), 0);
  return [
    strategy === 'soonest' ? 'soonest (default)' : strategy,
    range(
      steady.map((figures) => figures.rateShare),
      share,
    ),
    range(
      steady.map((figures) => figures.saturatedShare),
      share,
    ),
    `${percent(sum(steady, (one) => one.rateLimited) / sum(steady, (one) => one.attempts))} (${sum(steady, (one) => one.rateLimited)}; ${sum(steady, (one) => one.rateLimitedAtStart)} in the first 0.5 s)`,
    `${sum(steady, (one) => ARTICLES - one.succeeded)}`,
    served.join(' / '),
    range(
      killed.map((figures) => figures.takeoverMs ?? Number.NaN),
      ms,
    ),
    `${sum(killed, (one) => ARTICLES - one.succeeded)}`,
  ];
});
const soonest = results.soonest!.steady;
const weighted = results.weighted!.steady;
const soonestShare = median(soonest.map((figures) => figures.rateShare));
const soonest429 = soonest.reduce((total, one) => total + one.rateLimited, 0) / soonest.reduce((total, one) => total + one.attempts, 0);
const verdict = [
  `soonest: ${share(soonestShare)} of the combined quota (goal ≥ 0.97: ${soonestShare >= 0.97 ? 'PASS' : 'MISS'}),`,
  `${percent(soonest429)} 429s (goal < 0.5 %: ${soonest429 < 0.005 ? 'PASS' : 'MISS'}),`,
  `ahead of weighted (${share(median(weighted.map((figures) => figures.rateShare)))}): ${soonestShare > median(weighted.map((figures) => figures.rateShare)) ? 'PASS' : 'MISS'}`,
].join(' ');
const heading =
  `members ${MEMBERS.map((m) => `${m.name} ${m.rate}/s burst ${m.burst} (quota ${m.burst + 1}), ${m.minLatencyMs}–${m.maxLatencyMs} ms`).join('; ')}` +
  ` · combined ${COMBINED_RATE}/s · ${CALLS} calls (${ARTICLES} articles, ${WORKERS} workers) · median (min–max) of ${ROUNDS} rounds`;
const table = markdownTable(
  [
    'strategy',
    'achieved / combined quota',
    'the same, first 90 % of calls',
    '429s / attempts, all rounds',
    'articles not succeeded, all rounds',
    `answered by ${MEMBERS.map((m) => m.name).join(' / ')}`,
    `${KILLED} killed at ${KILL_AT_MS / 1000} s: first of its calls answered elsewhere`,
    'not succeeded with the kill, all rounds',
  ],
  rows,
);
const text = `${heading}\n\n${table}\n\n${verdict}\n`;
console.log(`\n${text}`);
writeFileSync(join(ROOT, 'bench/results/pools.json'), `${JSON.stringify({ members: MEMBERS, rounds: ROUNDS, results }, null, 2)}\n`);
writeFileSync(join(ROOT, 'bench/results/pools.txt'), text);
