/**
 * One server for `npm run bench:server`, in a process of its own: `node --import tsx
 * bench/server/app.ts <kind>` listens on a free loopback port and prints it. Every kind answers
 * `hello world`; the limited ones key each request by its `key` header, with limits every request
 * stays within (the benchmark measures what limiting costs, not what it refuses).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { rateLimit } from '../../src/middleware/index.ts';

export const SERVER_KINDS = ['bare', 'bare-headers', 'ours', 'ours-no-headers', 'express-ours', 'express-erl'] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];

/** The same limits for both Express servers: 60,000 a minute, policy `q=60000;w=60` in both. */
export const LIMITS = { rate: 1000, burst: 60_000, windowMs: 60_000 } as const;

const keyOf = (req: IncomingMessage): string => req.headers.key as string;

function listen(kind: string): ReturnType<typeof createServer> {
  switch (kind) {
    case 'bare':
      return createServer((_req, res) => res.end('hello world'));
    case 'bare-headers':
      // What Node charges for any two response headers, whoever sets them: the reference for the limiter's own share.
      return createServer((_req, res) => {
        res.setHeader('RateLimit-Policy', '"default";q=60000;w=60');
        res.setHeader('RateLimit', '"default";r=59999;t=1');
        res.end('hello world');
      });
    case 'ours':
    case 'ours-no-headers': {
      const limit = rateLimit({ rate: LIMITS.rate, burst: LIMITS.burst, key: keyOf, headers: kind === 'ours' ? 'draft-8' : false });
      return createServer((req, res) => limit(req, res, () => res.end('hello world')));
    }
    case 'express-ours':
    case 'express-erl': {
      const app = express();
      app.use(
        kind === 'express-ours'
          ? rateLimit({ rate: LIMITS.rate, burst: LIMITS.burst, key: keyOf })
          : expressRateLimit({
              windowMs: LIMITS.windowMs,
              limit: LIMITS.burst,
              standardHeaders: 'draft-8',
              legacyHeaders: false,
              keyGenerator: keyOf,
            }),
      );
      app.get('/', (_req, res) => {
        res.send('hello world');
      });
      return createServer(app);
    }
    default:
      throw new Error(`unknown server kind ${kind}: expected one of ${SERVER_KINDS.join(', ')}`);
  }
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const server = listen(process.argv[2] ?? '');
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
  });
}
