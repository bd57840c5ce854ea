import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { MissingPackageError } from '../optional-package.ts';
import { checkDurationMs, checkInteger, checkString } from '../validation/checks.ts';
import { renderReportMain, renderReportPage } from './report-page.ts';
import type { RunRecord } from './run-recorder.ts';

/** What a dashboard does unless told otherwise. */
export const DASHBOARD_DEFAULTS = Object.freeze({
  /** Loopback: a run's figures are nobody else's business unless its owner says so. */
  host: '127.0.0.1',
  /** How often the page is sent again while the run goes, in ms. */
  intervalMs: 1000,
});

export interface DashboardOptions {
  /** The run's record as it stands (`RunRecorder.record`), asked once per update. */
  readonly record: () => RunRecord;
  /** The TCP port; 0 picks a free one (`url` says which). */
  readonly port: number;
  /** The address to listen on. @default DASHBOARD_DEFAULTS.host */
  readonly host?: string | undefined;
  /** How often the page is sent again while the run goes, ms. @default DASHBOARD_DEFAULTS.intervalMs */
  readonly intervalMs?: number | undefined;
  /** The page's heading. @default "news-processor run" */
  readonly title?: string | undefined;
}

/** The browser builds the page draws its charts with, served by the dashboard itself: nothing is fetched from elsewhere. */
const SCRIPTS: Readonly<Record<string, { readonly pkg: 'vega' | 'vega-lite'; readonly file: string }>> = {
  '/vega.js': { pkg: 'vega', file: 'vega.min.js' },
  '/vega-lite.js': { pkg: 'vega-lite', file: 'vega-lite.min.js' },
};

/**
 * The report's page served while the run goes (`renderReportPage` with `live`): `/` is the page,
 * `/events` a stream of server-sent events — the page's `<main>` again every `intervalMs` while
 * something changed, and once the run ends, its last state and `end` — and `/vega.js`,
 * `/vega-lite.js` the installed packages' browser builds, which draw the charts in the browser
 * (drawing them here would take the run's own time). Start it with {@link Dashboard.start}, and
 * {@link Dashboard.close} it when the run has ended.
 */
export class Dashboard {
  readonly #server: Server;
  readonly #options: DashboardOptions;
  readonly #scripts: ReadonlyMap<string, string>;
  readonly #clients = new Set<ServerResponse>();
  readonly #timer: NodeJS.Timeout;
  #sentVersion = -1;
  /** The update being sent, if one is: updates never overlap, and the last waits for it. */
  #sending: Promise<void> | undefined;
  readonly url: string;

  private constructor(server: Server, options: DashboardOptions, scripts: ReadonlyMap<string, string>, intervalMs: number) {
    this.#server = server;
    this.#options = options;
    this.#scripts = scripts;
    const { address, port } = server.address() as AddressInfo;
    this.url = `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
    // A page that cannot be made now may be at the next tick; close() sends the last one and rejects if it cannot.
    this.#timer = setInterval(() => this.#update().catch(() => {}), intervalMs).unref();
  }

  /**
   * Listens on `host:port`; rejects when the port is taken (`EADDRINUSE`) or the address is not
   * this machine's, and with `MissingPackageError` when `vega` or `vega-lite` is not installed.
   */
  static async start(options: DashboardOptions): Promise<Dashboard> {
    const { port, host = DASHBOARD_DEFAULTS.host, intervalMs = DASHBOARD_DEFAULTS.intervalMs } = options;
    checkInteger('port', port, 0, 65_535);
    checkString('host', host);
    checkDurationMs('intervalMs', intervalMs, { positive: true });
    const scripts = new Map<string, string>();
    for (const [path, { pkg, file }] of Object.entries(SCRIPTS)) scripts.set(path, await readFile(browserBuild(pkg, file), 'utf8'));
    let dashboard: Dashboard | undefined;
    const server = createServer((request, response) => {
      if (dashboard !== undefined) dashboard.#handle(request, response);
      else response.writeHead(503).end();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    dashboard = new Dashboard(server, options, scripts, intervalMs);
    return dashboard;
  }

  /** Sends the run's last state and `end` to every page, and stops serving. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sending;
    await this.#update(true);
    for (const client of this.#clients) client.end('event: end\ndata: {}\n\n');
    this.#clients.clear();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const path = new URL(request.url ?? '/', 'http://dashboard').pathname;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const script = this.#scripts.get(path);
    if (script !== undefined) {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=3600' }).end(script);
    } else if (path === '/events') {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      response.write(': news-processor dashboard\n\n');
      this.#clients.add(response);
      request.on('close', () => this.#clients.delete(response));
    } else if (path === '/' || path === '/index.html') {
      renderReportPage(this.#options.record(), { title: this.#options.title, live: true }).then(
        (page) => response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page),
        (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
      );
    } else if (path === '/favicon.ico') {
      // What every browser asks for first: nothing, rather than a 404 in its console.
      response.writeHead(204).end();
    } else {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  }

  /** Sends the page's `<main>` to every open page when the record moved (or, at the end, always). */
  #update(last = false): Promise<void> {
    if (this.#sending !== undefined || (this.#clients.size === 0 && !last)) return Promise.resolve();
    const record = this.#options.record();
    // While the run goes, every time: its elapsed time moves the status line even when no event
    // came (a stalled run shows as stalled, not frozen). Once it has ended, only what is new.
    if (!last && record.summary !== undefined && record.version === this.#sentVersion) return Promise.resolve();
    this.#sentVersion = record.version;
    this.#sending = renderReportMain(record, { title: this.#options.title ?? 'news-processor run', live: true })
      .then((main) => {
        const event = `event: page\ndata: ${JSON.stringify(main)}\n\n`;
        for (const client of this.#clients) client.write(event);
      })
      .finally(() => (this.#sending = undefined));
    return this.#sending;
  }
}

/** The path of a package's browser build, beside its entry point. */
function browserBuild(pkg: 'vega' | 'vega-lite', file: string): string {
  try {
    return join(dirname(createRequire(import.meta.url).resolve(pkg)), file);
  } catch (error) {
    throw new MissingPackageError(pkg, 'the dashboard', error);
  }
}
