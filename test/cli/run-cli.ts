import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** The project root: the command runs from here, so `fixtures/…` paths work as in the docs. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The compiled command, as `npm start` and the installed package run it (`npm test` builds it first). */
const BIN = join('dist', 'cli', 'news-processor.js');

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
  /** Sends SIGINT (Ctrl-C) to the command. */
  interrupt(): void;
  /** Sends `signal` to the command (once it has exited, nothing). */
  send(signal: NodeJS.Signals): void;
  /** Resolves once stderr matches `pattern`; rejects after `timeoutMs` or if the process ends first. */
  waitForStderr(pattern: RegExp, timeoutMs: number): Promise<void>;
  /** Settles when the process has exited and its pipes are closed. */
  readonly result: Promise<CliResult>;
}

export interface CliOptions {
  /** The process is killed (SIGKILL) after this many ms: it hung. Default 30 000 (a loaded machine is slow). */
  readonly killAfterMs?: number;
  /**
   * Written to the command's standard input, which is then closed (a pipe); a stream is piped in as
   * it is written, so the test decides when the command gets its input. Default: no standard input.
   */
  readonly stdin?: string | Buffer | Readable;
  /** Variables to set over this process's environment; `undefined` removes one. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A file descriptor for the command's standard output (`/dev/full`, say) instead of a pipe; `stdout()` is then empty. */
  readonly stdoutFd?: number;
}

/**
 * Starts the compiled command (`node dist/cli/news-processor.js`, what `npm start` and the
 * installed package run) with `args` in the project root, with pipes, not a terminal, for its
 * output. It runs in a process group of its own, and the kill timeout ends the whole group.
 */
export function startCli(args: readonly string[], options: CliOptions = {}): CliRun {
  const { killAfterMs = 30_000, stdin } = options;
  const startMs = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...options.env },
    stdio: [stdin === undefined ? 'ignore' : 'pipe', options.stdoutFd ?? 'pipe', 'pipe'],
    detached: true,
  });
  if (stdin !== undefined) {
    // The command may stop reading early (a bad line): a broken pipe then is expected, not a failure.
    child.stdin!.on('error', () => {});
    if (typeof stdin === 'string' || Buffer.isBuffer(stdin)) child.stdin!.end(stdin);
    else stdin.pipe(child.stdin!);
  }
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let timedOut = false;
  const killTimer = setTimeout(() => {
    timedOut = true;
    signalGroup('SIGKILL');
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
  let exited = false;
  let closed = false;
  child.once('exit', () => (exited = true));
  child.once('close', () => (closed = true));
  const waitForStderr = (pattern: RegExp, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(stderr)) done();
      };
      const done = (error?: Error) => {
        clearTimeout(timer);
        child.stderr!.off('data', check);
        child.off('close', onClose);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onClose = () => done(new Error(`the process ended before stderr matched ${pattern}; stderr: ${stderr}`));
      const timer = setTimeout(
        () => done(new Error(`stderr did not match ${pattern} within ${timeoutMs} ms; stderr: ${stderr}`)),
        timeoutMs,
      );
      child.stderr!.on('data', check);
      child.once('close', onClose);
      if (pattern.test(stderr)) done();
      else if (closed) onClose();
    });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    interrupt: () => {
      if (!exited) child.kill('SIGINT');
    },
    send: (signal) => {
      if (!exited) child.kill(signal);
    },
    waitForStderr,
    result,
  };
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

/** A `news-processor serve` a test started, and where it listens. */
export interface Serve {
  readonly run: CliRun;
  readonly url: string;
}

/** Starts `news-processor serve --port=0 …` and resolves once its first stdout line says where it listens. */
export async function startServe(args: readonly string[]): Promise<Serve> {
  const run = startCli(['serve', '--port=0', ...args], { killAfterMs: 120_000 });
  const deadline = performance.now() + 20_000;
  for (;;) {
    const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(run.stdout());
    if (match !== null) return { run, url: match[1]! };
    if (run.child.exitCode !== null || performance.now() > deadline) {
      run.send('SIGKILL');
      throw new Error(`serve did not say where it listens; stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
