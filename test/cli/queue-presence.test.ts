// A queue that never lies: one Redis lost under its worker (restarted without its data), one that
// was never made, and the workers' "seen Ns ago" — each against a redis-server of the test's own.
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueueStatus } from '../../src/queue/index.ts';
import { startRedis, type TestRedis } from '../redis/redis-server.ts';
import { makeTempDir, runCli, startCli, type CliResult } from './run-cli.ts';

let redis: TestRedis;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
let queues = 0;
/** A queue name no other test uses. */
const newQueue = () => `p${++queues}-${process.pid}`;

beforeAll(async () => {
  redis = await startRedis();
  temp = await makeTempDir();
});
afterAll(async () => {
  await redis?.stop();
  await temp?.remove();
});

const QUICK = ['--min-latency=1ms', '--max-latency=2ms'];

/** A usage error: exit 2, one `error: …` line, no stack. */
function expectOneLine(result: CliResult, mention: RegExp): void {
  expect(result.timedOut, 'hung').toBe(false);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr).toMatch(/^error: \S.*\n$/);
  expect(result.stderr).toMatch(mention);
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a queue Redis lost under its worker (kill -9, restarted without its data)', () => {
  it('the worker says the queue was lost — what it held, what it had done — and exits 1; status and collect say the same, exit 2', async () => {
    const own = await startRedis();
    try {
      const queue = newQueue();
      const enqueued = await runCli(['enqueue', '--queue', queue, '--redis', own.url, '--articles=200']);
      expect(enqueued.code, enqueued.stderr).toBe(0);
      const worker = startCli(
        ['worker', '--queue', queue, '--redis', own.url, '--rate=20', '--workers=4', '--min-latency=50ms', '--max-latency=100ms'],
        { killAfterMs: 60_000 },
      );
      await until(() => (worker.stdout().match(/^✓ /gm) ?? []).length >= 10, 30_000);
      await own.restart();
      const done = await worker.result;
      expect(done.timedOut).toBe(false);
      expect(done.code, done.stderr).toBe(1);
      const gone = new RegExp(
        `^error: queue ${queue} is gone from Redis at redis://127\\.0\\.0\\.1:${own.port} \\(restarted without its data, or the queue was removed\\): ` +
          'it held 200 articles — (\\d+) finished, (\\d+) not — when last seen, \\S+ before \\S+ found it gone \\(\\S+\\); ' +
          'its jobs and their results went with it; the worker stopped: enqueue the input again to run it$',
        'm',
      );
      const [, finished, open] = gone.exec(done.stderr) ?? [];
      expect(finished, done.stderr).toBeDefined();
      expect(Number(finished)).toBeGreaterThanOrEqual(5);
      expect(Number(finished) + Number(open)).toBe(200);
      expect(done.stderr).not.toMatch(/going on/);
      expect(done.stdout).toMatch(
        new RegExp(
          `^Worker: \\d+ jobs taken from queue ${queue}, the queue lost under it: \\d+ finished, \\d+ cut short, their results gone with it$`,
          'm',
        ),
      );
      expect(done.stdout).not.toMatch(/left locked/);

      // Asked afterwards, status and collect say what the worker found, and collect writes nothing.
      const said = new RegExp(
        `^error: --queue: queue ${queue} is gone from Redis at \\S+ \\(.*\\): it held 200 articles — ${finished} finished`,
      );
      expectOneLine(await runCli(['status', '--queue', queue, '--redis', own.url]), said);
      expectOneLine(await runCli(['status', '--queue', queue, '--redis', own.url, '--json']), said);
      const output = join(temp.dir, `${queue}.jsonl`);
      expectOneLine(await runCli(['collect', '--queue', queue, '--redis', own.url, '--output', output]), said);
      await expect(access(output)).rejects.toThrow(/ENOENT/);

      // Enqueued again, the queue is made again: a worker runs it and collect has every article.
      expect((await runCli(['enqueue', '--queue', queue, '--redis', own.url, '--articles=200'])).code).toBe(0);
      const again = await runCli([
        'worker',
        '--queue',
        queue,
        '--redis',
        own.url,
        '--rate=inf',
        ...QUICK,
        '--exit-when-drained',
        '--quiet',
      ]);
      expect(again.code, again.stderr).toBe(0);
      const collected = await runCli(['collect', '--queue', queue, '--redis', own.url, '--output', output]);
      expect(collected.code, collected.stderr).toBe(0);
      expect(collected.stdout).toBe(`Collected 200 results from queue ${queue} into ${output}\n`);
    } finally {
      await own.stop();
    }
  }, 120_000);

  it('a worker with --exit-when-drained does not take the emptied queue for a drained one', async () => {
    const own = await startRedis();
    try {
      const queue = newQueue();
      expect((await runCli(['enqueue', '--queue', queue, '--redis', own.url, '--articles=100'])).code).toBe(0);
      const worker = startCli(
        ['worker', '--queue', queue, '--redis', own.url, '--rate=50', '--workers=4', '--min-latency=20ms', '--max-latency=40ms'],
        { killAfterMs: 60_000 },
      );
      await until(() => (worker.stdout().match(/^✓ /gm) ?? []).length >= 5, 30_000);
      // Emptied without the connection dropping: the heartbeat finds it.
      const admin = new Redis(own.url);
      await admin.flushall();
      admin.disconnect();
      const done = await worker.result;
      expect(done.code, done.stderr).toBe(1);
      expect(done.stderr).toMatch(new RegExp(`^error: queue ${queue} is gone from Redis at `, 'm'));
    } finally {
      await own.stop();
    }
  }, 90_000);
});

describe('a queue that was never made', () => {
  it('status, collect, retry-failed, drain, obliterate and worker name it in one line, exit 2, and leave no key behind', async () => {
    const queue = `never-made-${process.pid}`;
    const output = join(temp.dir, 'never.jsonl');
    const named = new RegExp(
      `^error: --queue: no queue ${queue} at redis://127\\.0\\.0\\.1:${redis.port}: nothing was enqueued on it \\(a name or --redis-prefix mistyped\\?\\), ` +
        'or Redis lost it unseen \\(restarted without its data, or the queue was removed\\)$',
      'm',
    );
    const at = ['--queue', queue, '--redis', redis.url];
    expectOneLine(await runCli(['status', ...at]), named);
    expectOneLine(await runCli(['status', ...at, '--json']), named);
    expectOneLine(await runCli(['collect', ...at, '--output', output]), named);
    await expect(access(output)).rejects.toThrow(/ENOENT/);
    expectOneLine(await runCli(['retry-failed', ...at]), named);
    expectOneLine(await runCli(['drain', ...at, '--yes']), named);
    expectOneLine(await runCli(['obliterate', ...at, '--yes']), named);
    expectOneLine(await runCli(['worker', ...at, '--exit-when-drained', '--rate=inf', ...QUICK]), named);
    // A queue made under another prefix is not this one.
    const other = newQueue();
    expect((await runCli(['enqueue', '--queue', other, '--redis', redis.url, '--articles=2'])).code).toBe(0);
    expectOneLine(await runCli(['status', '--queue', other, '--redis', redis.url, '--redis-prefix=elsewhere:']), /no queue /);
    const inspect = new Redis(redis.url);
    try {
      expect(await inspect.keys(`*${queue}*`)).toEqual([]);
      expect(await inspect.keys('elsewhere:*')).toEqual([]);
    } finally {
      inspect.disconnect();
    }
  });

  it('enqueue of an input that holds no article makes no queue: one line on stderr, exit 2', async () => {
    const queue = newQueue();
    const empty = join(temp.dir, 'empty.jsonl');
    await writeFile(empty, '');
    const file = await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--input', empty]);
    expect(file.stdout).toBe('');
    expect(file.stderr).toBe(`error: ${empty}: holds no article\n`);
    expect(file.code).toBe(2);
    const stdin = await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--input', '-'], { stdin: '\n' });
    expect(stdin.stdout).toBe('');
    expect(stdin.stderr).toBe('error: stdin: ended before any article was read\n');
    expect(stdin.code).toBe(2);
    expectOneLine(await runCli(['status', '--queue', queue, '--redis', redis.url]), /no queue /);
  });
});

describe("status's workers", () => {
  it('"seen Ns ago" is the time since each worker last said it was alive, not its connection\'s age', async () => {
    const queue = newQueue();
    expect((await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--articles=4'])).code).toBe(0);
    // Each holds all it can run from its start: its connection to wait for jobs on sits idle.
    const slow = ['worker', '--queue', queue, '--redis', redis.url, '--rate=inf', '--workers=1', '--min-latency=30s', '--max-latency=31s'];
    const runs = [1, 2].map(() => startCli([...slow, '--timeout=60s', '--grace=0s'], { killAfterMs: 60_000 }));
    try {
      const statusOf = async () =>
        JSON.parse((await runCli(['status', '--queue', queue, '--redis', redis.url, '--json'])).stdout) as QueueStatus;
      await until(async () => (await statusOf()).active === 2, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const status = await statusOf();
      expect(status.workers).toHaveLength(2);
      for (const worker of status.workers) expect(worker.silentMs, JSON.stringify(status.workers)).toBeLessThanOrEqual(2500);
      const line = (await runCli(['status', '--queue', queue, '--redis', redis.url])).stdout;
      expect(line).toMatch(/\| 2 workers \(\S+ seen [012]s ago, \S+ seen [012]s ago\) \|/);
      // A Redis user that may not run TIME (BullMQ needs none) is told the same, by this machine's clock.
      const admin = new Redis(redis.url);
      await admin.call('ACL', 'SETUSER', 'watcher', 'on', '>pw', '~*', '+@all', '-time');
      admin.disconnect();
      const watched = await runCli(['status', '--queue', queue, '--redis', `redis://watcher:pw@127.0.0.1:${redis.port}`]);
      expect(watched.stdout, watched.stderr).toMatch(/\| 2 workers \(\S+ seen [012]s ago, \S+ seen [012]s ago\) \|/);
    } finally {
      for (const run of runs) run.send('SIGKILL');
      await Promise.all(runs.map((run) => run.result));
    }
  }, 90_000);
});
