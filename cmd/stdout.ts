/**
 * Standard output's fate, watched from the first line of every command: its reader went away
 * (`… | head -1`, EPIPE) or it cannot be written (`> /dev/full`, ENOSPC; EIO). Without a listener
 * Node throws either from wherever the next write happens, with a stack; with this one the command
 * learns it, stops as on Ctrl-C, and says it in one line on stderr.
 */
let failure: NodeJS.ErrnoException | undefined;
const listeners: (() => void)[] = [];
let watching = false;

/** Installs the one listener on process.stdout (once; later calls do nothing). */
export function watchStdout(): void {
  if (watching) return;
  watching = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (failure !== undefined) return;
    failure = error;
    for (const listener of listeners.splice(0)) listener();
  });
}

/** Calls `listener` once standard output fails (at once if it has). */
export function onStdoutFailure(listener: () => void): void {
  if (failure !== undefined) listener();
  else listeners.push(listener);
}

/** What became of standard output: `undefined` while it works. */
export function stdoutState(): 'closed' | 'failed' | undefined {
  if (failure === undefined) return undefined;
  return failure.code === 'EPIPE' ? 'closed' : 'failed';
}

/** `no space left on device (ENOSPC)`: a system error as a line says it, without its syscall. */
export function systemErrorText(error: NodeJS.ErrnoException): string {
  const text = error.message.replace(/^E[A-Z]+: /, '').replace(/, \w+( '.*')?$/, '');
  return error.code === undefined || text.includes(error.code) ? text : `${text} (${error.code})`;
}

/** `standard output: cannot write: no space left on device (ENOSPC)`, for a failure other than a closed pipe. */
export function stdoutFailureText(): string {
  return `standard output: cannot write: ${failure === undefined ? 'unknown error' : systemErrorText(failure)}`;
}
