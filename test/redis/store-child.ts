// A second process taking from a RedisRateLimitStore: `node --import tsx store-child.ts <url> <key> <takes>`
// prints one decision per line as JSON.
import { connectRedis, RedisRateLimitStore } from '../../src/redis/index.ts';

const [url, key, takes] = process.argv.slice(2);
const connection = await connectRedis(url!);
const store = new RedisRateLimitStore({ connection, rate: 0.001, burst: 5 });
for (let i = 0; i < Number(takes); i++) process.stdout.write(`${JSON.stringify(await store.take(key!))}\n`);
await connection.close();
