import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, runCli, startCli } from '../cli/run-cli.ts';
import { drawnCharts, launchBrowser, watchedPage } from './browser.ts';

let browser: Browser;
let closeBrowser: () => Promise<void>;
let dir: string;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  ({ browser, close: closeBrowser } = await launchBrowser());
  ({ dir, remove: removeDir } = await makeTempDir());
});

afterAll(async () => {
  await closeBrowser?.();
  await removeDir?.();
});

describe('--report', () => {
  it('writes one page that opens offline, draws its charts and shows the figures', async () => {
    const file = join(dir, 'run.html');
    const run = await runCli([
      '--articles=40',
      '--rate=40',
      '--burst=2',
      '--min-latency=5ms',
      '--max-latency=20ms',
      '--tpm=200000',
      '--price-input=0.4',
      '--price-output=1.6',
      '--max-cost=1',
      '--profile=production',
      '--call-timeout=200ms',
      '--timeout=20s',
      '--max-attempts=5',
      '--quiet',
      '--report',
      file,
    ]);
    expect(run.stderr).toMatch(/^Report: .*run\.html \(\d+ KiB, written in \d+ ms\)$/m);
    const html = await readFile(file, 'utf8');
    // Nothing to fetch: no script, no link, no URL but the vega-lite schema's name inside no spec.
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\/(?!www\.w3\.org)/);
    const { page, errors, requests } = await watchedPage(browser);
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    expect(errors).toEqual([]);
    expect(requests).toEqual([pathToFileURL(file).href]);
    // Calls, tokens, trouble, in flight, articles, cost, latency, wait.
    expect(await drawnCharts(page)).toBe(8);
    const text = await page.$eval('main', (main) => main.textContent ?? '');
    expect(text).toContain('finished after');
    expect(text).toMatch(/least possible\s*[\d.]+ (ms|s), bound by/);
    expect(text).toContain('summarize');
    expect(text).toContain('sentiment');
    expect(text).toMatch(/limit 40\/s/);
    expect(text).toMatch(/budget \$1/);
    await page.close();
  });

  it('is written for a run interrupted mid-way (SIGINT), and says so', async () => {
    const file = join(dir, 'interrupted.html');
    const run = startCli(['--articles=200', '--rate=20', '--burst=1', '--min-latency=5ms', '--max-latency=10ms', '--report', file]);
    // Some articles done, most not: each result is a line on stdout.
    await new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const check = setInterval(() => {
        if (/^✓ article 5 /m.test(run.stdout())) {
          clearInterval(check);
          resolve();
        } else if (Date.now() - started > 20_000) {
          clearInterval(check);
          reject(new Error(`no result within 20 s: ${run.stdout()}`));
        }
      }, 50);
    });
    run.interrupt();
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/^Report: /m);
    const { page, errors } = await watchedPage(browser);
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    expect(errors).toEqual([]);
    expect(await drawnCharts(page)).toBeGreaterThanOrEqual(6);
    expect(await page.$eval('.status', (status) => status.textContent)).toMatch(/^interrupted after/);
    await page.close();
  });

  it('refuses a folder that does not exist, before any call', async () => {
    const run = await runCli(['--articles=3', '--report', join(dir, 'no-such-folder', 'run.html')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: --report .*run\.html: no folder .*no-such-folder to write it in\n$/);
    expect(run.stdout).toBe('');
  });

  it('refuses a --dashboard port that is taken, before any call', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const run = await runCli(['--articles=3', `--dashboard=${port}`]);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`error: --dashboard 127.0.0.1:${port}: EADDRINUSE, cannot listen there\n`);
      expect(run.stdout).toBe('');
    } finally {
      taken.close();
    }
  });

  it('refuses --dashboard-host without --dashboard', async () => {
    const run = await runCli(['--articles=3', '--dashboard-host', '0.0.0.0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('error: --dashboard-host applies with --dashboard\n');
  });
});

describe('--dashboard', () => {
  it('serves the page on loopback while the run goes, changing as it goes, and ends with the run', async () => {
    const run = startCli([
      '--articles=60',
      '--rate=15',
      '--burst=1',
      '--min-latency=10ms',
      '--max-latency=30ms',
      '--quiet',
      '--dashboard=0',
    ]);
    await run.waitForStderr(/dashboard: http:\/\/127\.0\.0\.1:\d+\/\n/, 20_000);
    const url = /dashboard: (\S+)/.exec(run.stderr())![1]!;
    const { page, errors } = await watchedPage(browser);
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction("document.querySelectorAll('main figure svg').length >= 6", { timeout: 20_000 });
    const first = await page.$eval('main', (main) => main.textContent);
    // The page is sent again every second: its figures move as calls are made.
    await page.waitForFunction(`document.querySelector('main').textContent !== ${JSON.stringify(first)}`, { timeout: 20_000 });
    expect(await page.$eval('.status', (status) => status.textContent)).toMatch(/^running: /);
    // At the end, the run's last state, with its summary.
    await page.waitForSelector('main[data-ended="true"]', { timeout: 30_000 });
    expect(await page.$eval('.status', (status) => status.textContent)).toMatch(/^finished after/);
    expect(await drawnCharts(page)).toBeGreaterThanOrEqual(6);
    expect(errors).toEqual([]);
    const result = await run.result;
    expect(result.code).toBe(0);
    // It ended with the run.
    await expect(fetch(url)).rejects.toThrow();
    await page.close();
  });
});
