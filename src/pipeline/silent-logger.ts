import pino, { type Logger } from 'pino';

/** The library's default logger: says nothing. Callers pass their own pino logger to hear it. */
export const silentLogger: Logger = pino({ level: 'silent' });
