/**
 * `npm run bench:proxy`: what `news-processor proxy` costs a request, beside direct calls in one run. Prints
 * Markdown tables on stdout (progress on stderr) and writes bench/results/proxy.json.
 *
 * - Latency: sequential requests (one keep-alive connection each) to an instant upstream (its own process),
 *   interleaved request by request: direct, through a bare Node HTTP forwarder (its own process: the floor no
 *   proxy goes under), through the proxy (its own process; one key with a budget and a limit, one member). p50
 *   of each; the proxy over the bare hop (goal ≤ 0.5 ms) and over direct.
 * - Throughput: autocannon, 64 connections, through the proxy, whole and streamed (goal ≥ 2,000 requests/s),
 *   and through the bare forwarder for reference.
 * - Memory: the proxy's resident set over a soak of SOAK requests (scaled down from the million:
 *   the size is printed), sampled as it goes: flat means no growth per request.
 *
 *   npm run bench:proxy     (BENCH_QUICK=1 for a shorter run)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { formatMs } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const quick = process.env.BENCH_QUICK === '1';
const SEQUENTIAL = quick ? 500 : 3000;
const CONNECTIONS = 64;
const LOAD_SECONDS = quick ? 3 : 8;
const SOAK = quick ? 30_000 : 200_000;

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** Starts a bench script in its own process; resolves with it and the port it prints. */
async function start(script: string, ...args: string[]): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', here(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (data: Buffer) => resolve(Number(data.toString().trim())));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, port };
}

const BODY = JSON.stringify({ model: 'bench', max_tokens: 50, messages: [{ role: 'user', content: 'One line on the markets today.' }] });
const STREAM_BODY = JSON.stringify({ ...JSON.parse(BODY), stream: true });
const HEADERS = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };

/** One request on `agent`; resolves with its time in ms once the whole answer is read. */
function timed(agent: Agent, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const startNs = process.hrtime.bigint();
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: HEADERS, agent }, (res) => {
      res.resume();
      res.once('end', () => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode} on port ${port}`));
        else resolve(Number(process.hrtime.bigint() - startNs) / 1e6);
      });
    });
    req.once('error', reject);
    req.end(BODY);
  });
}

type Autocannon = (options: {
  url: string;
  connections: number;
  duration?: number;
  amount?: number;
  method: string;
  headers: Record<string, string>;
  body: string;
}) => Promise<{ requests: { total: number }; duration: number; errors: number; non2xx: number; latency: { p50: number; p99: number } }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** CPU time a process has used, ms (user and system, from /proc: 10 ms ticks). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * autocannon against `port`; with `pid`, the CPU that process spent per request (µs): the figure a
 * loaded machine moves least, where requests/s follows whatever else runs.
 */
async function load(port: number, body: string, options: { duration?: number; amount?: number }, pid?: number) {
  const cpuBeforeMs = pid === undefined ? 0 : cpuMs(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    connections: CONNECTIONS,
    method: 'POST',
    headers: HEADERS,
    body,
    ...options,
  });
  return {
    perSecond: result.requests.total / result.duration,
    errors: result.errors + result.non2xx,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuUsPerRequest: pid === undefined ? undefined : ((cpuMs(pid) - cpuBeforeMs) * 1000) / Math.max(1, result.requests.total),
  };
}

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const upstream = await start('./proxy/upstream.ts');
const [forwarder, proxy] = await Promise.all([
  start('./proxy/forwarder.ts', String(upstream.port)),
  start('./proxy/proxy.ts', String(upstream.port)),
]);
const children = [upstream.child, forwarder.child, proxy.child];
try {
  const targets = [
    { name: 'direct to the upstream', port: upstream.port },
    { name: 'through a bare Node forwarder', port: forwarder.port },
    { name: 'through the proxy', port: proxy.port },
  ];
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const times: number[][] = targets.map(() => []);
  process.stderr.write(`latency: ${SEQUENTIAL} sequential requests each, interleaved\n`);
  for (let round = -100; round < SEQUENTIAL; round++) {
    for (const [index, target] of targets.entries()) {
      const ms = await timed(agents[index]!, target.port);
      if (round >= 0) times[index]!.push(ms);
    }
  }
  const p50 = times.map((values) => median(values));
  const [direct, bare, ours] = p50 as [number, number, number];
  process.stderr.write(`throughput: autocannon -c${CONNECTIONS} -d${LOAD_SECONDS}\n`);
  // A warm-up at the same load: connections made, code optimised, before any figure is kept.
  await load(proxy.port, BODY, { duration: 2 });
  await load(forwarder.port, BODY, { duration: 1 });
  const throughput = [
    { name: 'through the proxy, whole', ...(await load(proxy.port, BODY, { duration: LOAD_SECONDS }, proxy.child.pid)) },
    { name: 'through the proxy, streamed', ...(await load(proxy.port, STREAM_BODY, { duration: LOAD_SECONDS }, proxy.child.pid)) },
    {
      name: 'through a bare Node forwarder, whole (reference)',
      ...(await load(forwarder.port, BODY, { duration: LOAD_SECONDS }, forwarder.child.pid)),
    },
  ];
  process.stderr.write(`memory: a soak of ${SOAK.toLocaleString('en')} requests through the proxy\n`);
  const samples: { requests: number; rssMiB: number }[] = [{ requests: 0, rssMiB: rssMiB(proxy.child.pid!) }];
  const step = SOAK / 4;
  for (let done = step; done <= SOAK; done += step) {
    await load(proxy.port, BODY, { amount: step });
    samples.push({ requests: done, rssMiB: rssMiB(proxy.child.pid!) });
  }

  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`;
  console.log(`## Proxy latency (${SEQUENTIAL.toLocaleString('en')} sequential requests each, interleaved; ${machine})\n`);
  console.log(
    markdownTable(
      ['path', 'p50'],
      targets.map((target, index) => [target.name, formatMs(p50[index]!)]),
    ),
  );
  console.log(
    `\nThe proxy over the bare hop: **${formatMs(ours - bare)}** p50 (goal ≤ 0.5 ms); over direct: ${formatMs(ours - direct)}.\n`,
  );
  console.log(`## Proxy throughput (autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s each)\n`);
  console.log(
    markdownTable(
      ['path', 'requests/s', 'CPU per request (its process)', 'p50', 'p99', 'errors'],
      throughput.map((row) => [
        row.name,
        Math.round(row.perSecond).toLocaleString('en'),
        `${Math.round(row.cpuUsPerRequest ?? 0)} µs`,
        `${row.p50Ms} ms`,
        `${row.p99Ms} ms`,
        String(row.errors),
      ]),
    ),
  );
  console.log(`\n## Proxy memory over a soak of ${SOAK.toLocaleString('en')} requests (resident set)\n`);
  console.log(
    markdownTable(
      ['requests', 'RSS'],
      samples.map((sample) => [sample.requests.toLocaleString('en'), `${sample.rssMiB.toFixed(1)} MiB`]),
    ),
  );
  mkdirSync(here('./results'), { recursive: true });
  writeFileSync(
    here('./results/proxy.json'),
    `${JSON.stringify({ machine, sequential: SEQUENTIAL, p50Ms: { direct, bare, proxy: ours }, throughput, soak: SOAK, samples }, null, 2)}\n`,
  );
} finally {
  for (const child of children) child.kill();
}
