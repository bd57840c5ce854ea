import { checkString, expected } from '../validation/checks.ts';
import type { RedisConnection } from './redis-connection.ts';

/** Throws unless `value` is a {@link RedisConnection} (what the Redis limits and store are built on). */
export function checkConnection(value: unknown): asserts value is RedisConnection {
  if (value === null || typeof value !== 'object' || typeof (value as { run?: unknown }).run !== 'function') {
    throw expected('connection', 'a RedisConnection', value);
  }
}

/**
 * A part of a key name. Braces are refused: Redis Cluster hashes only what is between the first
 * `{` and the next `}`, and every key of a quota must hash alike (`{quotaKey}`) for its scripts to run.
 */
export function checkKeyPart(name: string, value: unknown, allowEmpty: boolean): asserts value is string {
  if (allowEmpty && value === '') return;
  checkString(name, value);
  if (/[{}]/.test(value)) throw expected(name, 'a name without { or }', value);
}
