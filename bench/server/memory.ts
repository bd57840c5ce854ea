/**
 * The memory scenario of `npm run bench:server`, one implementation per process: `node
 * --expose-gc --import tsx bench/server/memory.ts <ours|erl|rlf> <clients> <perSecond>` sends
 * `clients` distinct clients one request each at `perSecond`, against a limit of 60 a minute,
 * then prints one line of JSON: keys held and heap (with ArrayBuffers) grown, after full collections.
 */
import { type Options, MemoryStore } from 'express-rate-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { KeyedLimiter } from '../../src/middleware/index.ts';

export const MEMORY_IMPLEMENTATIONS = ['ours', 'erl', 'rlf'] as const;
export type MemoryImplementation = (typeof MEMORY_IMPLEMENTATIONS)[number];

export interface MemoryFigures {
  readonly keys: number;
  readonly heapBytes: number;
  readonly elapsedMs: number;
}

/** One client's request, and the keys held; each the implementation's own API, as its middleware calls it. */
interface Subject {
  request(key: string): unknown;
  keys(): number;
}

function subject(implementation: string): Subject {
  switch (implementation) {
    case 'ours': {
      const limiter = new KeyedLimiter({ rate: 1, burst: 60 });
      return { request: (key) => limiter.take(key), keys: () => limiter.size };
    }
    case 'erl': {
      const store = new MemoryStore();
      store.init({ windowMs: 60_000 } as Options);
      return { request: (key) => store.increment(key), keys: () => store.current.size + store.previous.size };
    }
    case 'rlf': {
      const limiter = new RateLimiterMemory({ points: 60, duration: 60 });
      const storage = (limiter as unknown as { _memoryStorage: { _storage: Map<string, unknown> } })._memoryStorage._storage;
      return { request: (key) => limiter.consume(key), keys: () => storage.size };
    }
    default:
      throw new Error(`unknown implementation ${implementation}: expected one of ${MEMORY_IMPLEMENTATIONS.join(', ')}`);
  }
}

function usedBytes(): number {
  globalThis.gc!();
  globalThis.gc!();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

async function run(implementation: string, clients: number, perSecond: number): Promise<MemoryFigures> {
  const limiter = subject(implementation);
  const beforeBytes = usedBytes();
  const startMs = performance.now();
  let sent = 0;
  while (sent < clients) {
    // Paced on the real clock: every client due by now, then a turn of the event loop.
    const due = Math.min(clients, Math.ceil(((performance.now() - startMs) * perSecond) / 1000));
    const pending: unknown[] = [];
    for (; sent < due; sent++) pending.push(limiter.request(`client-${sent}`));
    await Promise.all(pending);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const elapsedMs = performance.now() - startMs;
  return { keys: limiter.keys(), heapBytes: usedBytes() - beforeBytes, elapsedMs };
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [implementation = '', clients = '1000000', perSecond = '200000'] = process.argv.slice(2);
  process.stdout.write(`${JSON.stringify(await run(implementation, Number(clients), Number(perSecond)))}\n`);
}
