import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the command runs from here, so `fixtures/…` paths work as in the README. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const COMMAND = join('cmd', 'news-processor.ts');

/** Flags that make a run take milliseconds: no client-side limit, a provider that answers at once. */
export const FAST = ['--min-latency=0ms', '--max-latency=1ms', '--rate=inf'] as const;

export interface CliResult {
  /** The exit code, or null when the process was ended by a signal. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the kill timeout ended the process: the run hung. */
  readonly timedOut: boolean;
  /** Wall time from spawn to exit, in ms. */
  readonly elapsedMs: number;
}

export interface CliRun {
  readonly child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Settles when the process has exited and its pipes are closed. */
  readonly result: Promise<CliResult>;
}

export interface CliOptions {
  /** The process is killed (SIGKILL) after this many ms. Default 20 000. */
  readonly killAfterMs?: number;
}

/** Starts `tsx cmd/news-processor.ts …args` in the project root, with pipes (not a terminal) for its output. */
export function startCli(args: readonly string[], options: CliOptions = {}): CliRun {
  const { killAfterMs = 20_000 } = options;
  const startMs = performance.now();
  const child = spawn(TSX, [COMMAND, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let timedOut = false;
  const killTimer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, killAfterMs);
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(killTimer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(killTimer);
      resolve({ code, signal, stdout, stderr, timedOut, elapsedMs: performance.now() - startMs });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, result };
}

/** Runs the command to the end. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).result;
}

/** The non-empty lines of a text. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** A fresh temporary directory, and a function that removes it. */
export async function makeTempDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'news-processor-cli-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
