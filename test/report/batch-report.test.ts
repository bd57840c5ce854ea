// A batch run on the report: its batches on the timeline, from submission to end, a row per status.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBatch } from '../../src/batch/run-batch.ts';
import { SimulatedBatchApi } from '../../src/batch/simulated-batch-api.ts';
import { ManualClock } from '../../src/clock.ts';
import { reportCharts } from '../../src/report/report-charts.ts';
import { RunEvents } from '../../src/pipeline/run-events.ts';
import { RunRecorder } from '../../src/report/run-recorder.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { makeTempDir, runCli } from '../cli/run-cli.ts';
import { toldRun } from './told-run.ts';

let temp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(() => temp.remove());

/** The bars of a record's batches chart, as its spec holds them. */
function bars(recorder: RunRecorder) {
  const chart = reportCharts(recorder.record()).find((each) => each.id === 'batches');
  return (chart?.spec as { data: { values: { batch: string; status: string; rows: number; from: number; to: number }[] } } | undefined)
    ?.data.values;
}

describe('a batch run on the report', () => {
  it('draws each batch from its submission to its end, on the run’s clock', async () => {
    const clock = new ManualClock();
    const recorder = new RunRecorder({ clock, providers: [{ name: 'simulated', limits: [] }] });
    const events = new RunEvents();
    events.observe(recorder);
    const api = new SimulatedBatchApi({
      provider: new SimulatedProvider({ clock, minLatencyMs: 0, maxLatencyMs: 0 }),
      durationMs: 100,
      clock,
    });
    const summary = await drive(
      clock,
      runBatch({
        source: generateArticles(3),
        api,
        batchSize: 2,
        pollMs: 30,
        clock,
        events,
      }),
    );
    expect(summary).toMatchObject({ succeeded: 3, batches: 4, rows: 6 });
    // The summaries first (3 rows: a batch of 2 and one of 1), read back at the first poll past 100 ms;
    // then the sentiments, which need the summaries, submitted at once.
    expect(recorder.record().batches?.map(({ rows, fromMs, toMs, status }) => ({ rows, fromMs, toMs, status }))).toEqual([
      { rows: 2, fromMs: 0, toMs: 120, status: 'completed' },
      { rows: 1, fromMs: 0, toMs: 120, status: 'completed' },
      { rows: 2, fromMs: 120, toMs: 240, status: 'completed' },
      { rows: 1, fromMs: 120, toMs: 240, status: 'completed' },
    ]);
    expect(bars(recorder)?.map(({ rows, from, to, status }) => ({ rows, from, to, status }))).toEqual([
      { rows: 2, from: 0, to: 0.12, status: 'completed' },
      { rows: 1, from: 0, to: 0.12, status: 'completed' },
      { rows: 2, from: 0.12, to: 0.24, status: 'completed' },
      { rows: 1, from: 0.12, to: 0.24, status: 'completed' },
    ]);
    // No live call: the calls' charts would be empty; the batches, and the articles as they ended.
    expect(reportCharts(recorder.record()).map((chart) => chart.id)).toEqual(['batches', 'articles']);
    expect(recorder.record().ending).toBe('finished');
  });

  it('draws a batch still at the provider up to now, and one a resumed run found there from the run’s start', async () => {
    const clock = new ManualClock();
    const recorder = new RunRecorder({ clock, providers: [] });
    const run = toldRun([recorder], { clock });
    await clock.advance(50);
    run.batch({ type: 'submitted', batchId: 'b-new', atMs: 50, rows: 7, status: 'submitted' });
    await clock.advance(250);
    run.batch({ type: 'ended', batchId: 'b-old', atMs: 300, rows: 3, status: 'expired' });
    expect(bars(recorder)).toEqual([
      { batch: 'b-new', rows: 7, status: 'running', from: 0.05, to: 0.3 },
      { batch: 'b-old', rows: 3, status: 'expired', from: 0, to: 0.3 },
    ]);
  });

  it('--batch --report writes the page with its batches drawn', async () => {
    const file = join(temp.dir, 'batch.html');
    const result = await runCli([
      '--batch',
      '--batch-poll=50ms',
      '--batch-size=2',
      '--articles=3',
      `--output=${join(temp.dir, 'batch.jsonl')}`,
      '--report',
      file,
      '--quiet',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^Report: .*batch\.html \(\d+ KiB, written in \d+ ms\)$/m);
    const page = await readFile(file, 'utf8');
    expect(page).toMatch(/<p class="status">finished after [\d.]+ s/);
    const figure = page.slice(page.indexOf('<figure id="chart-batches">'));
    expect(figure).toMatch(/^<figure id="chart-batches"><figcaption>Batches at the provider, from submission to end<\/figcaption><svg/);
    // Vega drew a bar per batch: four batches (two rounds of a batch of 2 and one of 1).
    expect(figure.slice(0, figure.indexOf('</figure>')).match(/aria-roledescription="bar"/g)).toHaveLength(4);
    expect(page).toContain('<td>4 (6 rows), 0 at the provider now</td>');
  });

  it('--batch --report into a folder that does not exist: one line, exit 2, nothing written', async () => {
    const output = join(temp.dir, 'never.jsonl');
    const result = await runCli(['--batch', '--articles=2', `--output=${output}`, '--report', join(temp.dir, 'none', 'r.html')]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `error: --report ${join(temp.dir, 'none', 'r.html')}: no folder ${join(temp.dir, 'none')} to write it in`,
    );
    expect(existsSync(output)).toBe(false);
    expect(existsSync(`${output}.batches.json`)).toBe(false);
  });
});
