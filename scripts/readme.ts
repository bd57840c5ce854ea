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
//   npm run readme -- --jobs=6              run up to six commands at a time (default 1: one after another)
//
// A block is marked by an HTML comment on the line before its opening fence (invisible on GitHub):
//   <!-- sample -->              `$ command` lines; the output under each is replaced with a fresh run
//   <!-- sample head=6 tail=7 -->  … keeping the first 6 and last 7 lines of each output, `…` between
//   <!-- sample exit=1 -->       … the commands are expected to exit 1 (default 0)
//   <!-- examples -->            each command line is run and must exit 0 (or `# exit N` at its end)
//   <!-- script -->              the block is one bash script (set -e, pipefail): it must exit 0 and
//                                stop what it started in the background (a server it starts, it kills)
//   <!-- no-run: the reason -->  not run (it needs a key, a server of one's own, Docker, …)
// Every block of shell commands in README.md and docs/ carries one of these
// (test/scripts/doc-examples.test.ts, which also runs them all in a copy of the tracked files).
// A document whose blocks name `$REDIS_URL` gets a redis-server of its own (Debian's redis-server
// on the PATH), on a free loopback port, for those commands.
// Each document's commands run in a scratch folder of its own holding `fixtures/`, so an example may
// use a file an earlier one on the same page wrote: with --jobs, commands that share a file, a queue
// or a port run in the page's order, the others at the same time (scripts/readme-blocks.ts).
// `npm start --` runs the compiled command (build first: `npm run readme` does). A picture a document shows (`![…](x.png)`)
// that its commands wrote in the scratch folder is copied beside the document.
//
// Every relative link and `#anchor` of every document must resolve (scripts/doc-links.ts): the
// links are checked first, whatever the other flags, and a broken one fails the run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentFiles } from './doc-files.ts';
import { brokenLinks } from './doc-links.ts';
import {
  applySamples,
  commandChains,
  findBlocks,
  localCommand,
  type RunnableBlock,
  type SampleBlock,
  sampleBody,
} from './readme-blocks.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BIN = join(ROOT, 'dist', 'cli', 'news-processor.js');
/** A command that runs longer than this is stopped and reported. */
const COMMAND_TIMEOUT_MS = 5 * 60_000;
const USAGE = '--file=PATH, --examples, --match=TEXT, --dry, --links, --jobs=N';

const args = process.argv.slice(2);
const examplesOnly = args.includes('--examples');
const linksOnly = args.includes('--links');
const dry = args.includes('--dry') || examplesOnly;
const match = args.find((arg) => arg.startsWith('--match='))?.slice('--match='.length);
const only = args.filter((arg) => arg.startsWith('--file=')).map((arg) => arg.slice('--file='.length).replace(/^\.\//, ''));
const jobs = Number(args.find((arg) => arg.startsWith('--jobs='))?.slice('--jobs='.length) ?? 1);
for (const arg of args) {
  if (
    !['--examples', '--dry', '--links'].includes(arg) &&
    !arg.startsWith('--match=') &&
    !arg.startsWith('--file=') &&
    !arg.startsWith('--jobs=')
  ) {
    process.stderr.write(`error: unknown argument ${arg} (${USAGE})\n`);
    process.exit(2);
  }
}
if (!Number.isInteger(jobs) || jobs < 1) {
  process.stderr.write(`error: --jobs: expected a whole number of 1 or more (${USAGE})\n`);
  process.exit(2);
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
  /** The command ended leaving processes of its own running (stopped now). */
  readonly leftRunning: boolean;
}

/** How long what a command started may take to end after the command has (a server it sent SIGTERM finishing its requests). */
const LEFT_RUNNING_GRACE_MS = 3000;

/** Whether a process of the group `pgid` is still running. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `command` in bash, in a process group of its own: on a timeout the whole group is killed,
 * and what is still running in it a few seconds after bash has ended (a server started with `&`
 * and never stopped) is killed and reported.
 */
function run(command: string, cwd: string, env: Readonly<Record<string, string>> = {}, script = false): Promise<Ran> {
  const startMs = performance.now();
  return new Promise((done, fail) => {
    const text = localCommand(command, BIN);
    const child = spawn('bash', script ? ['-e', '-o', 'pipefail', '-c', text] : ['-o', 'pipefail', '-c', text], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const pgid = child.pid!;
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const killGroup = () => groupAlive(pgid) && process.kill(-pgid, 'SIGKILL');
    const timer = setTimeout(killGroup, COMMAND_TIMEOUT_MS);
    child.once('error', fail);
    const closed = once(child, 'close');
    child.once('exit', async (code) => {
      const ms = performance.now() - startMs;
      const graceEnd = performance.now() + LEFT_RUNNING_GRACE_MS;
      while (groupAlive(pgid) && performance.now() < graceEnd) await new Promise((wake) => setTimeout(wake, 50));
      const leftRunning = groupAlive(pgid);
      if (leftRunning) killGroup();
      await closed;
      clearTimeout(timer);
      done({ code, stdout, stderr, ms, leftRunning });
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
    (block) => (!examplesOnly || block.kind !== 'sample') && (match === undefined || commandsOf(block).some((c) => c.includes(match))),
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

/** The pictures a document shows (`![…](name.png)`, beside it): a command of its own may have written them. */
function shownPictures(text: string): string[] {
  return [...text.matchAll(/!\[[^\]]*\]\(([\w.-]+\.(?:png|svg))\)/g)].map((match) => match[1]!);
}

const failures: string[] = [];
let blockCount = 0;

/** One command of a page (a sample's `$ command`, an example's line, or a script whole), and how it must end. */
interface Unit {
  readonly block: RunnableBlock;
  readonly command: string;
  readonly exit: number;
  readonly script: boolean;
  /** For a sample's command: where its output goes. */
  readonly output?: { readonly outputs: string[]; readonly index: number };
}

interface Page {
  readonly document: string;
  readonly text: string;
  readonly scratch: string;
  readonly units: readonly Unit[];
  readonly samples: readonly { readonly block: SampleBlock; readonly outputs: string[] }[];
  redis?: { readonly url: string; stop(): void } | undefined;
}

function commandsOf(block: RunnableBlock): readonly string[] {
  if (block.kind === 'sample') return block.commands;
  if (block.kind === 'script') return [block.script];
  return block.commands.map((c) => c.command);
}

async function preparePage(document: string, scratch: string): Promise<Page | undefined> {
  const text = await readFile(join(ROOT, document), 'utf8');
  const blocks = selectedBlocks(document, text);
  if (blocks.length === 0) return undefined;
  blockCount += blocks.length;
  await mkdir(scratch);
  await symlink(join(ROOT, 'fixtures'), join(scratch, 'fixtures'));
  const units: Unit[] = [];
  const samples: { block: SampleBlock; outputs: string[] }[] = [];
  for (const block of blocks) {
    if (block.kind === 'script') units.push({ block, command: block.script, exit: 0, script: true });
    else if (block.kind === 'examples') for (const { command, exit } of block.commands) units.push({ block, command, exit, script: false });
    else {
      const outputs: string[] = block.commands.map(() => '');
      samples.push({ block, outputs });
      for (const [index, command] of block.commands.entries()) {
        units.push({ block, command, exit: block.options.exit, script: false, output: { outputs, index } });
      }
    }
  }
  const needsRedis = blocks.some((block) => commandsOf(block).some((c) => c.includes('$REDIS_URL')));
  return { document, text, scratch, units, samples, redis: needsRedis ? await startRedis() : undefined };
}

async function runUnit(page: Page, unit: Unit): Promise<void> {
  const ran = await run(unit.command, page.scratch, page.redis === undefined ? {} : { REDIS_URL: page.redis.url }, unit.script);
  if (unit.output !== undefined) unit.output.outputs[unit.output.index] = ran.stdout;
  const shown = unit.script ? `[script of ${unit.block.end - unit.block.start} lines] ${unit.command.split('\n')[0]} …` : unit.command;
  const ok = ran.code === unit.exit && !ran.leftRunning;
  const verdict = ok
    ? `exit ${ran.code}`
    : `FAIL: exit ${ran.code}, expected ${unit.exit}${ran.leftRunning ? ', left processes running' : ''}`;
  process.stderr.write(`${page.document}: ${shown}\n    ${verdict} (${(ran.ms / 1000).toFixed(1)} s)\n`);
  const where = `${page.document} line ${unit.block.start}: ${unit.script ? `the script of ${unit.block.end - unit.block.start} lines` : unit.command}`;
  if (ran.code !== unit.exit) failures.push(`${where}: exit ${ran.code}, expected ${unit.exit}\n${said(ran)}`);
  if (ran.leftRunning) failures.push(`${where}: left processes running (stopped now)`);
}

/** Writes the page's fresh samples, and the pictures it shows that its commands wrote. */
async function finishPage(page: Page): Promise<void> {
  const path = join(ROOT, page.document);
  if (page.samples.length > 0) {
    // Read again: the document may have been edited while the commands ran.
    const fresh = page.samples.map(({ block, outputs }) => ({ commands: block.commands, body: sampleBody(block, outputs) }));
    const { lines: updated, missing } = applySamples((await readFile(path, 'utf8')).split('\n'), fresh);
    await writeFile(path, updated.join('\n'));
    process.stderr.write(`${page.document}: ${fresh.length - missing.length} sample blocks rewritten\n`);
    for (const commands of missing)
      failures.push(`${page.document}: a sample block is no longer there, its output not written: $ ${commands.join(' / $ ')}`);
  }
  for (const picture of shownPictures(page.text)) {
    if (!existsSync(join(page.scratch, picture))) continue;
    await copyFile(join(page.scratch, picture), join(dirname(path), picture));
    process.stderr.write(`${page.document}: ${picture} written beside it\n`);
  }
}

const scratchRoot = await mkdtemp(join(tmpdir(), 'news-processor-readme-'));
const pages: Page[] = [];
try {
  for (const [index, document] of documents.entries()) {
    if (only.length > 0 && !only.includes(document)) continue;
    const page = await preparePage(document, join(scratchRoot, String(index)));
    if (page !== undefined) pages.push(page);
  }
  // Each page's chains (commands that share a file or a queue, in order), the longest first; at most
  // `jobs` commands at a time. With --jobs=1 every command runs in the documents' order.
  const chains = pages.flatMap((page) => commandChains(page.units.map((unit) => unit.command)).map((chain) => ({ page, chain })));
  if (jobs > 1) chains.sort((a, b) => b.chain.length - a.chain.length);
  const worker = async () => {
    for (let next = chains.shift(); next !== undefined; next = chains.shift()) {
      for (const index of next.chain) await runUnit(next.page, next.page.units[index]!);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  if (!dry) for (const page of pages) await finishPage(page);
} finally {
  for (const page of pages) page.redis?.stop();
  await rm(scratchRoot, { recursive: true, force: true });
}

if (failures.length > 0) {
  process.stderr.write(`\n${failures.length} command(s) did not end as the documents say:\n${failures.join('\n')}\n`);
  process.exit(1);
}
process.stderr.write(`\n${blockCount} blocks, every command ended as the documents say\n`);
