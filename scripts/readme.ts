// Regenerates the documents' sample outputs from the current code, runs their examples, and checks
// their links. The documents are README.md, docs/*.md, bench/README.md, fixtures/README.md and
// CONTRIBUTING.md (scripts/doc-files.ts).
//
//   npm run readme                          every document: links checked, samples rewritten, examples run
//   npm run readme -- --file=docs/cli.md    only this document's blocks (repeat --file for more)
//   npm run readme -- --examples            only run the examples (documents unchanged)
//   npm run readme -- --match=bench         only the blocks with a command containing "bench"
//   npm run readme -- --dry                 run everything, write nothing
//   npm run readme -- --links               only check the links (a second or so)
//
// A block is marked by an HTML comment on the line before its opening fence (invisible on GitHub):
//   <!-- sample -->              `$ command` lines; the output under each is replaced with a fresh run
//   <!-- sample head=6 tail=7 -->  … keeping the first 6 and last 7 lines of each output, `…` between
//   <!-- sample exit=1 -->       … the commands are expected to exit 1 (default 0)
//   <!-- examples -->            each command line is run and must exit 0 (or `# exit N` at its end)
// A document whose blocks name `$REDIS_URL` gets a redis-server of its own (Debian's redis-server
// on the PATH), on a free loopback port, for those commands.
// Each document's commands run one after another in a scratch folder of its own holding `fixtures/`,
// so an example may use a file an earlier one on the same page wrote. `npm start --` runs the
// compiled command (build first: `npm run readme` does).
//
// Every relative link and `#anchor` of every document must resolve (scripts/doc-links.ts): the
// links are checked first, whatever the other flags, and a broken one fails the run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentFiles } from './doc-files.ts';
import { brokenLinks } from './doc-links.ts';
import { applySamples, findBlocks, localCommand, type RunnableBlock, sampleBody } from './readme-blocks.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BIN = join(ROOT, 'dist', 'cli', 'news-processor.js');
/** A command that runs longer than this is stopped and reported. */
const COMMAND_TIMEOUT_MS = 5 * 60_000;
const USAGE = '--file=PATH, --examples, --match=TEXT, --dry, --links';

const args = process.argv.slice(2);
const examplesOnly = args.includes('--examples');
const linksOnly = args.includes('--links');
const dry = args.includes('--dry') || examplesOnly;
const match = args.find((arg) => arg.startsWith('--match='))?.slice('--match='.length);
const only = args.filter((arg) => arg.startsWith('--file=')).map((arg) => arg.slice('--file='.length).replace(/^\.\//, ''));
for (const arg of args) {
  if (!['--examples', '--dry', '--links'].includes(arg) && !arg.startsWith('--match=') && !arg.startsWith('--file=')) {
    process.stderr.write(`error: unknown argument ${arg} (${USAGE})\n`);
    process.exit(2);
  }
}

const documents = documentFiles(ROOT);
for (const path of only) {
  if (!documents.includes(path)) {
    process.stderr.write(`error: --file=${path} is not one of the documents: ${documents.join(', ')}\n`);
    process.exit(2);
  }
}

const broken = brokenLinks(documents, {
  exists: (path) => existsSync(join(ROOT, path)),
  read: (path) => (path.endsWith('.md') && existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined),
});
if (broken.length > 0) {
  process.stderr.write(`${broken.length} broken link(s):\n${broken.join('\n')}\n`);
  process.exit(1);
}
process.stderr.write(`${documents.length} documents, every relative link resolves\n`);
if (linksOnly) process.exit(0);

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function run(command: string, cwd: string, env: Readonly<Record<string, string>> = {}): Promise<Ran> {
  const startMs = performance.now();
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', localCommand(command, BIN)], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, ms: performance.now() - startMs });
    });
  });
}

/** What a command that ended otherwise said last: its stderr, or when that is empty (`--quiet` runs print their summary on stdout) its stdout. */
function said(ran: Ran): string {
  const text = ran.stderr.trim() === '' ? ran.stdout.trim() : ran.stderr.trim();
  return text.split('\n').slice(-8).join('\n');
}

/** The document's marked blocks that the flags select; a malformed block is named by file and line. */
function selectedBlocks(document: string, text: string): RunnableBlock[] {
  let blocks: RunnableBlock[];
  try {
    blocks = findBlocks(text.split('\n'));
  } catch (error) {
    throw new Error(`${document} ${(error as Error).message}`);
  }
  return blocks.filter(
    (block) =>
      (!examplesOnly || block.kind === 'examples') &&
      (match === undefined ||
        (block.kind === 'sample' ? block.commands : block.commands.map((c) => c.command)).some((c) => c.includes(match))),
  );
}

/**
 * A redis-server of the document's own on a free loopback port, for the blocks that name
 * `$REDIS_URL` (the queue's and the shared quotas' pages): nothing persisted, stopped after them.
 */
async function startRedis(): Promise<{ readonly url: string; stop(): void }> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  probe.close();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  await new Promise<void>((ready, fail) => {
    child.once('error', fail);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) ready();
    });
  });
  child.stdout.resume();
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') };
}

const failures: string[] = [];
let blockCount = 0;
const scratchRoot = await mkdtemp(join(tmpdir(), 'news-processor-readme-'));
try {
  for (const [index, document] of documents.entries()) {
    if (only.length > 0 && !only.includes(document)) continue;
    const blocks = selectedBlocks(document, await readFile(join(ROOT, document), 'utf8'));
    if (blocks.length === 0) continue;
    blockCount += blocks.length;
    process.stderr.write(`\n${document}: ${blocks.length} block(s)\n`);
    const scratch = join(scratchRoot, String(index));
    await mkdir(scratch);
    await symlink(join(ROOT, 'fixtures'), join(scratch, 'fixtures'));

    const needsRedis = blocks.some((block) =>
      (block.kind === 'sample' ? block.commands : block.commands.map((c) => c.command)).some((c) => c.includes('$REDIS_URL')),
    );
    const redis = needsRedis ? await startRedis() : undefined;
    const env: Record<string, string> = redis === undefined ? {} : { REDIS_URL: redis.url };
    const samples: { commands: readonly string[]; body: string[] }[] = [];
    try {
      for (const block of blocks) {
        if (block.kind === 'examples') {
          for (const { command, exit } of block.commands) {
            process.stderr.write(`  ${command}\n`);
            const ran = await run(command, scratch, env);
            const verdict = ran.code === exit ? 'ok' : `FAIL: exit ${ran.code}, expected ${exit}`;
            process.stderr.write(`    ${verdict} (${(ran.ms / 1000).toFixed(1)} s)\n`);
            if (ran.code !== exit)
              failures.push(`${document} line ${block.start}: ${command}: exit ${ran.code}, expected ${exit}\n${said(ran)}`);
          }
          continue;
        }
        const outputs: string[] = [];
        for (const command of block.commands) {
          process.stderr.write(`$ ${command}\n`);
          const ran = await run(command, scratch, env);
          process.stderr.write(`    exit ${ran.code} (${(ran.ms / 1000).toFixed(1)} s)\n`);
          if (ran.code !== block.options.exit) {
            failures.push(`${document} line ${block.start}: ${command}: exit ${ran.code}, expected ${block.options.exit}\n${said(ran)}`);
          }
          outputs.push(ran.stdout);
        }
        samples.push({ commands: block.commands, body: sampleBody(block, outputs) });
      }
    } finally {
      redis?.stop();
    }

    if (!dry && samples.length > 0) {
      // Read again: the document may have been edited while the commands ran.
      const path = join(ROOT, document);
      const { lines: updated, missing } = applySamples((await readFile(path, 'utf8')).split('\n'), samples);
      await writeFile(path, updated.join('\n'));
      process.stderr.write(`${document}: ${samples.length - missing.length} sample blocks rewritten\n`);
      for (const commands of missing)
        failures.push(`${document}: a sample block is no longer there, its output not written: $ ${commands.join(' / $ ')}`);
    }
  }
} finally {
  await rm(scratchRoot, { recursive: true, force: true });
}

if (failures.length > 0) {
  process.stderr.write(`\n${failures.length} command(s) did not end as the documents say:\n${failures.join('\n')}\n`);
  process.exit(1);
}
process.stderr.write(`\n${blockCount} blocks, every command ended as the documents say\n`);
