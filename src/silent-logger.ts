import type { Logger } from 'pino';

const nothing = (): void => {};

/**
 * The library's default logger: says nothing. Callers pass their own pino logger to hear it.
 * Not a pino instance: the methods the library calls (each level's, `child`, `isLevelEnabled`) do
 * nothing, so that importing the library neither loads pino nor opens a stream.
 */
export const silentLogger: Logger = {
  level: 'silent',
  fatal: nothing,
  error: nothing,
  warn: nothing,
  info: nothing,
  debug: nothing,
  trace: nothing,
  silent: nothing,
  child: () => silentLogger,
  isLevelEnabled: () => false,
} as unknown as Logger;
