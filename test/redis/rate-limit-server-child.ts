// One of several node:http servers limiting clients through one RedisRateLimitStore:
// `node --import tsx rate-limit-server-child.ts '<RateLimitServerSettings>'`, forked with IPC. It
// says { type: 'listening', url } once it listens, and closes on any message. Each client is the
// `x-client-key` header; a request let through gets 200 `ok`.
import { createServer } from 'node:http';
import { connectRedis, RedisRateLimitStore } from '../../src/redis/index.ts';
import { rateLimit, type StoreErrorAction } from '../../src/middleware/index.ts';

export interface RateLimitServerSettings {
  readonly redisUrl: string;
  /** How long a take waits for Redis before the store fails, ms. */
  readonly timeoutMs: number;
  readonly rate: number;
  readonly burst: number;
  readonly prefix: string;
  readonly onStoreError: StoreErrorAction;
}

const settings = JSON.parse(process.argv[2]!) as RateLimitServerSettings;
const connection = await connectRedis(settings.redisUrl, { timeoutMs: settings.timeoutMs });
const limit = rateLimit({
  limiter: new RedisRateLimitStore({ connection, rate: settings.rate, burst: settings.burst, prefix: settings.prefix }),
  key: (req) => String(req.headers['x-client-key'] ?? 'anonymous'),
  onStoreError: settings.onStoreError,
});
const server = createServer((req, res) =>
  limit(req, res, (error) => {
    res.statusCode = error === undefined ? 200 : 500;
    res.end(error === undefined ? 'ok' : String(error));
  }),
);
server.listen(0, '127.0.0.1', () => {
  process.send!({ type: 'listening', url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` });
});
process.once('message', () => {
  server.close();
  server.closeAllConnections();
  void connection.close().then(() => process.disconnect());
});
