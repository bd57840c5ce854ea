// Regenerates the README's sample outputs from the current code, and runs its examples.
//
//   npm run readme                      every marked block: samples rewritten, examples checked
//   npm run readme -- --examples        only run the examples (README unchanged)
//   npm run readme -- --match=bench     only the blocks with a command containing "bench"
//   npm run readme -- --dry             run everything, write nothing
//
// A block is marked by an HTML comment on the line before its opening fence (invisible on GitHub):
//   <!-- sample -->              `$ command` lines; the output under each is replaced with a fresh run
//   <!-- sample head=6 tail=7 -->  … keeping the first 6 and last 7 lines of each output, `…` between
//   <!-- sample exit=1 -->       … the commands are expected to exit 1 (default 0)
//   <!-- examples -->            each command line is run and must exit 0 (or `# exit N` at its end)
// Commands run one after another in one scratch folder holding `fixtures/`, so an example may use a
// file an earlier one wrote. `npm start --` runs the compiled command (build first: `npm run readme` does).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applySamples, findBlocks, localCommand, sampleBody } from './readme-blocks.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const README = join(ROOT, 'README.md');
const BIN = join(ROOT, 'dist', 'cmd', 'news-processor.js');
/** A command that runs longer than this is stopped and reported. */
const COMMAND_TIMEOUT_MS = 5 * 60_000;

const args = process.argv.slice(2);
const examplesOnly = args.includes('--examples');
const dry = args.includes('--dry') || examplesOnly;
const match = args.find((arg) => arg.startsWith('--match='))?.slice('--match='.length);
for (const arg of args) {
  if (arg !== '--examples' && arg !== '--dry' && !arg.startsWith('--match=')) {
    process.stderr.write(`error: unknown argument ${arg} (--examples, --dry, --match=TEXT)\n`);
    process.exit(2);
  }
}

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function run(command: string, cwd: string): Promise<Ran> {
  const startMs = performance.now();
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', localCommand(command, BIN)], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
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

const text = await readFile(README, 'utf8');
const lines = text.split('\n');
const blocks = findBlocks(lines).filter(
  (block) =>
    (!examplesOnly || block.kind === 'examples') &&
    (match === undefined ||
      (block.kind === 'sample' ? block.commands : block.commands.map((c) => c.command)).some((c) => c.includes(match))),
);
const scratch = await mkdtemp(join(tmpdir(), 'news-processor-readme-'));
await symlink(join(ROOT, 'fixtures'), join(scratch, 'fixtures'));

const failures: string[] = [];
const samples: { commands: readonly string[]; body: string[] }[] = [];
try {
  for (const block of blocks) {
    if (block.kind === 'examples') {
      for (const { command, exit } of block.commands) {
        process.stderr.write(`  ${command}\n`);
        const ran = await run(command, scratch);
        const verdict = ran.code === exit ? 'ok' : `FAIL: exit ${ran.code}, expected ${exit}`;
        process.stderr.write(`    ${verdict} (${(ran.ms / 1000).toFixed(1)} s)\n`);
        if (ran.code !== exit)
          failures.push(`README line ${block.start}: ${command}: exit ${ran.code}, expected ${exit}\n${ran.stderr.trim()}`);
      }
      continue;
    }
    const outputs: string[] = [];
    for (const command of block.commands) {
      process.stderr.write(`$ ${command}\n`);
      const ran = await run(command, scratch);
      process.stderr.write(`    exit ${ran.code} (${(ran.ms / 1000).toFixed(1)} s)\n`);
      if (ran.code !== block.options.exit) {
        failures.push(`README line ${block.start}: ${command}: exit ${ran.code}, expected ${block.options.exit}\n${ran.stderr.trim()}`);
      }
      outputs.push(ran.stdout);
    }
    samples.push({ commands: block.commands, body: sampleBody(block, outputs) });
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}

if (!dry && samples.length > 0) {
  // Read again: the README may have been edited while the commands ran.
  const { lines: updated, missing } = applySamples((await readFile(README, 'utf8')).split('\n'), samples);
  await writeFile(README, updated.join('\n'));
  process.stderr.write(`README.md: ${samples.length - missing.length} sample blocks rewritten\n`);
  for (const commands of missing)
    failures.push(`a sample block is no longer in the README, its output not written: $ ${commands.join(' / $ ')}`);
}
if (failures.length > 0) {
  process.stderr.write(`\n${failures.length} command(s) did not end as the README says:\n${failures.join('\n')}\n`);
  process.exit(1);
}
process.stderr.write(`${blocks.length} blocks, every command ended as the README says\n`);
