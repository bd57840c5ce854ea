import pino, { type Logger } from 'pino';

/**
 * The library's default logger: says nothing. Callers pass their own pino logger to hear it.
 * Its destination is a no-op stream, so importing the library opens no file and registers no
 * exit handler (pino's default stdout destination does both).
 */
export const silentLogger: Logger = pino({ level: 'silent' }, { write: () => {} });
