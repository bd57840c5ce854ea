// A vendor's heavy capabilities — its serve dialect, its Batch API, its SDK — load only when used:
// a plain run of the bundled command (what `npm test` builds) loads none of them, `serve` loads
// every dialect, and `--batch` the vendor's Batch API alone.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../cli/run-cli.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'news-processor-lazy-'));
  // A loader hook that writes down every module the process loads.
  await writeFile(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(join(dir, 'loaded.txt'))}, url + '\\n');\n  return next(url, context);\n}\n`,
  );
  await writeFile(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What a run of the command with `args` loads: each module's URL and, for the bundle's own files, its code. */
async function loadedBy(args: readonly string[]): Promise<{ urls: string[]; code: string }> {
  await rm(join(dir, 'loaded.txt'), { force: true });
  execFileSync(process.execPath, ['--import', join(dir, 'register.mjs'), join('dist', 'cli', 'news-processor.js'), ...args], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  const urls = (await readFile(join(dir, 'loaded.txt'), 'utf8')).split('\n').filter((url) => url.startsWith('file:'));
  const bundle = urls.filter((url) => url.includes('/dist/cli/'));
  const code = (await Promise.all(bundle.map((url) => readFile(new URL(url), 'utf8')))).join('\n');
  return { urls, code };
}

/** Words only each vendor's lazy parts hold: its Batch API's, its serve dialect's. */
const LAZY_CODE = {
  'a Batch API': ['completion_window', 'messages.batches'],
  'a serve dialect': ['chat.completion.chunk', 'content_block_delta', 'missing subscription key'],
};

describe('the bundled command loads a vendor’s capabilities only when it uses them', () => {
  it('a one-article run loads no serve dialect, no Batch API and no SDK', async () => {
    const { urls, code } = await loadedBy(['--articles=1', '--rate=inf', '--min-latency=0', '--max-latency=0', '--quiet']);
    expect(urls.some((url) => url.endsWith('/dist/cli/news-processor.js'))).toBe(true);
    for (const [part, words] of Object.entries(LAZY_CODE)) {
      for (const word of words) expect(code.includes(word), `${part}: ${word}`).toBe(false);
    }
    expect(urls.filter((url) => url.includes('/node_modules/'))).toEqual([]);
  });

  it('--batch on the simulated provider loads the batch run, and no vendor’s Batch API', async () => {
    const output = join(dir, 'batch.jsonl');
    const { code } = await loadedBy([
      '--batch',
      `--output=${output}`,
      '--articles=1',
      '--min-latency=0',
      '--max-latency=0',
      '--batch-poll=10ms',
      '--quiet',
    ]);
    expect(code).toContain('batchFingerprints');
    for (const word of LAZY_CODE['a Batch API']) expect(code.includes(word), word).toBe(false);
  });
});
