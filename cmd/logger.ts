import pino, { type Logger } from 'pino';
import type { RunFlags } from './run-options.ts';

/** The logger the flags ask for: pino at --log-level, written synchronously to stderr. */
export function createLogger(flags: Pick<RunFlags, 'logLevel'>): Logger {
  return pino({ level: flags.logLevel, base: undefined }, pino.destination({ dest: 2, sync: true }));
}
