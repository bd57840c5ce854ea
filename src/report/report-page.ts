import { loadChartRenderer } from '../bench/chart-renderer.ts';
import { formatUsd } from '../quota/budget.ts';
import type { Percentiles, RunSummary } from '../pipeline/metrics.ts';
import { reportCharts, type ReportChart } from './report-charts.ts';
import type { RunRecord } from './run-recorder.ts';

export interface ReportPageOptions {
  /** The page's heading. @default "news-processor run" */
  readonly title?: string | undefined;
  /**
   * Whether the page is the dashboard's: it then follows the run, each new state of its `<main>`
   * sent by its server as a server-sent event (`page`, the element's HTML as a JSON string) at
   * `events`, until an `end` event; and its charts are drawn by the browser, with the vega and
   * vega-lite scripts the server serves at `vega.js` and `vega-lite.js`, so that drawing them
   * takes none of the run's own time.
   * @default false (a report: a still page, its charts drawn here)
   */
  readonly live?: boolean | undefined;
}

/**
 * A run's report as one HTML page. As a report (the default) it needs nothing else: its charts
 * drawn to SVG here by vega (from the vega-lite specs of {@link reportCharts}), inline with the
 * figures and tables, no script and nothing fetched — it opens offline, in any browser, and stays
 * small however long the run was (the record does). Needs the `vega` and `vega-lite` packages.
 */
export async function renderReportPage(record: RunRecord, options: ReportPageOptions = {}): Promise<string> {
  const title = options.title ?? 'news-processor run';
  const live = options.live === true;
  const main = await renderReportMain(record, { title, live });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${live ? '<script src="vega.js"></script><script src="vega-lite.js"></script>' : ''}
</head>
<body>
${main}
${live ? `<script>${LIVE_SCRIPT}</script>` : ''}
</body>
</html>
`;
}

/**
 * The page's `<main>` element alone: what the dashboard sends as the run goes. Live, each chart is
 * its vega-lite spec in a `<script type="application/json">` for the page's script to draw.
 */
export async function renderReportMain(record: RunRecord, options: { readonly title: string; readonly live: boolean }): Promise<string> {
  const { title, live } = options;
  const charts = reportCharts(record);
  const figures = live
    ? charts.map((chart) =>
        figure(chart, `<div class="chart"><script type="application/json" class="spec">${scriptJson(chart.spec)}</script></div>`),
      )
    : await Promise.all(charts.map(async (chart) => figure(chart, await chartSvg(chart))));
  const { summary } = record;
  const status =
    summary === undefined
      ? live
        ? `running: ${seconds(record.elapsedMs)} since ${record.startedAt}, updated as it goes`
        : `${record.ending ?? 'stopped'} after ${seconds(record.elapsedMs)}, started ${record.startedAt}`
      : `${ending(summary)} after ${seconds(summary.elapsedMs)}, started ${record.startedAt}`;
  return `<main id="report" data-version="${record.version}" data-ended="${summary !== undefined}">
<h1>${escapeHtml(title)}</h1>
<p class="status">${escapeHtml(status)}</p>
${summary === undefined ? liveFigures(record) : summaryFigures(summary)}
<section class="charts">
${figures.join('\n')}
</section>
${tasksTable(record)}
${summary === undefined ? '' : providersTable(summary)}
</main>`;
}

/** JSON safe inside a `<script>` element: no `</script>` (nor `<!--`) can end it early. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** One chart as SVG, drawn by vega from its vega-lite spec. */
async function chartSvg(chart: ReportChart): Promise<string> {
  const [vega, vl] = await loadChartRenderer('--report');
  const compiled = vl.compile(chart.spec as unknown as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function figure(chart: ReportChart, svg: string): string {
  return `<figure id="chart-${chart.id}"><figcaption>${escapeHtml(chart.title)}</figcaption>${svg}</figure>`;
}

function ending(summary: RunSummary): string {
  if (summary.stoppedBy !== undefined) return `stopped (${summary.stoppedBy.by}: ${summary.stoppedBy.message})`;
  if (summary.interrupted) return 'interrupted';
  return 'finished';
}

/** The figures of a run that has not ended: what the record counted so far. */
function liveFigures(record: RunRecord): string {
  const t = record.totals;
  const rows: [string, string][] = [
    ['articles ended', `${t.articles}: ${t.succeeded} succeeded, ${t.failed} failed, ${t.cancelled} cancelled`],
  ];
  if (record.batches === undefined) {
    rows.push([
      'calls',
      `${t.calls} (${t.retries} retries, ${t.repairs} repairs, ${t.rateLimited} answered 429), ${t.inFlight} in flight now`,
    ]);
    rows.push(['tokens', String(t.tokensUsed)]);
  } else {
    const running = record.batches.filter((batch) => batch.toMs === null).length;
    const rowCount = record.batches.reduce((sum, batch) => sum + batch.rows, 0);
    rows.push(['batches', `${record.batches.length} (${rowCount} rows), ${running} at the provider now`]);
  }
  if (t.costUsd !== undefined) rows.push(['cost', costText(t.costUsd, t.unknownCostUsd, record.budget?.maxUsd)]);
  return `<section class="figures"><h2>${record.ending === undefined ? 'So far' : 'Figures'}</h2>${table(['', ''], rows)}</section>`;
}

/** The summary's figures: what the run did, the least it could have taken, and what bound it. */
function summaryFigures(summary: RunSummary): string {
  const { lowerBoundsMs: bounds } = summary;
  const rows: [string, string][] = [
    [
      'articles',
      `${summary.articles}: ${summary.succeeded} succeeded, ${summary.failed} failed, ${summary.cancelled} cancelled` +
        (summary.notStarted === null || summary.notStarted === 0 ? '' : `, ${summary.notStarted} not started`),
    ],
    ['elapsed', seconds(summary.elapsedMs)],
    [
      'least possible',
      summary.boundBy === null
        ? 'nothing to measure against (no call made)'
        : `${seconds(summary.leastElapsedMs)}, bound by ${BOUND_TEXT[summary.boundBy]}` +
          (summary.efficiency === null ? '' : ` — ${(summary.efficiency * 100).toFixed(1)} % efficient`),
    ],
    [
      'lower bounds',
      `rate ${seconds(bounds.rate)} (rate floor ${seconds(summary.rateFloorMs)} + the last call) · ` +
        `latency ${seconds(bounds.latency)} (the longest article) · workers ${seconds(bounds.workers)} (the articles over ${summary.workers} workers)`,
    ],
    [
      'calls',
      // How each call ended, adding up to the calls; then what they were.
      `${summary.calls}: ${summary.answered} answered, ${summary.rateLimited} answered 429, ${summary.serverErrors} server errors, ` +
        `${summary.timeouts} timeouts, ${summary.networkErrors} network errors` +
        (summary.refused > 0 ? `, ${summary.refused} refused (key, account)` : '') +
        (summary.unfit > 0 ? `, ${summary.unfit} unfit answers` : '') +
        (summary.cancelledCalls > 0 ? `, ${summary.cancelledCalls} cancelled` : '') +
        (summary.otherErrors > 0 ? `, ${summary.otherErrors} other failures` : '') +
        `; ${summary.retries} retries, ${summary.repairs} repairs; ${summary.wastedCalls} for articles that failed`,
    ],
    ['call latency', percentiles(summary.callLatencyMs)],
    ['limiter wait', percentiles(summary.limiterWaitMs)],
  ];
  if (summary.costUsd !== undefined)
    rows.push([
      'cost',
      costText(summary.costUsd, summary.unknownCostUsd, summary.budget?.maxUsd, summary.budget?.spentUsd, summary.budget?.unknownUsd),
    ]);
  const reasons = Object.entries(summary.failureReasons);
  if (reasons.length > 0) rows.push(['failed articles', reasons.map(([reason, count]) => `${reason} ${count}`).join(', ')]);
  return `<section class="figures"><h2>Summary</h2>${table(['', ''], rows)}</section>`;
}

const BOUND_TEXT: Readonly<Record<NonNullable<RunSummary['boundBy']>, string>> = {
  rate: 'the rate limit',
  latency: 'the longest article (its calls in series)',
  workers: 'the workers (the calls over the workers)',
};

/**
 * What was spent; apart, what calls whose fate is unknown (sent, then a timeout or a connection
 * broken mid-request: perhaps billed) may have cost; and the budget, with what of it is spent in all.
 */
function costText(
  costUsd: number,
  unknownUsd: number | undefined,
  maxUsd: number | undefined,
  spentUsd?: number,
  unknownInAllUsd?: number,
): string {
  const unknown = (usd: number | undefined) => (usd === undefined || usd <= 0 ? '' : `, up to ${formatUsd(usd)} unknown`);
  const spent = `${formatUsd(costUsd)}${unknown(unknownUsd)}`;
  if (maxUsd === undefined) return spent;
  const inAll = spentUsd === undefined ? '' : ` (${formatUsd(spentUsd)} of it spent in all${unknown(unknownInAllUsd)})`;
  return `${spent} of a ${formatUsd(maxUsd)} budget${inAll}`;
}

/** ` + up to $X unknown` when calls of unknown fate may have cost `unknownUsd`; nothing otherwise. */
const unknownApart = (unknownUsd: number | undefined): string =>
  unknownUsd === undefined || unknownUsd <= 0 ? '' : ` + up to ${formatUsd(unknownUsd)} unknown`;

function tasksTable(record: RunRecord): string {
  const tasks = record.summary?.tasks ?? record.tasks;
  // A batch run's rows are no live calls: the table would be all zeros.
  if (tasks.length === 0 || record.batches !== undefined) return '';
  const priced = tasks.some((task) => task.costUsd !== undefined);
  const head = ['task', 'calls', 'retries', 'repairs', '429s', 'latency p50', 'latency p95', 'tokens', ...(priced ? ['cost'] : [])];
  const rows = tasks.map((task) => [
    task.name,
    String(task.calls),
    String(task.retries),
    String(task.repairs),
    String(task.rateLimited),
    milliseconds(task.latencyMs.p50),
    milliseconds(task.latencyMs.p95),
    String(task.tokensUsed),
    ...(priced ? [task.costUsd === undefined ? '' : `${formatUsd(task.costUsd)}${unknownApart(task.unknownCostUsd)}`] : []),
  ]);
  return `<section><h2>Tasks</h2>${table(head, rows)}</section>`;
}

function providersTable(summary: RunSummary): string {
  const priced = summary.providers.some((p) => p.costUsd !== undefined);
  const head = [
    'provider',
    'limit',
    'calls',
    'achieved',
    'rate floor',
    '429s',
    'errors',
    'breaker opens',
    'final rate',
    ...(priced ? ['cost'] : []),
  ];
  const rows = summary.providers.map((p) => [
    p.name,
    p.rate === Infinity ? 'none' : `${rate(p.rate)}/s, burst ${p.burst}`,
    String(p.calls),
    `${rate(p.achievedRate)}/s`,
    seconds(p.rateFloorMs),
    String(p.rateLimited),
    // Every call that failed but for a 429 (a column of its own) or the run's own stop.
    String(p.calls - p.answered - p.rateLimited - p.cancelledCalls),
    String(p.breakerOpens),
    p.adaptive ? `${rate(p.finalRate)}/s (${p.rateCuts} cuts)` : '',
    ...(priced ? [p.costUsd === undefined ? '' : `${formatUsd(p.costUsd)}${unknownApart(p.unknownCostUsd)}`] : []),
  ]);
  return `<section><h2>Providers</h2>${table(head, rows)}</section>`;
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const header = head.every((cell) => cell === '')
    ? ''
    : `<thead><tr>${head.map((cell) => `<th>${escapeHtml(cell)}</th>`).join('')}</tr></thead>`;
  const body = rows.map(
    (row) => `<tr>${row.map((cell, i) => (i === 0 ? `<th>${escapeHtml(cell)}</th>` : `<td>${escapeHtml(cell)}</td>`)).join('')}</tr>`,
  );
  return `<table>${header}<tbody>${body.join('')}</tbody></table>`;
}

function percentiles(p: Percentiles): string {
  return `p50 ${milliseconds(p.p50)} · p95 ${milliseconds(p.p95)} · p99 ${milliseconds(p.p99)} · max ${milliseconds(p.max)}`;
}

function milliseconds(ms: number): string {
  if (!Number.isFinite(ms)) return '∞';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return seconds(ms);
}

function seconds(ms: number): string {
  return ms < 1000 ? milliseconds(ms) : `${(ms / 1000).toFixed(3)} s`;
}

function rate(value: number): string {
  return String(Number(value.toPrecision(4)));
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ESCAPES[c]!);
}

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #222; background: #fff; }
h1 { font-size: 1.4rem; margin: 0 0 .2rem; } h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
.status { color: #555; margin: 0 0 1rem; }
table { border-collapse: collapse; } th, td { padding: .2rem .6rem; text-align: left; border-bottom: 1px solid #eee; vertical-align: top; }
thead th { border-bottom: 1px solid #999; } tbody th { font-weight: 600; white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
figure { margin: 0; padding: .5rem; border: 1px solid #eee; border-radius: 4px; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
`;

/**
 * The dashboard's: draws each chart's spec where it stands; each `page` event replaces `<main>`
 * and draws again; `end` closes the stream (the run is over, the page stays as it last was).
 */
const LIVE_SCRIPT = `
function draw() {
  for (const spec of document.querySelectorAll('#report script.spec')) {
    const chart = spec.parentElement;
    const compiled = vegaLite.compile(JSON.parse(spec.textContent)).spec;
    chart.textContent = '';
    new vega.View(vega.parse(compiled), { renderer: 'svg', container: chart }).runAsync();
  }
}
draw();
const events = new EventSource('events');
events.addEventListener('page', (event) => {
  document.getElementById('report').outerHTML = JSON.parse(event.data);
  draw();
});
events.addEventListener('end', () => events.close());
`;
