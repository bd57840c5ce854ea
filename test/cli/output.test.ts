import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, linesOf, makeTempDir, runCli, startCli } from './run-cli.ts';

const GO_SUMMARY = /^Rate limit=3\/s burst=3 \| 5 articles \| Succeeded:5 Failed:0 \| (\d+\.\d{3})s$/m;
const CALL_LINE = /^worker ([1-5]) \| article ([1-5]) \| (summarize|sentiment) \| ok in \S+ \(waited \S+\)$/;
const ARTICLE_LINE = /^✓ article ([1-5]) \[(positive|negative|neutral) [+-]\d\.\d{2}\] \S/;

/** `lines` holds a line matching each pattern, in this order (other lines may come between). */
function expectInOrder(lines: readonly string[], patterns: readonly RegExp[]): void {
  let from = 0;
  for (const pattern of patterns) {
    const at = lines.findIndex((line, index) => index >= from && pattern.test(line));
    expect(at, `no line matching ${pattern} after line ${from} in:\n${lines.join('\n')}`).toBeGreaterThanOrEqual(0);
    from = at + 1;
  }
}

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

describe.concurrent('news-processor - the per-call lines and the summary', { timeout: 60_000 }, () => {
  it('--articles=5 --workers=5 --rate=3 prints every call, every article, then the summary line and the figures', async () => {
    const result = await runCli(['--articles=5', '--workers=5', '--rate=3', '--min-latency=1ms', '--max-latency=5ms']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);

    const lines = result.stdout.split('\n');
    const calls = lines.filter((line) => line.startsWith('worker '));
    expect(calls).toHaveLength(10);
    for (const line of calls) expect(line).toMatch(CALL_LINE);
    const articles = lines.filter((line) => line.startsWith('✓ ') || line.startsWith('✗ ') || line.startsWith('– '));
    expect(articles).toHaveLength(5);
    for (const line of articles) expect(line).toMatch(ARTICLE_LINE);

    // Each article: summarised, then sentiment, then its result line.
    for (let id = 1; id <= 5; id++) {
      const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
      const summarize = at(new RegExp(`^worker \\d \\| article ${id} \\| summarize \\|`));
      const sentiment = at(new RegExp(`^worker \\d \\| article ${id} \\| sentiment \\|`));
      const done = at(new RegExp(`^✓ article ${id} `));
      expect(summarize, `article ${id}`).toBeGreaterThanOrEqual(0);
      expect(sentiment, `article ${id}`).toBeGreaterThan(summarize);
      expect(done, `article ${id}`).toBeGreaterThan(sentiment);
    }

    const summaryMatch = GO_SUMMARY.exec(result.stdout);
    expect(summaryMatch, result.stdout).not.toBeNull();
    // 10 calls, 3 of them from the burst, at 3/s: the last token cannot come before 7/3 s.
    expect(Number(summaryMatch![1])).toBeGreaterThanOrEqual(2.333);

    const summaryAt = lines.indexOf(summaryMatch![0]);
    expect(lines[summaryAt + 1]).toMatch(
      /^Calls: 10 \| Retries: 0 \| 429s received: 0 \| 5xx: 0 \| Timeouts: 0 \| Dead letters: 0 \| Cancelled: 0$/,
    );
    expectInOrder(lines.slice(summaryAt + 1), [
      /^Calls: /,
      /^Least possible: \S+, bound by the rate: \(10 calls − burst 3\) \/ 3\/s = 2\.333s, \+ last call \S+ \| Efficiency: \d+\.\d% \| 0 429s, 0 retries, 0 dead letters, 0 wasted calls$/,
      /^Call latency: p50 \S+ {2}p95 \S+ {2}p99 \S+ {2}max \S+$/,
      /^Limiter wait: p50 \S+ {2}p95 \S+ {2}p99 \S+ {2}max \S+$/,
    ]);
    // The per-call and per-article lines all come before the summary.
    expect(lines.slice(summaryAt).some((line) => CALL_LINE.test(line) || ARTICLE_LINE.test(line))).toBe(false);
  });

  it("accepts Go's single-dash spelling: -articles=3 -rate=inf -workers 2", async () => {
    const result = await runCli(['-articles=3', '-rate=inf', '-workers', '2', '-min-latency=0ms', '-max-latency=1ms']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Rate limit=inf\/s burst=3 \| 3 articles \| Succeeded:3 Failed:0 \| \S+$/m);
    // No rate limit: the bound is the calls themselves (one article's critical path, or all of them over the workers).
    expect(result.stdout).toMatch(/^Least possible: \S+, bound by (latency|the workers): .* \| Efficiency: \d+\.\d% \| /m);
    const calls = result.stdout.split('\n').filter((line) => line.startsWith('worker '));
    expect(calls).toHaveLength(6);
    for (const line of calls) expect(line).toMatch(/^worker [12] \| article [1-3] \| /);
  });

  it('--quiet prints only the summary lines, and says where --output went', async () => {
    const output = join(temp.dir, 'quiet-results.jsonl');
    const result = await runCli([...FAST, '--articles=20', '--quiet', '--output', output]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = linesOf(result.stdout);
    expect(lines[0]).toMatch(/^Rate limit=inf\/s burst=3 \| 20 articles \| Succeeded:20 Failed:0 \| \S+$/);
    expectInOrder(lines, [/^Rate limit=/, /^Calls: 40 \| /, /^Least possible: /, /^Call latency: /, /^Limiter wait: /]);
    expect(lines.at(-1)).toBe(`Results: 20 lines written to ${output}`);
    // Summary lines only: no per-call or per-article line, every line a "Name: figures" line.
    for (const line of lines.slice(1)) expect(line).toMatch(/^[A-Z][^:]*: \S/);
    expect(lines.some((line) => line.startsWith('worker ') || /^[✓✗–] article /.test(line))).toBe(false);
    expect(linesOf(await readFile(output, 'utf8'))).toHaveLength(20);
  });

  it('stops quietly when stdout is closed early (news-processor … | head -1)', async () => {
    const run = startCli([...FAST, '--articles=2000']);
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const result = await run.result;
    expect(result.timedOut, 'the run hung').toBe(false);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).not.toMatch(/Unhandled 'error' event/);
    // 1 would claim that articles failed; 0 (done) or 141 (128 + SIGPIPE, as a C tool would end) is right.
    expect([0, 141]).toContain(result.code);
  });

  it('with --output -, a closed stdout (… --output - | head -1) still prints the summary on stderr, exit 141', async () => {
    const run = startCli(['--articles=2000', '--rate=inf', '--min-latency=5ms', '--max-latency=10ms', '--output', '-', '--quiet']);
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const result = await run.result;
    expect(result.timedOut, 'the run hung').toBe(false);
    expect(result.code).toBe(141);
    expect(result.stderr).toMatch(/^Rate limit=inf\/s burst=3 \| \d+ of 2000 articles \| /m);
    expect(result.stderr).toMatch(/^Interrupted \(stdout closed\): intake stopped; the articles in flight were cancelled\.$/m);
    // stdout is gone: no line claims results were written there, and no error blames --output.
    expect(result.stderr).not.toMatch(/^Results: /m);
    expect(result.stderr).not.toMatch(/^error: /m);
  });

  it('says one of a thing in the singular: 1 article, 1 line, 1 worker', async () => {
    const output = join(temp.dir, 'one-result.jsonl');
    const result = await runCli([...FAST, '--articles=1', '--workers=1', '--quiet', '--output', output]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Rate limit=inf\/s burst=3 \| 1 article \| Succeeded:1 Failed:0 \| /m);
    expect(result.stdout).toMatch(
      /^Least possible: \S+, bound by (latency: .*|the workers: the articles' critical paths \/ 1 worker) \| /m,
    );
    expect(result.stdout).toMatch(/ \| 0 429s, 0 retries, 0 dead letters, 0 wasted calls$/m);
    expect(linesOf(result.stdout).at(-1)).toBe(`Results: 1 line written to ${output}`);
  });

  it('writes nothing to stderr on a clean run, also with more than 10 workers', async () => {
    const result = await runCli([...FAST, '--articles=200', '--workers=50', '--quiet']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
  });
});

describe.concurrent('news-processor --json', { timeout: 60_000 }, () => {
  const FIELDS = [
    'articles',
    'succeeded',
    'failed',
    'cancelled',
    'calls',
    'retries',
    'rateLimited',
    'deadLetters',
    'elapsedMs',
    'rateFloorMs',
    'leastElapsedMs',
    'efficiency',
    'rate',
    'burst',
    'workers',
  ] as const;

  type Summary = Record<(typeof FIELDS)[number], unknown> & { interrupted: unknown; skippedLines: unknown; boundBy: unknown };

  function parseSummary(stdout: string): Summary {
    const summary = JSON.parse(stdout) as Summary;
    expect(typeof summary).toBe('object');
    for (const field of FIELDS) expect(summary, field).toHaveProperty(field);
    // Said only when a signal interrupted the run.
    expect(summary).not.toHaveProperty('signal');
    return summary;
  }

  it('prints one JSON object and nothing else on stdout: the figures, the rate floor, an efficiency in (0, 1]', async () => {
    const result = await runCli([
      '--articles=10',
      '--workers=4',
      '--rate=500',
      '--burst=2',
      '--min-latency=0ms',
      '--max-latency=1ms',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const summary = parseSummary(result.stdout);
    expect(summary).toMatchObject({
      articles: 10,
      succeeded: 10,
      failed: 0,
      cancelled: 0,
      calls: 20,
      deadLetters: 0,
      retries: 0,
      rateLimited: 0,
      rate: 500,
      burst: 2,
      workers: 4,
      interrupted: false,
      skippedLines: 0,
    });
    // 20 calls, burst 2, at 500/s: 18 / 500 s = 36 ms before the last token, at the least.
    expect(summary.rateFloorMs as number).toBeGreaterThanOrEqual(36);
    expect(summary.elapsedMs as number).toBeGreaterThanOrEqual(36);
    expect(summary.efficiency as number).toBeGreaterThan(0);
    expect(summary.efficiency as number).toBeLessThanOrEqual(1);
  });

  it('keeps succeeded + failed + cancelled == articles and calls >= 2 × succeeded when calls fail', async () => {
    const result = await runCli([...FAST, '--articles=60', '--profile=production', '--timeout=300ms', '--json']);
    expect([0, 1]).toContain(result.code);
    const summary = parseSummary(result.stdout);
    // rate=inf: no rate floor, Infinity spelt as on the command line; the calls themselves bound the run.
    expect(summary).toMatchObject({ rate: 'inf', rateFloorMs: 0, lowerBoundsMs: { rate: 0 } });
    expect(['latency', 'workers']).toContain(summary.boundBy);
    const { articles, succeeded, failed, cancelled, calls, deadLetters } = summary as Record<string, number>;
    expect(articles).toBe(60);
    expect(succeeded! + failed! + cancelled!).toBe(articles);
    expect(calls).toBeGreaterThanOrEqual(2 * succeeded!);
    expect(deadLetters).toBe(failed);
    expect(result.code).toBe(failed! > 0 ? 1 : 0);
  });
});

describe.concurrent('news-processor --help', { timeout: 60_000 }, () => {
  const FLAGS = [
    '--articles',
    '--workers',
    '--rate',
    '--burst',
    '--timeout',
    '--max-attempts',
    '--min-latency',
    '--max-latency',
    '--profile',
    '--seed',
    '--provider-rate',
    '--provider-burst',
    '--input',
    '--skip-invalid',
    '--output',
    '--json',
    '--log-level',
    '--quiet',
    '--dry-run',
    '--help',
  ];

  it('--help exits 0 and shows every flag and the examples', async () => {
    const result = await runCli(['--help']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: news-processor /);
    for (const name of FLAGS) expect(result.stdout).toMatch(new RegExp(`^\\s+(-h, )?${name}\\b`, 'm'));
    expect(result.stdout).toMatch(
      /^Examples \(from a clone, put `npm start --` where `news-processor` stands, `npm start --silent --` when piped: npm's\nbanner goes to stdout; installed, `npx news-processor`\):$/m,
    );
    expect(result.stdout).toMatch(/\$ news-processor --articles=5 --workers=5 --rate=3/);
    expect(result.stdout).toMatch(/Exit codes: 0 [\s\S]* 1 [\s\S]* 2 [\s\S]*130 [\s\S]* 143 [\s\S]* 129 [\s\S]* 141 /);
  });
});

describe.concurrent('news-processor - the rate limit holds in real time', { timeout: 60_000 }, () => {
  it('--articles=4 --rate=2 --burst=1: 8 calls take at least 3.5 s (the rate floor)', async () => {
    const result = await runCli([
      '--articles=4',
      '--workers=5',
      '--rate=2',
      '--burst=1',
      '--min-latency=1ms',
      '--max-latency=2ms',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as { calls: number; succeeded: number; elapsedMs: number; rateFloorMs: number };
    expect(summary.succeeded).toBe(4);
    expect(summary.calls).toBe(8);
    // (8 calls − burst 1) / 2 per second: no schedule grants the last token before 3.5 s.
    expect(summary.elapsedMs).toBeGreaterThanOrEqual(3500);
    expect(summary.rateFloorMs).toBeGreaterThanOrEqual(3500);
    // Generous: the limiter should not waste much time either.
    expect(summary.elapsedMs).toBeLessThan(5000);
  });
});
