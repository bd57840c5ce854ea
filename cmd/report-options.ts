// --report and --dashboard: the run drawn, in a file after it and on a page while it goes.
import { stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Option, type Command } from 'commander';
import { systemClock } from '../src/mechanisms.ts';
import type { PoolSetup, ProviderSetup, RunEvents } from '../src/index.ts';
import { integer } from './parse-values.ts';
import { UsageError } from './usage-error.ts';

export interface ReportFlags {
  /** --report: the HTML file written when the run ends. */
  report?: string;
  /** --dashboard: the port of the page served while the run goes. */
  dashboard?: number;
  dashboardHost: string;
}

/** The page's heading. */
const TITLE = 'news-processor run';

/** Adds --report, --dashboard and --dashboard-host. */
export function addReportOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--report <file.html>',
        'when the run ends (Ctrl-C and stops too), write one HTML page of charts and figures that opens offline (needs vega and vega-lite)',
      ),
    )
    .addOption(
      new Option(
        '--dashboard <port>',
        'serve that page while the run goes, updated every second, its URL on stderr; 0 picks a free port',
      ).argParser(integer(0, 65_535)),
    )
    .addOption(new Option('--dashboard-host <address>', 'the address --dashboard listens on').default('127.0.0.1'));
}

/** Throws a UsageError for flags that cannot go together; `fromCli` says whether a flag was given. */
export function validateReportFlags(flags: ReportFlags, fromCli: (field: string) => boolean): void {
  if (flags.report?.trim() === '') throw new UsageError('--report needs a file name');
  if (fromCli('dashboardHost') && flags.dashboard === undefined) throw new UsageError('--dashboard-host applies with --dashboard');
}

/** The report and the dashboard of a run, following its events. */
export interface RunReport {
  /**
   * Once the run has ended (its `runEnded` told): writes the report (when asked), sends the
   * dashboard's last page and stops it; returns the line that says where the report is.
   */
  finish(): Promise<string | undefined>;
  /** Stops the dashboard without an end (the run failed). */
  close(): Promise<void>;
}

/**
 * Starts what --report and --dashboard ask for, before the run, following `events`: the packages
 * are loaded, the report's folder checked and the dashboard listening (its URL said through
 * `notice`) before any call, so that none of them fails after an hour's run. Undefined when
 * neither was asked for.
 */
export async function startRunReport(
  flags: ReportFlags,
  events: RunEvents,
  run: {
    readonly providers: readonly ProviderSetup[];
    readonly pools?: readonly PoolSetup[] | undefined;
  },
  notice: (text: string) => void,
): Promise<RunReport | undefined> {
  if (flags.report === undefined && flags.dashboard === undefined) return undefined;
  // Loaded only when asked for: the page's modules and vega are no run's start-up cost otherwise.
  const [{ RunRecorder }, { renderReportPage }, { Dashboard }, { loadChartRenderer }] = await Promise.all([
    import('../src/report/run-recorder.ts'),
    import('../src/report/report-page.ts'),
    import('../src/report/dashboard.ts'),
    import('../src/bench/chart-renderer.ts'),
  ]);
  const path = flags.report;
  if (path !== undefined) {
    await loadChartRenderer('--report');
    const folder = await stat(dirname(path)).catch(() => undefined);
    if (folder?.isDirectory() !== true) throw new UsageError(`--report ${path}: no folder ${dirname(path)} to write it in`);
    if ((await stat(path).catch(() => undefined))?.isDirectory() === true) throw new UsageError(`--report ${path}: is a folder`);
  }
  const recorder = new RunRecorder({
    clock: systemClock,
    providers: run.providers.map((setup) => ({
      name: setup.provider.name,
      limits: 'specs' in setup.limits ? setup.limits.specs : setup.limits,
    })),
    pools: run.pools,
  });
  const dashboard =
    flags.dashboard === undefined
      ? undefined
      : await Dashboard.start({ record: () => recorder.record(), port: flags.dashboard, host: flags.dashboardHost, title: TITLE }).catch(
          (error: NodeJS.ErrnoException) => {
            if (error.code === 'EADDRINUSE' || error.code === 'EADDRNOTAVAIL' || error.code === 'EACCES' || error.code === 'ENOTFOUND') {
              throw new UsageError(`--dashboard ${flags.dashboardHost}:${flags.dashboard}: ${error.code}, cannot listen there`);
            }
            throw error;
          },
        );
  if (dashboard !== undefined) notice(`dashboard: ${dashboard.url}`);
  const stopFollowing = events.observe(recorder);
  return {
    async finish() {
      stopFollowing();
      await dashboard?.close();
      if (path === undefined) return undefined;
      const startMs = performance.now();
      const page = await renderReportPage(recorder.record(), { title: TITLE });
      await writeFile(path, page);
      return `Report: ${path} (${Math.ceil(Buffer.byteLength(page) / 1024)} KiB, written in ${Math.round(performance.now() - startMs)} ms)`;
    },
    close: async () => {
      stopFollowing();
      await dashboard?.close();
    },
  };
}
