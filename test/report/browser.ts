import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** Debian's chromium, which `.ci/run` installs when it is missing. */
export const CHROMIUM = '/usr/bin/chromium';

/** A headless chromium of its own (a new profile, nothing fetched from Google), and a function that ends it. */
export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'news-processor-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** A new page whose console errors, uncaught errors and requests that failed are kept in `errors`. */
export async function watchedPage(browser: Browser): Promise<{ page: Page; errors: string[]; requests: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('requestfailed', (request) => errors.push(`${request.url()}: ${request.failure()?.errorText}`));
  page.on('request', (request) => requests.push(request.url()));
  await page.setViewport({ width: 1280, height: 900 });
  return { page, errors, requests };
}

/** The charts the page has drawn: an `<svg>` in each chart's figure. */
export function drawnCharts(page: Page): Promise<number> {
  return page.$$eval('main figure svg', (svgs) => svgs.length);
}
