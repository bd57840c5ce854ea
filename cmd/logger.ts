import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import { LOG_LEVELS, type RunFlags } from './run-options.ts';

/** pino's levels from the most severe: a logger at one logs it and every more severe one. */
const LEVELS: readonly string[] = LOG_LEVELS.filter((level) => level !== 'silent');

/**
 * The logger the flags ask for: pino at --log-level, written synchronously to stderr — made when
 * the first line at an enabled level is logged. A run that logs nothing (most runs, at the default
 * `error`) never loads pino: about 5 ms of the command's start-up.
 */
export function createLogger(flags: Pick<RunFlags, 'logLevel'>): Logger {
  let made: Logger | undefined;
  const root = (): Logger => {
    if (made === undefined) {
      const pino = createRequire(import.meta.url)('pino') as typeof import('pino');
      made = pino.pino({ level: flags.logLevel, base: undefined }, pino.destination({ dest: 2, sync: true }));
    }
    return made;
  };
  return lazyLogger(flags.logLevel, root);
}

/** A logger whose pino logger (`real()`: the root, or a child of it) is made at its first enabled line. */
function lazyLogger(level: string, real: () => Logger): Logger {
  let made: Logger | undefined;
  const logger = (): Logger => (made ??= real());
  const enabled = (name: string) => level !== 'silent' && LEVELS.indexOf(name) <= LEVELS.indexOf(level);
  const methods = Object.fromEntries(
    LEVELS.map((name) => [
      name,
      enabled(name) ? (...args: unknown[]) => (logger()[name as 'info'] as (...a: unknown[]) => void)(...args) : () => {},
    ]),
  );
  return {
    level,
    ...methods,
    silent: () => {},
    child: (bindings: Record<string, unknown>, options?: object) => lazyLogger(level, () => logger().child(bindings, options)),
    isLevelEnabled: (name: string) => enabled(name),
  } as unknown as Logger;
}
