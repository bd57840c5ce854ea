import type { RedisConnection } from '../../src/redis/index.ts';
import { RESERVE } from '../../src/redis/scripts.ts';

/**
 * Records the wait Redis gives each reservation made on `connection`, in µs (0: granted at once),
 * in the order the replies come: what the script decided on Redis's clock, which no stall of this
 * machine changes — where the instants a call was seen at measure the machine as well.
 */
export function recordReserveWaits(connection: RedisConnection): readonly number[] {
  const waitsUs: number[] = [];
  const run = connection.run.bind(connection);
  connection.run = async (script, keys, args) => {
    const reply = await run(script, keys, args);
    if (script === RESERVE) waitsUs.push((reply as readonly number[])[0]!);
    return reply;
  };
  return waitsUs;
}
