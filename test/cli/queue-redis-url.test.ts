// REDIS_URL is read by the queue commands, which cannot do without a Redis — and by nothing else:
// a developer's shell that exports it must not change what a plain run does.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type TestRedis } from '../redis/redis-server.ts';
import { runCli } from './run-cli.ts';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const QUICK = ['--min-latency=1ms', '--max-latency=2ms'];

describe('REDIS_URL', () => {
  it.each([
    ['a Redis where nothing listens', async () => `redis://127.0.0.1:${await freePort()}`],
    ['a value that is no Redis URL', () => 'http://x'],
  ])('a plain run ignores it (%s): in-process limits, exit 0, nothing on stderr', async (_, url) => {
    const result = await runCli(['--articles=3', '--rate=inf', ...QUICK], { env: { REDIS_URL: await url() } });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Succeeded:3 Failed:0/);
    expect(result.stdout).not.toMatch(/Shared quota/);
  });

  it('a plain run with a live Redis in REDIS_URL keeps its quota in-process: no key written, no shared quota', async () => {
    const inspect = new Redis(redis.url);
    try {
      const result = await runCli(['--articles=3', '--rate=inf', ...QUICK], { env: { REDIS_URL: redis.url } });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).not.toMatch(/Shared quota/);
      expect(await inspect.keys('*')).toEqual([]);
      // --redis says so: then it is shared.
      const shared = await runCli(['--articles=3', '--rate=inf', ...QUICK, '--redis', redis.url]);
      expect(shared.code, shared.stderr).toBe(0);
      expect(shared.stdout).toMatch(/^Shared quota "simulated" through Redis/m);
    } finally {
      await inspect.flushall();
      inspect.disconnect();
    }
  });

  it('the flags of a shared quota still need --redis: REDIS_URL does not stand in for it in a run', async () => {
    const result = await runCli(['--articles=1', ...QUICK, '--quota-key=team'], { env: { REDIS_URL: redis.url } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: --quota-key needs --redis (the Redis that keeps the shared quota)\n');
  });

  it('the queue commands read it: enqueue, worker, status and collect without --redis', async () => {
    const env = { REDIS_URL: redis.url };
    const queue = `url-${process.pid}`;
    const enqueued = await runCli(['enqueue', '--queue', queue, '--articles=4'], { env });
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const worker = await runCli(['worker', '--queue', queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'], { env });
    expect(worker.code, worker.stderr).toBe(0);
    expect(worker.stdout).toMatch(/Succeeded:4 Failed:0/);
    const status = await runCli(['status', '--queue', queue, '--json'], { env });
    expect(JSON.parse(status.stdout)).toMatchObject({ completed: 4 });
    const collected = await runCli(['collect', '--queue', queue, '--output', '-', '--quiet'], { env });
    expect(collected.stdout.trim().split('\n')).toHaveLength(4);
    // A REDIS_URL that is not a Redis URL is named as the source of the problem.
    const bad = await runCli(['status', '--queue', queue], { env: { REDIS_URL: 'http://x' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('error: REDIS_URL: expected a redis:// or rediss:// URL (rediss:// for TLS)\n');
  });

  it('--help says which commands read it', async () => {
    const run = (await runCli(['--help'])).stdout.replace(/\s+/g, ' ');
    expect(run).not.toContain('(env: REDIS_URL)');
    expect(run).toContain('REDIS_URL is not read: only the queue commands read it');
    for (const command of ['enqueue', 'worker', 'status', 'collect', 'retry-failed', 'drain', 'obliterate']) {
      const help = (await runCli([command, '--help'])).stdout.replace(/\s+/g, ' ');
      expect(help, command).toContain('(env: REDIS_URL)');
    }
  });
});
