import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { RunSummary } from '../../src/index.ts';
import { ManualClock, TokenBucket } from '../../src/mechanisms.ts';
import type { QuotaChildSettings } from './quota-child.ts';

const CHILD = fileURLToPath(new URL('./quota-child.ts', import.meta.url));

/** What the counting server saw, and what each process said. */
export interface SharedQuotaRun {
  /** When each call was sent (refused ones too), ms on the machine's shared clock, ascending. */
  readonly sentAtMs: readonly number[];
  /** When each arrived at the server, ms on the same clock, ascending. */
  readonly arrivedAtMs: readonly number[];
  /** Calls the server refused with a 429 (its own quota ran out). */
  readonly refused: number;
  readonly summaries: readonly RunSummary[];
}

export interface SharedQuotaOptions {
  readonly redisUrl: string;
  readonly processes: number;
  readonly articlesPerProcess: number;
  readonly workersPerProcess: number;
  readonly rate: number;
  readonly burst: number;
  /**
   * The server's own quota: a token bucket that judges every call by when it was sent, allowing one
   * call of loopback jitter, as the envelope does. (A strictly equal quota refuses a call whose
   * trip was any shorter than the first call's: the server's bucket starts draining a trip after
   * ours. `strictShortfall` says by how much that was.)
   */
  readonly serverQuota: { readonly rate: number; readonly burst: number };
  readonly quotaKey: string;
}

/**
 * Runs `processes` Node processes at once, each a pipeline over its own articles sharing one quota
 * through Redis, against a loopback HTTP server that counts the calls and answers 429 past its own
 * quota. Every process connects and warms up first; they start together.
 */
export async function runSharedQuota(options: SharedQuotaOptions): Promise<SharedQuotaRun> {
  const sentAtMs: number[] = [];
  const arrivedAtMs: number[] = [];
  let refused = 0;
  // The server's quota judges a call by when it was sent: on a loaded machine the server's own
  // reading of an arrival can lag by a hundred milliseconds and more (a process waiting for a
  // core), bunching arrivals that left evenly. A call sent out of order counts at the latest
  // instant seen, as the bucket adds nothing for a clock read backwards: the stricter reading.
  const clock = new ManualClock();
  let quota: TokenBucket | undefined;
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.once('end', () => {
      if (request.url === '/call') {
        const arrivedMs = performance.timeOrigin + performance.now();
        const { sentAtMs: sentMs } = JSON.parse(body) as { sentAtMs: number };
        clock.set(Math.max(clock.now(), sentMs));
        // Full at the first call, as a provider's quota is for a key it has not seen.
        quota ??= new TokenBucket({ rate: options.serverQuota.rate, burst: options.serverQuota.burst + 1, clock });
        sentAtMs.push(sentMs);
        arrivedAtMs.push(arrivedMs);
        if (!quota.tryAcquire()) {
          refused++;
          response.writeHead(429, { 'retry-after-ms': '50' }).end();
          return;
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const children: ChildProcess[] = [];
  try {
    const ready: Promise<unknown>[] = [];
    const summaries: Promise<RunSummary>[] = [];
    for (let i = 0; i < options.processes; i++) {
      const settings: QuotaChildSettings = {
        redisUrl: options.redisUrl,
        serverUrl,
        quotaKey: options.quotaKey,
        name: `process-${i + 1}`,
        articles: options.articlesPerProcess,
        workers: options.workersPerProcess,
        rate: options.rate,
        burst: options.burst,
      };
      const child = fork(CHILD, [JSON.stringify(settings)], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      const messages = (type: string) =>
        new Promise<unknown>((resolve, reject) => {
          const onMessage = (message: { type: string; summary?: RunSummary }) => {
            if (message.type !== type) return;
            child.off('message', onMessage);
            resolve(message.summary);
          };
          child.on('message', onMessage);
          // A process that ends well may be seen to exit before its last message is read.
          child.once('exit', (code, signal) => {
            if (code !== 0) reject(new Error(`${settings.name} exited (${code ?? signal}) before '${type}'`));
          });
        });
      ready.push(messages('ready'));
      summaries.push(messages('summary') as Promise<RunSummary>);
    }
    await Promise.all(ready);
    for (const child of children) child.send('go');
    const done = await Promise.all(summaries);
    const ascending = (a: number, b: number) => a - b;
    return { sentAtMs: sentAtMs.sort(ascending), arrivedAtMs: arrivedAtMs.sort(ascending), refused, summaries: done };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    server.close();
    server.closeAllConnections();
  }
}

/**
 * The most the calls exceed the envelope `burst + rate·t` by, over every window between two of
 * them (the calls in [t_i, t_j] against burst + rate·(t_j − t_i)); ≤ 0 when it holds.
 */
export function envelopeExcess(instantsMs: readonly number[], rate: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < instantsMs.length; i++) {
    for (let j = i; j < instantsMs.length; j++) {
      const allowed = burst + (rate * (instantsMs[j]! - instantsMs[i]!)) / 1000;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}

/**
 * The most tokens a strict bucket of `rate` and `burst`, full at the first call, lacks when a call
 * comes (0: it never refuses one): how much earlier than the first call the others came.
 */
export function strictShortfall(instantsMs: readonly number[], rate: number, burst: number): number {
  let tokens = burst;
  let lastMs = instantsMs[0] ?? 0;
  let shortfall = 0;
  for (const atMs of instantsMs) {
    tokens = Math.min(burst, tokens + ((atMs - lastMs) * rate) / 1000);
    lastMs = atMs;
    shortfall = Math.max(shortfall, 1 - tokens);
    tokens -= 1;
  }
  return shortfall;
}

/**
 * The 429s a quota equal to the client's may draw on a crowded machine: a call held up by a stall
 * (in the client, or in the server reading it late) arrives with the next one on time, and the two
 * take one token. At most one in ten calls, at least one: a generous bound, as stalls are the
 * machine's; a limiter that sends half again too fast draws one every third call, and processes
 * that do not share the quota two in three. The exact schedule is the manual clock's and Redis's
 * (test/limiter, test/redis/redis-limits.test.ts); bench:redis measures the figures.
 */
export function stray429s(calls: number): number {
  return Math.max(1, Math.floor(calls / 10));
}

/**
 * The tokens `excessFromFirst` allows for the first call's lateness after its grant: half a
 * second's worth at `rate`, ten times what a crowded machine was seen to take (10–40 ms, 100 ms and
 * more now and then) and still a fraction of what a limiter too fast gains over a run.
 */
export function firstCallTokens(rate: number): number {
  return rate / 2;
}

/**
 * The most the calls exceed the envelope `burst + rate·t` by in the windows that start at the
 * first call (≤ 0 when it holds): what the machine cannot make worse. A call leaves no earlier than
 * its grant, so however late stalls make some calls, the k-th is never earlier than the k-th grant;
 * only the first call's own lateness (measured from its grant) shortens these windows. Windows
 * between two later calls are not judged: a call held up by a stall arrives with the next one on
 * time, which says nothing of the limiter.
 */
export function excessFromFirst(instantsMs: readonly number[], rate: number, burst: number): number {
  let worst = -Infinity;
  for (let k = 0; k < instantsMs.length; k++) {
    worst = Math.max(worst, k + 1 - (burst + (rate * (instantsMs[k]! - instantsMs[0]!)) / 1000));
  }
  return worst;
}
