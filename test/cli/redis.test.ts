import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArticleResult, RunSummary } from '../../src/index.ts';
import { formatDuration } from '../../src/mechanisms.ts';
import { REDIS_DEFAULTS } from '../../src/redis/index.ts';
import { namesOnEveryNode, slotRanges } from '../redis/cluster-slot.ts';
import {
  freePort,
  startRedis,
  startRedisCluster,
  startTlsRedisPair,
  type TestCertificates,
  type TestCluster,
  type TestRedis,
  type TlsRedisPair,
} from '../redis/redis-server.ts';
import { makeTempDir, runCli, startCli, type CliResult } from './run-cli.ts';

let redis: TestRedis;
let temp: { dir: string; remove: () => Promise<void> };

beforeAll(async () => {
  redis = await startRedis();
  temp = await makeTempDir();
});

afterAll(async () => {
  await redis?.stop();
  await temp?.remove();
});

const QUICK = ['--min-latency=1ms', '--max-latency=2ms'];

/** Exit 2, nothing on stdout, one `error: …` line on stderr. */
function expectUsageError(result: CliResult, mentions: readonly RegExp[]): void {
  expect(result.timedOut, 'the run hung').toBe(false);
  expect(result.stdout).toBe('');
  expect(result.stderr.split('\n'), `stderr: ${result.stderr}`).toHaveLength(2);
  expect(result.stderr).toMatch(/^error: \S.*\n$/);
  for (const mention of mentions) expect(result.stderr).toMatch(mention);
  expect(result.code).toBe(2);
}

async function resultsOf(path: string): Promise<ArticleResult[]> {
  const text = await readFile(path, 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ArticleResult);
}

describe('news-processor --redis', () => {
  it('shares the quota: runs with the limits in Redis, under the provider name by default, --quota-key, or quotaKey in --config', async () => {
    const inspect = new Redis(redis.url);
    try {
      const keys: string[] = [];
      await inspect.config('SET', 'notify-keyspace-events', 'KEA');
      const watcher = new Redis(redis.url);
      await watcher.psubscribe('__keyspace@0__:*');
      watcher.on('pmessage', (_pattern, channel) => keys.push(channel.replace('__keyspace@0__:', '')));
      const result = await runCli(['--articles=3', '--rate=50', ...QUICK, '--quiet', '--redis', redis.url]);
      const named = await runCli([
        '--articles=3',
        '--rate=50',
        ...QUICK,
        '--quiet',
        '--quota-key=team-key',
        '--redis-prefix=app:',
        '--redis',
        redis.url,
      ]);
      const config = join(temp.dir, 'providers.json');
      await writeFile(
        config,
        JSON.stringify({
          providers: [
            {
              name: 'first',
              limits: [{ kind: 'requests', rate: 50 }],
              quotaKey: 'shared-key',
              simulated: { minLatency: '1ms', maxLatency: '2ms' },
            },
            { name: 'second', limits: [{ kind: 'requests', rate: 50 }], simulated: { minLatency: '1ms', maxLatency: '2ms' } },
          ],
          routes: { summarize: 'first', sentiment: 'second' },
        }),
      );
      const configured = await runCli(['--articles=3', '--quiet', '--config', config, '--redis', redis.url]);
      watcher.disconnect();
      expect([result.code, named.code, configured.code]).toEqual([0, 0, 0]);
      expect(result.stdout).toMatch(/Succeeded:3 Failed:0/);
      // The summary says the quota is shared, and that its figures are this process's part.
      const note =
        /^Shared quota (.*) through Redis: the calls and the efficiency above are this process's; other processes on the same quota take their share of the rate$/m;
      expect(note.exec(result.stdout)?.[1]).toBe('"simulated"');
      expect(note.exec(named.stdout)?.[1]).toBe('"team-key" (simulated)');
      expect(note.exec(configured.stdout)?.[1]).toBe('"shared-key" (first), "second"');
      expect(new Set(keys)).toEqual(
        new Set([
          'news-processor:{simulated}:requests',
          'app:{team-key}:requests',
          'news-processor:{shared-key}:requests',
          'news-processor:{second}:requests',
        ]),
      );
    } finally {
      inspect.disconnect();
    }
  });

  it('says which URL and why in one line, exit 2, no call made, when Redis cannot be reached at start', async () => {
    const port = await freePort();
    const output = join(temp.dir, 'unreachable.jsonl');
    const result = await runCli(['--articles=3', ...QUICK, '--output', output, '--redis', `redis://:secret@127.0.0.1:${port}`]);
    expectUsageError(result, [
      new RegExp(`^error: --redis: cannot connect to Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}: connect ECONNREFUSED`),
    ]);
    expect(result.stderr).not.toMatch(/secret/);
    await expect(access(output)).rejects.toThrow(/ENOENT/);
  });

  it.each([
    ['a URL that is not redis://', ['--redis', 'http://127.0.0.1:6379'], [/^error: --redis: expected a redis:\/\/ or rediss:\/\/ URL/]],
    ['--quota-key without --redis', ['--quota-key=a'], [/--quota-key needs --redis/]],
    ['--redis-timeout without --redis', ['--redis-timeout=1s'], [/--redis-timeout needs --redis/]],
    ['--quota-key with braces', ['--redis', 'redis://127.0.0.1:1', '--quota-key=a{b}'], [/--quota-key/, /'a\{b\}'/, /without \{ or \}/]],
    ['--redis-prefix with braces', ['--redis', 'redis://127.0.0.1:1', '--redis-prefix={x}'], [/--redis-prefix/, /without \{ or \}/]],
    ['--redis-timeout=0s', ['--redis', 'redis://127.0.0.1:1', '--redis-timeout=0s'], [/--redis-timeout/, /'0s'/]],
    ['unknown --redis-fallback', ['--redis', 'redis://127.0.0.1:1', '--redis-fallback=maybe'], [/--redis-fallback/, /stop, local/]],
    ['--redis-fallback=local without a share', ['--redis', 'redis://127.0.0.1:1', '--redis-fallback=local'], [/--fallback-share/]],
    [
      '--fallback-share without local',
      ['--redis', 'redis://127.0.0.1:1', '--fallback-share=0.5'],
      [/--fallback-share applies with --redis-fallback=local/],
    ],
    [
      '--fallback-share above 1',
      ['--redis', 'redis://127.0.0.1:1', '--redis-fallback=local', '--fallback-share=1.5'],
      [/'1\.5'/, /\(0, 1\]/],
    ],
    [
      '--fallback-share of 0',
      ['--redis', 'redis://127.0.0.1:1', '--redis-fallback=local', '--fallback-share=0'],
      [/--fallback-share/, /'0'/],
    ],
    [
      '--quota-key with --config',
      ['--redis', 'redis://127.0.0.1:1', '--config', 'fixtures/providers/two-providers.json', '--quota-key=a'],
      [/--quota-key/, /"quotaKey" per provider/],
    ],
    ['--redis-cluster without --redis', ['--redis-cluster'], [/^error: --redis-cluster needs --redis/]],
    ['--no-redis-cluster without --redis', ['--no-redis-cluster'], [/^error: --no-redis-cluster needs --redis/]],
    ['--redis-ca without --redis', ['--redis-ca', 'ca.pem'], [/^error: --redis-ca needs --redis/]],
    [
      '--redis-cert without --redis-key',
      ['--redis', 'rediss://127.0.0.1:1', '--redis-cert', 'client.crt'],
      [/^error: --redis-cert and --redis-key go together/],
    ],
    [
      '--redis-ca with a redis:// URL',
      ['--redis', 'redis://127.0.0.1:1', '--redis-ca', 'ca.pem'],
      [/^error: --redis-ca needs a rediss:\/\/ URL/],
    ],
    [
      'a URL parameter that would be ignored',
      ['--redis', 'rediss://127.0.0.1:1?ca=ca.pem'],
      [
        /^error: --redis: Expected the URL's parameters to be among: rejectUnauthorized, got "ca=ca\.pem" \(the CA and a client certificate are flags/,
      ],
    ],
    [
      'a URL path that is no database',
      ['--redis', 'redis://127.0.0.1:1/x'],
      [/^error: --redis: Expected the URL's path to be a database number/],
    ],
    [
      'a --redis-ca file that is not there',
      ['--redis', 'rediss://127.0.0.1:1', '--redis-ca', 'missing-ca.pem'],
      [/^error: --redis-ca missing-ca\.pem: cannot read it: ENOENT: no such file or directory$/m],
    ],
  ] as const)('refuses %s: one line, exit 2', async (_, args, mentions) => {
    expectUsageError(await runCli(['--articles=1', ...QUICK, ...args]), mentions);
  });

  it('shows the library defaults in --help', async () => {
    const help = (await runCli(['--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain(`--redis-prefix <prefix> begins every Redis key (default: ${JSON.stringify(REDIS_DEFAULTS.prefix)})`);
    expect(help).toContain(`(default: ${formatDuration(REDIS_DEFAULTS.timeoutMs)})`);
    expect(help).toContain('REDIS_URL is not read: only the queue commands read it');
  });

  it('oversubscribed processes on one shared quota lose nothing: three of 10 workers each at a shared 10/s succeed 90 of 90', async () => {
    const args = ['--redis', redis.url, '--quota-key=oversubscribed', '--rate=10', '--burst=4', '--workers=10', '--articles=30', '--json'];
    const results = await Promise.all([1, 2, 3].map((seed) => runCli([...args, `--seed=${seed}`], { killAfterMs: 90_000 })));
    for (const result of results) {
      const summary = JSON.parse(result.stdout) as RunSummary;
      expect({ code: result.code, succeeded: summary.succeeded, reasons: summary.failureReasons }).toEqual({
        code: 0,
        succeeded: 30,
        reasons: {},
      });
    }
  });

  it('stops intake when Redis is killed mid-run: every started article in the results, those in flight failed, exit 1', async () => {
    const own = await startRedis();
    try {
      const output = join(temp.dir, 'killed.jsonl');
      const run = startCli([
        '--articles=200',
        '--rate=20',
        '--burst=2',
        '--workers=4',
        ...QUICK,
        '--json',
        '--output',
        output,
        '--redis',
        own.url,
        '--redis-timeout=300ms',
      ]);
      await until(async () => (await resultsOf(output).catch(() => [])).length >= 3, 20_000);
      await own.kill();
      const result = await run.result;
      expect(result.code).toBe(1);
      const summary = JSON.parse(result.stdout) as RunSummary;
      expect(summary.articles).toBeLessThan(200);
      expect(summary.succeeded + summary.failed).toBe(summary.articles);
      expect(summary.failureReasons).toEqual({ LimiterUnavailableError: summary.failed });
      expect(summary.stoppedBy?.type).toBe('LimiterUnavailableError');
      const results = await resultsOf(output);
      expect(results).toHaveLength(summary.articles);
      expect(new Set(results.map((r) => r.id)).size).toBe(results.length);
      for (const failed of results.filter((r) => r.status === 'failed')) expect(failed.error?.type).toBe('LimiterUnavailableError');
      expect(result.stderr).toMatch(
        new RegExp(
          `^error: Redis at ${own.url.replace(/\./g, '\\.')} did not answer within 300ms.*: intake stopped, the articles in flight failed; the rest were not started: run again with --resume once it is back to finish the rest$`,
          'm',
        ),
      );
      // The stop is that one line: at the default --log-level=error no pino line (with its stack) comes with it.
      expect(result.stderr).not.toMatch(/"level":/);
      expect(result.stderr).not.toMatch(/^\s+at /m);
    } finally {
      await own.stop();
    }
  });

  it('goes on at the fallback share when Redis is killed mid-run with --redis-fallback=local, and says so', async () => {
    const own = await startRedis();
    try {
      const output = join(temp.dir, 'fallback.jsonl');
      const run = startCli([
        '--articles=12',
        '--rate=20',
        '--burst=2',
        '--workers=4',
        ...QUICK,
        '--quiet',
        '--output',
        output,
        '--redis',
        own.url,
        '--redis-timeout=300ms',
        '--redis-fallback=local',
        '--fallback-share=0.5',
      ]);
      await until(async () => (await resultsOf(output).catch(() => [])).length >= 3, 20_000);
      await own.kill();
      const result = await run.result;
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/Succeeded:12 Failed:0/);
      // Said where the person running it sees it, as it happens — not as a log line — and in the summary.
      expect(result.stderr).toMatch(
        /^warning: Redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable: the quota is no longer shared; going on with a local bucket at 50% of it$/m,
      );
      expect(result.stderr).not.toMatch(/"level":/);
      expect(result.stdout).toMatch(
        /^Shared quota "simulated" through Redis: .*; Redis was unavailable for \S+, when this process went on alone at 50% of the quota$/m,
      );
    } finally {
      await own.stop();
    }
  });
});

describe('news-processor --redis on a Redis Cluster', () => {
  let cluster: TestCluster;
  /** Quota names whose slots the second and third nodes serve: not the node --redis names. */
  let elsewhere: string[];

  beforeAll(async () => {
    cluster = await startRedisCluster();
    const inspect = new Redis(cluster.url);
    try {
      const names = namesOnEveryNode(slotRanges(await inspect.cluster('SLOTS')), 'cli');
      elsewhere = [names.get(cluster.nodes[1]!.port)!, names.get(cluster.nodes[2]!.port)!];
    } finally {
      inspect.disconnect();
    }
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  async function configOnOtherNodes(): Promise<string> {
    const path = join(temp.dir, 'cluster-providers.json');
    const simulated = { minLatency: '1ms', maxLatency: '2ms' };
    await writeFile(
      path,
      JSON.stringify({
        providers: elsewhere.map((quotaKey, index) => ({
          name: `p${index}`,
          limits: [{ kind: 'requests', rate: 50 }],
          quotaKey,
          simulated,
        })),
        routes: { summarize: 'p0', sentiment: 'p1' },
      }),
    );
    return path;
  }

  it('finds the cluster and keeps quotas on the nodes that serve their slots, not only the one given', async () => {
    const result = await runCli(['--articles=4', '--quiet', '--config', await configOnOtherNodes(), '--redis', cluster.url]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Succeeded:4 Failed:0/);
    expect(result.stdout).toMatch(/^Calls: 8 /m);
    expect(result.stdout).toMatch(
      new RegExp(`^Shared quota "${elsewhere[0]}" \\(p0\\), "${elsewhere[1]}" \\(p1\\) through Redis Cluster:`, 'm'),
    );
  });

  it.each([
    ['--no-redis-cluster', []],
    ['--no-redis-cluster with --redis-fallback=local, which is no fallback for it', ['--redis-fallback=local', '--fallback-share=0.5']],
  ])('refuses %s before any call: the node says where the quota lives, one line, exit 2', async (_, extra) => {
    const output = join(temp.dir, 'moved.jsonl');
    const result = await runCli([
      '--articles=2',
      '--config',
      await configOnOtherNodes(),
      '--output',
      output,
      '--redis',
      cluster.url,
      '--no-redis-cluster',
      ...extra,
    ]);
    expectUsageError(result, [
      new RegExp(
        `^error: --redis: Redis at redis://127\\.0\\.0\\.1:${cluster.nodes[0]!.port} is a Redis Cluster node, and news-processor:\\{${elsewhere[0]}\\}:requests \\(slot \\d+\\) is served by 127\\.0\\.0\\.1:${cluster.nodes[1]!.port} \\(MOVED\\): leave out --no-redis-cluster$`,
        'm',
      ),
    ]);
    await expect(access(output)).rejects.toThrow(/ENOENT/);
  });

  it('refuses --redis-cluster for a server that is not a cluster', async () => {
    expectUsageError(await runCli(['--articles=1', ...QUICK, '--redis', redis.url, '--redis-cluster']), [
      /cluster support disabled\); leave out --redis-cluster$/m,
    ]);
  });

  // Last of the cluster's tests: the node it kills stays dead.
  it('stops intake when a node dies mid-run, as when a lost Redis is: every started article in the results, exit 1', async () => {
    const output = join(temp.dir, 'node-killed.jsonl');
    const run = startCli([
      '--articles=200',
      '--workers=4',
      '--json',
      '--config',
      await configOnOtherNodes(),
      '--output',
      output,
      '--redis',
      cluster.url,
      '--redis-timeout=300ms',
    ]);
    await until(async () => (await resultsOf(output).catch(() => [])).length >= 3, 20_000);
    await cluster.nodes[2]!.kill();
    const result = await run.result;
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout) as RunSummary;
    expect(summary.articles).toBeLessThan(200);
    expect(summary.stoppedBy?.type).toBe('LimiterUnavailableError');
    expect(await resultsOf(output)).toHaveLength(summary.articles);
    expect(result.stderr).toMatch(
      /^error: (the connection to Redis at \S+ to the node that serves news-processor:\{cli-\d+\}:requests closed|Redis at \S+ did not answer within 300ms.*): intake stopped, the articles in flight failed/m,
    );
  });
});

describe('news-processor --redis with an ACL user', () => {
  beforeAll(async () => {
    const admin = new Redis(redis.url);
    try {
      await admin.acl('SETUSER', 'cli-enough', 'on', '>pw', '~news-processor:*', '+evalsha', '+eval', '+time', '+get', '+set', '+del');
      await admin.acl('SETUSER', 'cli-other-keys', 'on', '>pw', '~other:*', '+@all');
      await admin.acl('SETUSER', 'cli-no-scripting', 'on', '>pw', '~*', '+@all', '-@scripting');
    } finally {
      admin.disconnect();
    }
  });

  const as = (user: string) => `redis://${user}:pw@127.0.0.1:${redis.port}`;

  it('runs with a user that has just the commands and keys the limiter uses, saying nothing about them', async () => {
    const result = await runCli(['--articles=3', '--rate=50', ...QUICK, '--quiet', '--redis', as('cli-enough')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Succeeded:3 Failed:0/);
  });

  it.each([
    ['cli-other-keys', 'NOPERM this user has no permissions to access one of the keys used as arguments'],
    ['cli-no-scripting', "NOPERM this user has no permissions to run the 'eval' command"],
  ])('refuses user %s before any call: who, what Redis refused, and what it needs, one line, exit 2', async (user, detail) => {
    const output = join(temp.dir, `${user}.jsonl`);
    const result = await runCli(['--articles=3', ...QUICK, '--output', output, '--redis', as(user)]);
    expectUsageError(result, [
      new RegExp(
        `^error: --redis: Redis user "${user}" may not run the limiter: ${detail}; it needs ~news-processor:\\* \\+evalsha \\+eval \\+time \\+get \\+set \\+del$`,
        'm',
      ),
    ]);
    await expect(access(output)).rejects.toThrow(/ENOENT/);
  });
});

describe('news-processor --redis over TLS', () => {
  let pair: TlsRedisPair;
  let certificates: TestCertificates;
  let tls: TestRedis;
  let mutual: TestRedis;

  beforeAll(async () => {
    pair = await startTlsRedisPair();
    ({ certificates, tls, mutual } = pair);
  });

  afterAll(async () => {
    await pair?.stop();
  });

  const run = (url: string, ...flags: string[]) => runCli(['--articles=2', '--rate=50', ...QUICK, '--quiet', '--redis', url, ...flags]);

  it('trusts the CA of --redis-ca, and presents --redis-cert and --redis-key to a server that checks clients', async () => {
    const { caFile, clientCertFile, clientKeyFile } = certificates;
    for (const result of [
      await run(tls.url, '--redis-ca', caFile),
      await run(mutual.url, '--redis-ca', caFile, '--redis-cert', clientCertFile, '--redis-key', clientKeyFile),
    ]) {
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/Succeeded:2 Failed:0/);
    }
  });

  it('says which flag is missing: the CA for an untrusted certificate, a client certificate for a server that wants one', async () => {
    expectUsageError(await run(tls.url), [
      new RegExp(
        `^error: --redis: cannot connect to Redis at rediss://127\\.0\\.0\\.1:${tls.port}: self-signed certificate in certificate chain; give the CA that signed it with --redis-ca FILE$`,
        'm',
      ),
    ]);
    expectUsageError(await run(mutual.url, '--redis-ca', certificates.caFile), [
      /: the server closed the connection in the TLS handshake \(.*\); it wants a client certificate: --redis-cert FILE --redis-key FILE$/m,
    ]);
  });

  it('names a --redis-key that is not --redis-cert’s', async () => {
    const { caFile, clientCertFile, strangerKeyFile } = certificates;
    expectUsageError(await run(mutual.url, '--redis-ca', caFile, '--redis-cert', clientCertFile, '--redis-key', strangerKeyFile), [
      new RegExp(`^error: --redis-key ${strangerKeyFile.replace(/[.]/g, '\\.')}: is not the private key of the certificate in `),
    ]);
  });

  it('goes on without checking the certificate with ?rejectUnauthorized=false, and warns once', async () => {
    const result = await run(`${tls.url}?rejectUnauthorized=false`);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      "warning: --redis: rejectUnauthorized=false: the Redis server's certificate is not checked, so anyone on the way can pose as it\n",
    );
  });
});

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const endMs = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > endMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
