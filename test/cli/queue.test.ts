// The queue commands against a real redis-server of the test's own: enqueue, worker processes
// (one killed with kill -9, one stopped with SIGTERM), a Redis restarted mid-run, collect.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArticleResult } from '../../src/index.ts';
import type { QueueStatus } from '../../src/queue/index.ts';
import { freePort, makeCertificates, startRedis, startRedisCluster, startTlsRedis, type TestRedis } from '../redis/redis-server.ts';
import { makeTempDir, ROOT, runCli, startCli, type CliResult } from './run-cli.ts';

let redis: TestRedis;
let temp: Awaited<ReturnType<typeof makeTempDir>>;
let queues = 0;
/** A queue name no other test uses. */
const newQueue = () => `q${++queues}-${process.pid}`;

beforeAll(async () => {
  redis = await startRedis();
  temp = await makeTempDir();
});
afterAll(async () => {
  await redis?.stop();
  await temp?.remove();
});

const QUICK = ['--min-latency=1ms', '--max-latency=2ms'];

async function resultsOf(path: string): Promise<ArticleResult[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ArticleResult);
}

async function statusOf(queue: string, url = redis.url): Promise<QueueStatus> {
  const result = await runCli(['status', '--queue', queue, '--redis', url, '--json']);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as QueueStatus;
}

/** A new queue holding `articles` generated articles. */
async function queueWith(articles: number): Promise<string> {
  const queue = newQueue();
  const enqueued = await runCli(['enqueue', '--queue', queue, '--redis', redis.url, `--articles=${articles}`]);
  expect(enqueued.code, enqueued.stderr).toBe(0);
  return queue;
}

/** The arguments of a worker on `queue` at the test's Redis, with `flags`. */
function workerOn(queue: string, ...flags: string[]): string[] {
  return ['worker', '--queue', queue, '--redis', redis.url, ...flags];
}

/** Collects the queue into a fresh file and returns its results, checking each article is there once. */
async function collected(queue: string, url = redis.url): Promise<ArticleResult[]> {
  const output = join(temp.dir, `${queue}-${Date.now()}.jsonl`);
  const result = await runCli(['collect', '--queue', queue, '--redis', url, '--output', output]);
  expect(result.code, result.stderr).toBe(0);
  const results = await resultsOf(output);
  expect(new Set(results.map((r) => r.id)).size, 'an article twice').toBe(results.length);
  return results;
}

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

describe('news-processor enqueue', () => {
  it('adds one job per article: enqueueing the same input twice adds nothing, and ids that are numbers or hold a colon work', async () => {
    const queue = newQueue();
    const input = join(temp.dir, 'odd-ids.jsonl');
    const ids = ['1', '2', 'a:b', '50%', '%3A', 'x'];
    await writeFile(input, ids.map((id) => JSON.stringify({ id, title: `t${id}`, content: `Article ${id} says something.` })).join('\n'));
    const first = await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--input', input]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^Queue ${queue}: 6 articles added, 0 already there \\(`));
    const again = await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--input', input, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ queue, added: 0, existing: 6 });
    expect(await statusOf(queue)).toMatchObject({ waiting: 6, active: 0, completed: 0, failed: 0 });

    const work = await runCli(workerOn(queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--json'));
    expect(work.code, work.stderr).toBe(0);
    const results = await collected(queue);
    expect(results.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(results.every((r) => r.status === 'succeeded')).toBe(true);
  });

  it('a worker writes its own report with --report', async () => {
    const queue = await queueWith(6);
    const file = join(temp.dir, `${queue}.html`);
    const work = await runCli(workerOn(queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet', '--report', file));
    expect(work.code, work.stderr).toBe(0);
    expect(work.stderr).toMatch(/^Report: .*\.html \(\d+ KiB, written in \d+ ms\)$/m);
    const page = await readFile(file, 'utf8');
    expect(page).toMatch(/<p class="status">finished after /);
    expect(page).toMatch(/<th>articles<\/th><td>6: 6 succeeded/);
    expect(page.match(/<figure id="chart-/g)?.length).toBeGreaterThanOrEqual(6);
    expect(page.match(/<svg /g)?.length).toBeGreaterThanOrEqual(6);
  });

  it('refuses in the words docs/queue.md quotes', async () => {
    const doc = await readFile(join(ROOT, 'docs/queue.md'), 'utf8');
    const quoted = doc.slice(doc.indexOf('## Refused before any job moves')).split('```')[1]!.trim().split('\n');
    const closed = await freePort();
    // The document's Redis is at 6379 (6390 where nothing listens), the test's elsewhere.
    const asDocumented = (result: CliResult) =>
      result.stderr
        .trimEnd()
        .replaceAll(`:${closed}`, ':6390')
        .replaceAll(`:${redis.port}`, ':6379')
        .replace(/NOPERM .*/, 'NOPERM …');
    const admin = new Redis(redis.url);
    try {
      await admin.call('ACL', 'SETUSER', 'cramped', 'on', '>pw', '~other:*', '+@all');
      const said = [
        await runCli(['enqueue', '--queue', 'a:b', '--redis', redis.url]),
        await runCli(['status', '--queue', 'batch-1', '--redis', redis.url]),
        await runCli(['enqueue', '--queue', 'ok', '--redis', `redis://127.0.0.1:${closed}`, '--redis-timeout=1s']),
        await runCli(['enqueue', '--queue', 'ok', '--redis', `redis://cramped:pw@127.0.0.1:${redis.port}`, '--articles=3']),
        await runCli(['worker', '--queue', 'ok', '--redis', redis.url, '--articles=3']),
      ].map(asDocumented);
      expect(said).toEqual(quoted);
    } finally {
      admin.disconnect();
    }
  });

  it('refuses a bad queue name, an unreachable Redis and a Redis user without the permissions, in one line, before any job moves', async () => {
    expectOneLine(await runCli(['enqueue', '--queue', 'a:b', '--redis', redis.url]), /--queue "a:b": expected 1 to 100 letters/);
    expectOneLine(await runCli(['status', '--queue', 'has space', '--redis', redis.url]), /--queue "has space"/);
    expectOneLine(await runCli(['enqueue', '--queue', 'ok', '--redis', 'http://x']), /--redis: expected a redis:\/\/ or rediss:\/\/ URL/);
    const closed = `redis://127.0.0.1:${await freePort()}`;
    expectOneLine(
      await runCli(['enqueue', '--queue', 'ok', '--redis', closed, '--redis-timeout=1s']),
      /--redis: cannot connect to Redis at redis:\/\/127\.0\.0\.1:\d+/,
    );
    const admin = new Redis(redis.url);
    try {
      await admin.call('ACL', 'SETUSER', 'cramped', 'on', '>pw', '~other:*', '+@all');
      const url = `redis://cramped:pw@127.0.0.1:${redis.port}`;
      const refused = await runCli(['enqueue', '--queue', 'ok', '--redis', url, '--articles=3']);
      expectOneLine(refused, /the Redis user may not use the queue's keys or run scripts: NOPERM/);
      expect(refused.stderr).not.toContain(':pw@');
    } finally {
      admin.disconnect();
    }
    const worker = await runCli(['worker', '--queue', 'ok', '--redis', redis.url, '--articles=3']);
    expectOneLine(worker, /--articles belongs to enqueue: a worker takes its articles from the queue/);
    expectOneLine(
      await runCli(['worker', '--queue', 'ok', '--redis', redis.url, '--redis-give-up=soon']),
      /option '--redis-give-up <duration>' argument 'soon' is invalid\. Expected a duration/,
    );
  });
});

describe('news-processor worker', () => {
  it('three workers, one killed with kill -9 mid-run: its jobs come back, every article is collected once, all succeeded', async () => {
    const queue = await queueWith(60);
    const args = workerOn(
      queue,
      '--rate=30',
      '--burst=3',
      '--workers=4',
      '--min-latency=100ms',
      '--max-latency=200ms',
      '--lock-duration=2s',
      '--stalled-interval=1s',
      '--exit-when-drained',
    );
    const victim = startCli(args, { killAfterMs: 90_000 });
    const others = [startCli(args, { killAfterMs: 90_000 }), startCli(args, { killAfterMs: 90_000 })];
    // Once it has finished a few, the victim holds jobs under way: kill it then.
    await until(() => (victim.stdout().match(/^✓ /gm) ?? []).length >= 3, 30_000);
    victim.send('SIGKILL');
    const killed = await victim.result;
    expect(killed.signal).toBe('SIGKILL');
    const survivors = await Promise.all(others.map((run) => run.result));
    for (const survivor of survivors) expect(survivor.code, survivor.stderr).toBe(0);
    const results = await collected(queue);
    expect(results, JSON.stringify(await statusOf(queue))).toHaveLength(60);
    expect(results.filter((r) => r.status !== 'succeeded')).toEqual([]);
    const status = await statusOf(queue);
    expect(status).toMatchObject({ waiting: 0, active: 0, completed: 60, failed: 0 });
    // Every call counted; those the killed worker had made for the jobs it held were made again.
    expect(status.calls).toBeGreaterThanOrEqual(120);
    expect(status.calls - status.repeatedCalls, JSON.stringify(status)).toBe(120);
  });

  it('SIGTERM: stops taking jobs, cuts the calls under way after --grace and puts their jobs back; exit 143 with its summary', async () => {
    const queue = await queueWith(20);
    const slow = startCli(workerOn(queue, '--rate=inf', '--workers=5', '--min-latency=300ms', '--max-latency=600ms', '--grace=0s'));
    await until(() => /^✓ /m.test(slow.stdout()), 30_000);
    slow.send('SIGTERM');
    const stopped = await slow.result;
    expect(stopped.code, stopped.stderr).toBe(143);
    expect(stopped.stderr).toMatch(/SIGTERM: taking no more jobs; the calls under way have 0s, then their jobs go back to the queue/);
    expect(stopped.stdout).toMatch(
      /^Worker: \d+ jobs taken from queue \S+, \d+ put back unfinished for another worker \(stopped by SIGTERM\)$/m,
    );
    const after = await statusOf(queue);
    expect(after.active).toBe(0);
    expect(after.waiting).toBeGreaterThan(0);
    expect(after.waiting + after.completed).toBe(20);
    const rest = await runCli(workerOn(queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'));
    expect(rest.code, rest.stderr).toBe(0);
    const results = await collected(queue);
    expect(results).toHaveLength(20);
    expect(results.every((r) => r.status === 'succeeded')).toBe(true);
  });

  it('oversubscribed workers on one shared quota lose nothing: three processes of 10 at a shared 10/s', async () => {
    const queue = await queueWith(60);
    const args = workerOn(queue, '--rate=10', '--burst=4', '--workers=10', '--exit-when-drained', '--json');
    const runs = await Promise.all([1, 2, 3].map(() => runCli(args, { killAfterMs: 90_000 })));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const results = await collected(queue);
    expect(results).toHaveLength(60);
    expect(results.filter((r) => r.status !== 'succeeded')).toEqual([]);
  });

  it('a dead letter fails its job with its result; retry-failed puts it back; collect --resume writes the new result once', async () => {
    const queue = newQueue();
    const input = join(temp.dir, 'missing-field.jsonl');
    await writeFile(
      input,
      `${JSON.stringify({ id: 'ok', title: 'fine', content: 'Plenty of text here.' })}\n${JSON.stringify({ id: 'bad', title: 'no content' })}\n`,
    );
    await runCli(['enqueue', '--queue', queue, '--redis', redis.url, '--input', input]);
    const work = await runCli(workerOn(queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'));
    expect(work.code).toBe(1);
    const output = join(temp.dir, `${queue}.jsonl`);
    await runCli(['collect', '--queue', queue, '--redis', redis.url, '--output', output]);
    const first = await resultsOf(output);
    expect(first.map((r) => [r.id, r.status, r.error?.type]).sort()).toEqual([
      ['bad', 'failed', 'MissingFieldError'],
      ['ok', 'succeeded', undefined],
    ]);
    expect(await statusOf(queue)).toMatchObject({ completed: 1, failed: 1 });
    const retried = await runCli(['retry-failed', '--queue', queue, '--redis', redis.url]);
    expect(retried.stdout).toBe(`Queue ${queue}: 1 failed job put back\n`);
    expect(await statusOf(queue)).toMatchObject({ waiting: 1, failed: 0 });
    // Still failing (the field is still missing): the file keeps one line per article.
    await runCli(workerOn(queue, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'));
    const again = await runCli(['collect', '--queue', queue, '--redis', redis.url, '--output', output, '--resume']);
    expect(again.code, again.stderr).toBe(0);
    expect((await resultsOf(output)).map((r) => r.id).sort()).toEqual(['bad', 'ok']);
  });
  it('collect --resume writes in place of a line the result of an article run again with changed tasks', async () => {
    const output = join(temp.dir, 'changed-tasks.jsonl');
    const first = await queueWith(2);
    expect((await runCli(workerOn(first, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'))).code).toBe(0);
    expect((await runCli(['collect', '--queue', first, '--redis', redis.url, '--output', output])).code).toBe(0);
    const before = await resultsOf(output);
    // The same articles on another queue, through a task of another prompt.
    const tasks = join(temp.dir, 'one-line.json');
    const schema = { type: 'object', additionalProperties: false, required: ['summary'], properties: { summary: { type: 'string' } } };
    await writeFile(tasks, JSON.stringify({ tasks: [{ name: 'summarize', prompt: 'In one line: {{content}}', schema }] }));
    const second = await queueWith(2);
    const work = await runCli(workerOn(second, `--tasks=${tasks}`, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet'));
    expect(work.code, work.stderr).toBe(0);
    const again = await runCli(['collect', '--queue', second, '--redis', redis.url, '--output', output, '--resume']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `Collected 2 results from queue ${second} into ${output} (2 in place of the file's line, made by tasks changed since)\n`,
    );
    const after = await resultsOf(output);
    expect(after.map((r) => r.id)).toEqual(['1', '2']);
    for (const [index, result] of after.entries()) {
      expect(Object.keys(result.outputs)).toEqual(['summarize']);
      expect(result.fingerprints).not.toEqual(before[index]!.fingerprints);
    }
    // The same tasks once more: nothing newer to write.
    const same = await runCli(['collect', '--queue', second, '--redis', redis.url, '--output', output, '--resume']);
    expect(same.stdout).toBe(`Collected 0 results from queue ${second} into ${output}\n`);
  });
});

describe('a worker whose Redis is lost (killed, persisting its data as production runs it)', () => {
  /** A persistent redis-server on a port of its own, a queue of `articles` on it, and the worker's flags. */
  async function persistentQueue(articles: number) {
    const dir = await mkdtemp(join(tmpdir(), 'news-processor-aof-'));
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const redisServer = { process: await launchPersistent(port, dir) };
    const queue = newQueue();
    const enqueued = await runCli(['enqueue', '--queue', queue, '--redis', url, `--articles=${articles}`]);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    return {
      url,
      queue,
      worker: (extra: readonly string[]) =>
        startCli(
          ['worker', '--queue', queue, '--redis', url, '--rate=20', '--workers=8', '--min-latency=50ms', '--max-latency=100ms', ...extra],
          { killAfterMs: 90_000 },
        ),
      kill: async () => {
        redisServer.process.kill('SIGKILL');
        await once(redisServer.process, 'exit');
      },
      restart: async () => {
        redisServer.process = await launchPersistent(port, dir);
      },
      remove: async () => {
        redisServer.process.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      },
    };
  }

  const LOST =
    /^warning: the connection to Redis at redis:\/\/127\.0\.0\.1:\d+ was lost: holding \d+ jobs?, starting none; waiting up to (\S+) for it to answer again$/m;

  it('says so at once, holds its jobs, goes on once Redis is back: every article succeeded once, no dead letter', async () => {
    const setup = await persistentQueue(60);
    try {
      const worker = setup.worker(['--exit-when-drained']);
      await until(() => (worker.stdout().match(/^✓ /gm) ?? []).length >= 5, 30_000);
      await setup.kill();
      await worker.waitForStderr(LOST, 10_000);
      expect(worker.stderr().match(LOST)![1]).toBe('30s');
      // Away for a while: the worker waits, it does not end.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(worker.child.exitCode).toBeNull();
      await setup.restart();
      const done = await worker.result;
      expect(done.timedOut).toBe(false);
      expect(done.code, done.stderr).toBe(0);
      // After the start line, one line when it went, one when it came back, in that order; nothing else.
      const lines = done.stderr.split('\n').filter((line) => line !== '');
      expect(lines, done.stderr).toHaveLength(3);
      expect(lines[0]).toMatch(/^worker on queue /);
      expect(lines[1]).toMatch(LOST);
      expect(lines[2]).toMatch(/^notice: Redis at \S+ answers again after \S+: going on$/);
      expect(done.stdout).toMatch(/^Redis: stopped answering once, \S+ in all; the worker held its jobs meanwhile$/m);
      const results = await collected(setup.queue, setup.url);
      expect(results).toHaveLength(60);
      expect(results.filter((r) => r.status !== 'succeeded')).toEqual([]);
      expect(await statusOf(setup.queue, setup.url)).toMatchObject({ waiting: 0, active: 0, stalled: 0, completed: 60, failed: 0 });
    } finally {
      await setup.remove();
    }
  }, 120_000);

  it('Redis away past --redis-give-up: exit 1 with its summary and what to run next; its jobs come back, none a dead letter', async () => {
    const setup = await persistentQueue(40);
    try {
      // Its stalled check at 1 s too: each check leaves a key that holds off every worker's next one for
      // the interval of the worker that made it (BullMQ), and Redis keeps it across the restart, so the
      // default 30 s would keep the next worker from taking the jobs back for half a minute.
      const worker = setup.worker(['--exit-when-drained', '--redis-give-up=2s', '--lock-duration=2s', '--stalled-interval=1s']);
      await until(() => (worker.stdout().match(/^✓ /gm) ?? []).length >= 5, 30_000);
      const killedMs = performance.now();
      await setup.kill();
      const done = await worker.result;
      const afterKillMs = performance.now() - killedMs;
      expect(done.timedOut).toBe(false);
      expect(done.code, done.stderr).toBe(1);
      expect(afterKillMs).toBeGreaterThanOrEqual(2000);
      expect(afterKillMs).toBeLessThan(2000 + 15_000);
      expect(done.stderr).toMatch(LOST);
      expect(done.stderr).toMatch(
        new RegExp(
          `^error: Redis at \\S+ did not answer for 2s \\(.*\\); the worker stopped \\(see --redis-give-up\\), its unfinished jobs go back to the queue once their lock runs out: ` +
            `start a worker again once Redis is back \\(news-processor status --queue ${setup.queue} shows what is left\\)$`,
          'm',
        ),
      );
      expect(done.stdout).toMatch(/^Worker: \d+ jobs taken from queue \S+/m);
      expect(done.stdout).toMatch(/^Calls: \d+ /m);
      // Back, another worker finishes the batch: the jobs the first held come back once their lock ran out.
      await setup.restart();
      const rest = await runCli(
        [
          'worker',
          '--queue',
          setup.queue,
          '--redis',
          setup.url,
          '--rate=inf',
          ...QUICK,
          '--exit-when-drained',
          '--quiet',
          '--stalled-interval=1s',
        ],
        { killAfterMs: 60_000 },
      );
      expect(rest.code, rest.stderr).toBe(0);
      const results = await collected(setup.queue, setup.url);
      expect(results).toHaveLength(40);
      expect(results.filter((r) => r.status !== 'succeeded')).toEqual([]);
    } finally {
      await setup.remove();
    }
  }, 120_000);

  it('SIGTERM while Redis is down: ends within --grace and a moment, exit 143 with its summary', async () => {
    const setup = await persistentQueue(40);
    try {
      const worker = setup.worker(['--grace=1s']);
      await until(() => (worker.stdout().match(/^✓ /gm) ?? []).length >= 3, 30_000);
      await setup.kill();
      await worker.waitForStderr(LOST, 10_000);
      const signalledMs = performance.now();
      worker.send('SIGTERM');
      const done = await worker.result;
      const afterSignalMs = performance.now() - signalledMs;
      expect(done.timedOut).toBe(false);
      expect(done.code, done.stderr).toBe(143);
      expect(afterSignalMs).toBeLessThan(1000 + 10_000);
      expect(done.stdout).toMatch(/^Worker: \d+ jobs taken from queue \S+.* \(stopped by SIGTERM\)$/m);
      expect(done.stdout).toMatch(/^Redis: stopped answering once/m);
    } finally {
      await setup.remove();
    }
  }, 120_000);
});

describe('news-processor status', () => {
  it("names each worker by host:pid; a killed worker's jobs count as stalled, not active, once their lock is gone", async () => {
    const queue = await queueWith(20);
    const slow = workerOn(queue, '--rate=inf', '--min-latency=20s', '--max-latency=21s', '--timeout=60s', '--quiet');
    // The one to be killed holds 3 jobs on a short lock; the other holds 1 and looks for stalled jobs rarely.
    const victim = startCli([...slow, '--workers=3', '--lock-duration=1s'], { killAfterMs: 60_000 });
    const other = startCli([...slow, '--workers=1', '--stalled-interval=10m', '--grace=0s'], { killAfterMs: 60_000 });
    try {
      await until(async () => (await statusOf(queue)).active === 4, 30_000);
      const both = await statusOf(queue);
      const host = hostname();
      expect(both.workers.map((w) => w.name).sort()).toEqual([`${host}:${victim.child.pid}`, `${host}:${other.child.pid}`].sort());
      for (const { lastSeenMs } of both.workers) expect(Math.abs(Date.now() - lastSeenMs)).toBeLessThan(60_000);
      const human = await runCli(['status', '--queue', queue, '--redis', redis.url]);
      expect(human.stdout).toMatch(new RegExp(`\\| 2 workers \\(${host}:\\d+ seen \\d+s ago, ${host}:\\d+ seen \\d+s ago\\) \\|`));

      victim.send('SIGKILL');
      await victim.result;
      await until(async () => (await statusOf(queue)).stalled === 3, 30_000);
      const after = await statusOf(queue);
      expect(after).toMatchObject({ waiting: 16, active: 1, stalled: 3, completed: 0 });
      expect(after.workers.map((w) => w.name)).toEqual([`${host}:${other.child.pid}`]);
      const line = (await runCli(['status', '--queue', queue, '--redis', redis.url])).stdout;
      expect(line).toContain(" · 1 active · 3 stalled (their worker is gone: back to waiting at a worker's next stalled check) · ");
      expect(line).not.toMatch(/eta 0s/);
    } finally {
      victim.send('SIGKILL');
      other.send('SIGTERM');
      await Promise.all([victim.result, other.result]);
    }
  }, 90_000);
});

/** A redis-server that writes every change to its append-only file before answering: a restart loses nothing. */
async function launchPersistent(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
  child.removeAllListeners('exit');
  return child;
}

describe('the queue on Redis as production runs it', () => {
  it('on a three-master Redis Cluster: enqueue, two workers on one shared quota, collect', async () => {
    const cluster = await startRedisCluster();
    try {
      const queue = newQueue();
      const enqueued = await runCli(['enqueue', '--queue', queue, '--redis', cluster.url, '--articles=30', '--json']);
      expect(enqueued.code, enqueued.stderr).toBe(0);
      expect(JSON.parse(enqueued.stdout)).toMatchObject({ added: 30, existing: 0 });
      const args = [
        'worker',
        '--queue',
        queue,
        '--redis',
        cluster.url,
        '--rate=40',
        ...QUICK,
        '--workers=4',
        '--exit-when-drained',
        '--json',
      ];
      const runs = await Promise.all([runCli(args), runCli(args)]);
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      expect(runs.reduce((sum, run) => sum + (JSON.parse(run.stdout) as { succeeded: number }).succeeded, 0)).toBe(30);
      const results = await collected(queue, cluster.url);
      expect(results).toHaveLength(30);
      expect(await statusOf(queue, cluster.url)).toMatchObject({ completed: 30, failed: 0, calls: 60, repeatedCalls: 0 });
    } finally {
      await cluster.stop();
    }
  });

  it('over TLS with a private CA and a client certificate (--redis-ca, --redis-cert, --redis-key)', async () => {
    const certificates = await makeCertificates();
    const server = await startTlsRedis(certificates, { authClients: true });
    try {
      const tls = [
        '--redis',
        server.url,
        '--redis-ca',
        certificates.caFile,
        '--redis-cert',
        certificates.clientCertFile,
        '--redis-key',
        certificates.clientKeyFile,
      ];
      const queue = newQueue();
      const enqueued = await runCli(['enqueue', '--queue', queue, ...tls, '--articles=10']);
      expect(enqueued.code, enqueued.stderr).toBe(0);
      const work = await runCli(['worker', '--queue', queue, ...tls, '--rate=inf', ...QUICK, '--exit-when-drained', '--quiet']);
      expect(work.code, work.stderr).toBe(0);
      const output = join(temp.dir, `${queue}-tls.jsonl`);
      const collect = await runCli(['collect', '--queue', queue, ...tls, '--output', output]);
      expect(collect.code, collect.stderr).toBe(0);
      expect(await resultsOf(output)).toHaveLength(10);
      // Without the client certificate: one line naming the flags to give, before anything moves.
      const refused = await runCli(['status', '--queue', queue, '--redis', server.url, '--redis-ca', certificates.caFile]);
      expectOneLine(refused, /--redis-cert FILE --redis-key FILE/);
    } finally {
      await server.stop();
      await certificates.remove();
    }
  });
});
